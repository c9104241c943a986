#pragma once
// A real WebSocket echo server for the weft-load ws tests, in process on 127.0.0.1: weft's own
// route (ws::upgrade) on an ephemeral port, on one event loop of the transport given. It counts the
// messages it echoes and the handshakes that agreed permessage-deflate, and can be told to corrupt
// every n-th echo (one byte flipped), or to serve over TLS. Any other path answers 404. Stopped by
// its destructor.

#include <atomic>
#include <memory>
#include <string>

#include "weft/codec/http1/router.h"
#include "weft/codec/http1/server_codec.h"
#include "weft/codec/websocket/upgrade.h"
#include "weft/weft.h"

namespace weft::load::test {

struct WsServerOptions {
  bool deflate = false;             // accept permessage-deflate offers
  std::uint64_t corrupt_every = 0;  // flip a byte of every n-th echo (0: none)
  TlsContextPtr tls;                // serve wss:// with this server context (null: ws://)
};

class WsEchoServer {
 public:
  // `loops`: the blocking transport needs one per channel (the listener and each connection).
  WsEchoServer(Transport& transport, std::size_t loops, WsServerOptions options)
      : loops_(transport, loops, "ws-server") {
    auto router = std::make_shared<http::Router>();
    ws::UpgradeOptions upgrade;
    upgrade.deflate.enabled = options.deflate;
    ws::websocket(*router, "/ws",
                  ws::Callbacks{.on_open =
                                    [this](Context&, const ws::Handshake& handshake) {
                                      if (handshake.deflate) deflate_agreed_.fetch_add(1, std::memory_order_relaxed);
                                    },
                                .on_message =
                                    [this, every = options.corrupt_every](Context& ctx, ws::Message& message) {
                                      const std::uint64_t n = messages_.fetch_add(1, std::memory_order_relaxed) + 1;
                                      if (every != 0 && n % every == 0 && message.data().is_readable()) {
                                        ByteBuf copy =
                                            ByteBuf::copy_of(message.view());  // the received bytes may be shared
                                        copy.set_u8(copy.reader_index(), copy.get_u8(copy.reader_index()) ^ 0x01);
                                        message = message.is_text() ? ws::Message::text(std::move(copy))
                                                                    : ws::Message::binary(std::move(copy));
                                      }
                                      ctx.write_and_flush(std::move(message));
                                    }},
                  upgrade);
    server_ = ServerBootstrap()
                  .group(loops_)
                  .child_option(option::tcp_nodelay, true)
                  .child_handler([router, tls = options.tls](Channel& ch) {
                    if (tls) ch.pipeline().add_last("tls", std::make_shared<TlsHandler>(tls));
                    ch.pipeline().add_last("http", std::make_shared<http::ServerCodec>());
                    ch.pipeline().add_last("router", router);
                  })
                  .bind(SocketAddress::loopback(0))
                  .get();
  }
  ~WsEchoServer() {
    server_->close().wait();
    loops_.shutdown_gracefully(std::chrono::milliseconds(0), std::chrono::seconds(5)).wait();
  }
  WsEchoServer(const WsEchoServer&) = delete;
  WsEchoServer& operator=(const WsEchoServer&) = delete;

  std::uint16_t port() const { return server_->local_address().port(); }
  // "ws://127.0.0.1:PORT/ws"
  std::string url(const std::string& path = "/ws") const { return "ws://127.0.0.1:" + std::to_string(port()) + path; }
  std::uint64_t messages() const { return messages_.load(std::memory_order_relaxed); }
  std::uint64_t deflate_agreed() const { return deflate_agreed_.load(std::memory_order_relaxed); }

 private:
  EventLoopGroup loops_;
  ChannelPtr server_;
  std::atomic<std::uint64_t> messages_{0};
  std::atomic<std::uint64_t> deflate_agreed_{0};
};

}  // namespace weft::load::test
