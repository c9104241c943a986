#pragma once
// Held: counts its live instances. A coroutine frame that is neither resumed nor destroyed keeps
// the Held in it alive, so `Held::live` tells whether a frame leaked.

#include <atomic>

namespace weft::test {

struct Held {
  static inline std::atomic<int> live{0};
  Held() { live.fetch_add(1, std::memory_order_relaxed); }
  Held(const Held&) = delete;
  Held& operator=(const Held&) = delete;
  ~Held() { live.fetch_sub(1, std::memory_order_relaxed); }
};

}  // namespace weft::test
