// Allocator micro-benchmarks: weft's pooled ByteBuf allocator against glibc malloc, jemalloc and
// mimalloc, in one run.
//
//   alloc_free/<allocator>/<size>   allocate + release on one thread (64 B .. 64 KiB)
//   producer_consumer/<allocator>   one thread allocates, another releases (SPSC ring between them)
//   churn/<allocator>               1024 live blocks, each step frees a random one and allocates a
//                                   random size (64 B .. 64 KiB, log-uniform)
//
// glibc's malloc/free are looked up in libc.so.6 itself (dlsym on its handle): linking jemalloc or
// mimalloc replaces the process's malloc, and mimalloc also exports __libc_malloc/__libc_free, so
// neither plain malloc nor __libc_malloc is glibc's in this binary. jemalloc is called through
// mallocx/dallocx and mimalloc through mi_malloc/mi_free, not through LD_PRELOAD. The pooled rows measure the whole
// ByteBuf path (allocator.buffer() + handle destruction), not only the allocator.
//
// Run (pinned, medians of 5):
//   taskset -c 1 build/release/bin/bench_byte_buf_allocator --benchmark_repetitions=5
//       --benchmark_report_aggregates_only=true --benchmark_filter='alloc_free|churn'
//   taskset -c 0,1 build/release/bin/bench_byte_buf_allocator --benchmark_repetitions=5
//       --benchmark_report_aggregates_only=true --benchmark_filter=producer_consumer
// (producer/consumer needs two CPUs: pinned to one, the two threads would take turns.)

#include <benchmark/benchmark.h>
#include <dlfcn.h>

#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "weft/buffer/byte_buf.h"
#include "weft/buffer/pooled_byte_buf_allocator.h"

#if defined(WEFT_BENCH_JEMALLOC)
#include <jemalloc/jemalloc.h>
#endif
#if defined(WEFT_BENCH_MIMALLOC)
#include <mimalloc.h>
#endif

namespace {

// ---- the allocators under test, as "raw" (pointer) or "buf" (ByteBuf) slots ---------------------

// glibc's own malloc and free, whatever else the binary links (see the file's comment).
struct GlibcFunctions {
  void* (*malloc)(std::size_t);
  void (*free)(void*);
};
GlibcFunctions glibc_functions() {
  void* libc = ::dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  if (libc == nullptr) std::abort();
  GlibcFunctions f{reinterpret_cast<void* (*)(std::size_t)>(::dlsym(libc, "malloc")),
                   reinterpret_cast<void (*)(void*)>(::dlsym(libc, "free"))};
  if (f.malloc == nullptr || f.free == nullptr) std::abort();
  // The rows must measure glibc: the function found has to live in libc.so.6.
  Dl_info where{};
  if (::dladdr(reinterpret_cast<void*>(f.malloc), &where) == 0 || where.dli_fname == nullptr ||
      std::strstr(where.dli_fname, "libc.so.6") == nullptr) {
    std::fprintf(stderr, "bench_byte_buf_allocator: malloc resolved outside libc.so.6 (%s)\n",
                 where.dli_fname != nullptr ? where.dli_fname : "?");
    std::abort();
  }
  return f;
}
const GlibcFunctions kGlibc = glibc_functions();

struct Glibc {
  using Slot = void*;
  static Slot alloc(std::size_t n) { return kGlibc.malloc(n); }
  static void free(Slot& p) {
    kGlibc.free(p);
    p = nullptr;
  }
};

#if defined(WEFT_BENCH_JEMALLOC)
struct Jemalloc {
  using Slot = void*;
  static Slot alloc(std::size_t n) { return mallocx(n, 0); }
  static void free(Slot& p) {
    dallocx(p, 0);
    p = nullptr;
  }
};
#endif

#if defined(WEFT_BENCH_MIMALLOC)
struct Mimalloc {
  using Slot = void*;
  static Slot alloc(std::size_t n) { return mi_malloc(n); }
  static void free(Slot& p) {
    mi_free(p);
    p = nullptr;
  }
};
#endif

struct Pooled {
  using Slot = weft::ByteBuf;
  static Slot alloc(std::size_t n) { return weft::pooled_allocator().buffer(n); }
  static void free(Slot& b) { b.release(); }
};

void* address_of(void* p) { return p; }
void* address_of(weft::ByteBuf& b) { return b.data(); }

// ---- allocate + release on one thread ------------------------------------------------------------

template <class A>
void alloc_free(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  for (auto _ : state) {
    typename A::Slot s = A::alloc(n);
    benchmark::DoNotOptimize(address_of(s));
    A::free(s);
  }
  state.SetItemsProcessed(state.iterations());
}

// ---- producer / consumer -------------------------------------------------------------------------

template <class A>
void producer_consumer(benchmark::State& state) {
  constexpr std::size_t kRing = 1024;  // power of two
  constexpr std::size_t kSize = 1024;
  auto ring = std::make_unique<typename A::Slot[]>(kRing);
  alignas(64) std::atomic<std::size_t> head{0};  // written by the producer
  alignas(64) std::atomic<std::size_t> tail{0};  // written by the consumer
  std::atomic<bool> stop{false};
  std::thread consumer([&] {
    std::size_t t = 0;
    for (;;) {
      const std::size_t h = head.load(std::memory_order_acquire);
      if (h == t) {
        if (stop.load(std::memory_order_acquire) && head.load(std::memory_order_acquire) == t) return;
        std::this_thread::yield();
        continue;
      }
      for (; t != h; ++t) A::free(ring[t & (kRing - 1)]);
      tail.store(t, std::memory_order_release);
    }
  });
  std::size_t h = 0;
  for (auto _ : state) {
    while (h - tail.load(std::memory_order_acquire) == kRing) std::this_thread::yield();
    ring[h & (kRing - 1)] = A::alloc(kSize);
    head.store(++h, std::memory_order_release);
  }
  stop.store(true, std::memory_order_release);
  consumer.join();
  state.SetItemsProcessed(state.iterations());
}

// ---- mixed-size churn ----------------------------------------------------------------------------

template <class A>
void churn(benchmark::State& state) {
  constexpr std::size_t kLive = 1024;
  constexpr std::size_t kSteps = 1 << 16;
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> log_size(6.0, 16.0);  // 64 B .. 64 KiB
  std::vector<std::size_t> sizes(kSteps), victims(kSteps);
  for (std::size_t i = 0; i < kSteps; ++i) {
    sizes[i] = static_cast<std::size_t>(std::exp2(log_size(rng)));
    victims[i] = rng() % kLive;
  }
  auto live = std::make_unique<typename A::Slot[]>(kLive);
  for (std::size_t i = 0; i < kLive; ++i) live[i] = A::alloc(sizes[i]);
  std::size_t step = 0;
  for (auto _ : state) {
    const std::size_t i = step & (kSteps - 1);
    typename A::Slot& victim = live[victims[i]];
    A::free(victim);
    victim = A::alloc(sizes[i]);
    benchmark::DoNotOptimize(address_of(victim));
    ++step;
  }
  for (std::size_t i = 0; i < kLive; ++i) A::free(live[i]);
  state.SetItemsProcessed(state.iterations());
}

#define WEFT_ALLOCATOR_BENCHES(A, name)                                                                    \
  BENCHMARK_TEMPLATE(alloc_free, A)->Name("alloc_free/" name)->Arg(64)->Arg(256)->Arg(1024)->Arg(8192)->Arg(65536); \
  BENCHMARK_TEMPLATE(producer_consumer, A)->Name("producer_consumer/" name)->UseRealTime();                 \
  BENCHMARK_TEMPLATE(churn, A)->Name("churn/" name);

WEFT_ALLOCATOR_BENCHES(Pooled, "pooled")
WEFT_ALLOCATOR_BENCHES(Glibc, "glibc")
#if defined(WEFT_BENCH_JEMALLOC)
WEFT_ALLOCATOR_BENCHES(Jemalloc, "jemalloc")
#endif
#if defined(WEFT_BENCH_MIMALLOC)
WEFT_ALLOCATOR_BENCHES(Mimalloc, "mimalloc")
#endif

}  // namespace
