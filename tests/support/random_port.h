#pragma once
// A port for a peer process that must be told its port (HAProxy, Prometheus): drawn below the
// kernel's ephemeral range, so no client of some other test is handed it in between. The caller
// tries another when the peer reports it taken.

#include <cstdint>
#include <random>

namespace weft::test {

inline std::uint16_t random_port() {
  thread_local std::mt19937 random(std::random_device{}());
  return static_cast<std::uint16_t>(std::uniform_int_distribution<int>(20000, 32000)(random));
}

}  // namespace weft::test
