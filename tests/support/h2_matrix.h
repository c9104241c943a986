#pragma once
// HTTP/2 server tests on every transport, over h2c and over TLS (h2 by ALPN): a suite derives from
// H2MatrixTest, starts its server with serve(), talks to it with a RawH2Connection on port(), and
// is instantiated with WEFT_H2_ON_EVERY_TRANSPORT(Suite).

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <tuple>

#include "support/h2_raw_connection.h"
#include "support/tls_certs.h"
#include "weft/weft.h"

namespace weft::test {

class H2MatrixTest : public ::testing::TestWithParam<std::tuple<Transport*, bool>> {
 protected:
  Transport& transport() const { return *std::get<0>(GetParam()); }
  bool tls() const { return std::get<1>(GetParam()); }

  // Serves `router` behind an http2::ServerCodec with `settings`, after a TlsHandler when tls().
  // The blocking transport runs a channel per loop: the listener, and each connection a test has
  // open or still closing.
  // `first`, when set, adds handlers at the socket's end of each connection's pipeline first.
  void serve(std::shared_ptr<http::Router> router, http2::Settings settings = {},
             std::function<void(Channel&)> first = nullptr) {
    group_ = std::make_unique<EventLoopGroup>(transport(), transport().name() == "blocking" ? 8 : 1);
    TlsContextPtr context = tls() ? test_server_context(test_pki().localhost, {"h2"}) : nullptr;
    server_ = ServerBootstrap()
                  .group(*group_)
                  .child_handler([router, context, settings, first](Channel& ch) {
                    if (first) first(ch);
                    if (context) ch.pipeline().add_last("tls", std::make_shared<TlsHandler>(context));
                    ch.pipeline().add_last("http2", std::make_shared<http2::ServerCodec>(settings));
                    ch.pipeline().add_last("router", router);
                  })
                  .bind(SocketAddress::loopback(0))
                  .get();
  }
  void TearDown() override {
    if (server_) server_->close().wait();
  }
  std::uint16_t port() const { return server_->local_address().port(); }

  std::unique_ptr<EventLoopGroup> group_;
  ChannelPtr server_;
};

inline std::string h2_matrix_name(const ::testing::TestParamInfo<std::tuple<Transport*, bool>>& info) {
  return std::string(std::get<0>(info.param)->name()) + (std::get<1>(info.param) ? "_tls" : "_h2c");
}

}  // namespace weft::test

#define WEFT_H2_ON_EVERY_TRANSPORT(suite)                                                                 \
  INSTANTIATE_TEST_SUITE_P(                                                                                 \
      On, suite,                                                                                            \
      ::testing::Combine(::testing::Values(&::weft::epoll(), &::weft::io_uring(), &::weft::blocking()),   \
                         ::testing::Bool()),                                                                \
      ::weft::test::h2_matrix_name)
