#pragma once
// Runs the channel-level socket tests on every transport: a suite derives from TransportTest, uses
// TEST_P, and is instantiated with WEFT_ON_EVERY_TRANSPORT(Suite).

#include <gtest/gtest.h>

#include <cstddef>
#include <string>

#include "weft/channel/transport.h"
#include "weft/transport/blocking.h"
#include "weft/transport/epoll.h"
#include "weft/transport/io_uring.h"

namespace weft::test {

class TransportTest : public ::testing::TestWithParam<Transport*> {
 protected:
  Transport& transport() const { return *GetParam(); }
  bool is_blocking() const { return transport().name() == "blocking"; }
  // The loop count of a test's group: `epoll_loops` on epoll; on the blocking transport, where a
  // loop serves one channel, the most channels (listening, accepted, client) the test has open at once.
  std::size_t loops(std::size_t epoll_loops, std::size_t channels) const {
    return is_blocking() ? channels : epoll_loops;
  }
};

inline std::string transport_name(const ::testing::TestParamInfo<Transport*>& info) {
  return std::string(info.param->name());
}

}  // namespace weft::test

#define WEFT_ON_EVERY_TRANSPORT(suite)                                                             \
  INSTANTIATE_TEST_SUITE_P(On, suite,                                                              \
                           ::testing::Values(&::weft::epoll(), &::weft::io_uring(), &::weft::blocking()), \
                           ::weft::test::transport_name)
