#pragma once
// Counts the global operator new calls made on this thread, for tests that assert a path does not
// allocate. It replaces operator new and delete for the whole program: include it from one source
// file of the executable (the tests in tests/codec/no_allocation/ are an executable each).

#include <cstddef>
#include <cstdlib>
#include <new>
#include <utility>

// The replacement operator new/delete pair is malloc/free on both sides.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

namespace weft::test::allocation_counter {
inline thread_local bool counting = false;
inline thread_local long allocations = 0;
}  // namespace weft::test::allocation_counter

void* operator new(std::size_t n) {
  if (weft::test::allocation_counter::counting) ++weft::test::allocation_counter::allocations;
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace weft::test {

/// The operator new calls that `fn()` makes on this thread.
long allocations_of(auto&& fn) {
  allocation_counter::allocations = 0;
  allocation_counter::counting = true;
  fn();
  allocation_counter::counting = false;
  return allocation_counter::allocations;
}

/// While it lives, this thread's allocations are not counted (what a test's harness does).
class Uncounted {
 public:
  Uncounted() noexcept : was_(std::exchange(allocation_counter::counting, false)) {}
  ~Uncounted() { allocation_counter::counting = was_; }
  Uncounted(const Uncounted&) = delete;
  Uncounted& operator=(const Uncounted&) = delete;

 private:
  bool was_;
};

}  // namespace weft::test
