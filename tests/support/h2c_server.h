#pragma once
// An h2c (HTTP/2 by prior knowledge) server for the tests: weft's HTTP/2 server codec with
// `settings` on every accepted channel, listening on a loopback port the kernel chooses.

#include <memory>

#include "weft/codec/http2/server_codec.h"
#include "weft/weft.h"

namespace weft::test {

inline ChannelPtr serve_h2c(EventLoopGroup& loops, http2::Settings settings) {
  return ServerBootstrap()
      .group(loops)
      .child_handler([settings = std::move(settings)](Channel& ch) {
        ch.pipeline().add_last("http2", std::make_shared<http2::ServerCodec>(settings));
      })
      .bind(SocketAddress::loopback(0))
      .get();
}

}  // namespace weft::test
