#pragma once
// The memory of the server's stream channels: one per HTTP/2 stream, so one per gRPC call. A channel
// is 64-byte aligned (its pipeline holds cache-line Contexts), and glibc's aligned allocation costs
// about 1,100 instructions a call (a unary gRPC call's 4% in callgrind), so each thread keeps up to
// kMaxCachedBlocks freed blocks of the one size std::allocate_shared asks for, and reuses them.
//
// Blocks are plain aligned heap blocks: one freed on another thread than the one that made it joins
// that thread's list. Under ASan a cached block is poisoned past its link (as frame_pool does), so a
// use after its free is still reported.

#include <sanitizer/asan_interface.h>

#include <cstddef>
#include <new>

namespace weft::http2::detail {

template <class T>
class StreamChannelAllocator {
 public:
  using value_type = T;
  static constexpr std::size_t kMaxCachedBlocks = 64;

  StreamChannelAllocator() noexcept = default;
  template <class U>
  StreamChannelAllocator(const StreamChannelAllocator<U>&) noexcept {}  // NOLINT: rebinding, as allocators do

  T* allocate(std::size_t n) {
    Blocks& blocks = cached();
    if (n == 1 && blocks.head != nullptr) {
      Free* b = blocks.head;
      ASAN_UNPOISON_MEMORY_REGION(b, sizeof(T));
      blocks.head = b->next;
      --blocks.count;
      return reinterpret_cast<T*>(b);
    }
    return static_cast<T*>(::operator new (n * sizeof(T), std::align_val_t{alignof(T)}));
  }

  void deallocate(T* p, std::size_t n) noexcept {
    Blocks& blocks = cached();
    if (n != 1 || blocks.exiting || blocks.count >= kMaxCachedBlocks) {
      ::operator delete (p, std::align_val_t{alignof(T)});
      return;
    }
    auto* b = reinterpret_cast<Free*>(p);
    b->next = blocks.head;
    blocks.head = b;
    ++blocks.count;
    ASAN_POISON_MEMORY_REGION(reinterpret_cast<char*>(b) + sizeof(Free), sizeof(T) - sizeof(Free));
  }

  template <class U>
  bool operator==(const StreamChannelAllocator<U>&) const noexcept {
    return true;
  }

 private:
  static_assert(sizeof(T) >= sizeof(void*), "a cached block holds its link");
  struct Free {
    Free* next;
  };
  // This thread's cached blocks, freed when it exits.
  struct Blocks {
    Free* head = nullptr;
    std::size_t count = 0;
    bool exiting = false;
    ~Blocks() {
      exiting = true;
      while (head != nullptr) {
        Free* b = head;
        ASAN_UNPOISON_MEMORY_REGION(b, sizeof(T));
        head = b->next;
        ::operator delete (static_cast<void*>(b), std::align_val_t{alignof(T)});
      }
    }
  };
  static Blocks& cached() noexcept {
    thread_local Blocks blocks;
    return blocks;
  }
};

}  // namespace weft::http2::detail
