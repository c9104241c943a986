#pragma once
// Two EmbeddedChannels with TlsHandlers piped together (what one flushes is the other's input),
// for the TLS unit tests. Loop thread only (the test's thread drives both channels).

#include <gtest/gtest.h>

#include <any>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "weft/channel/embedded_channel.h"
#include "weft/channel/events.h"
#include "weft/codec/tls/tls_events.h"
#include "weft/codec/tls/tls_handler.h"

namespace weft::test {

// The application end: keeps what arrives, the TLS events and the exceptions.
class TlsRecorder final : public InboundHandler<ByteBuf> {
 public:
  void channel_read(Context&, ByteBuf&& buf) override { received += buf.to_string(); }
  void user_event(Context& ctx, const std::any& event) override {
    if (const auto* h = std::any_cast<TlsHandshakeCompleted>(&event)) handshakes.push_back(*h);
    if (std::any_cast<TlsCloseNotifyReceived>(&event) != nullptr) close_notify = true;
    if (std::any_cast<ChannelInputShutdownEvent>(&event) != nullptr) ++input_shutdowns;
    ctx.fire_user_event(event);
  }
  void exception_caught(Context&, std::exception_ptr error) override { errors.push_back(std::move(error)); }

  std::string received;
  std::vector<TlsHandshakeCompleted> handshakes;
  std::vector<std::exception_ptr> errors;
  bool close_notify = false;
  int input_shutdowns = 0;  // ChannelInputShutdownEvent seen
};

// Rethrows `error` as E and returns a copy; fails the test when it is not an E.
template <class E>
E error_as(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const E& e) {
    return e;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "unexpected error type: " << e.what();
  }
  throw std::logic_error("error_as: not the expected type");
}

struct TlsPair {
  TlsPair(TlsContextPtr server_context, TlsContextPtr client_context, TlsHandlerOptions client_options = localhost(),
          TlsHandlerOptions server_options = {})
      : server_tls(std::make_shared<TlsHandler>(std::move(server_context), std::move(server_options))),
        client_tls(std::make_shared<TlsHandler>(std::move(client_context), std::move(client_options))) {
    server.pipeline().add_last("tls", server_tls).add_last("app", server_app);
    client.pipeline().add_last("tls", client_tls).add_last("app", client_app);
  }
  static TlsHandlerOptions localhost() {
    TlsHandlerOptions o;
    o.server_name = "localhost";
    return o;
  }

  // Moves every buffer `from` flushed to `to`'s input, split into pieces of `piece` bytes (0: whole).
  static bool transfer(EmbeddedChannel& from, EmbeddedChannel& to, std::size_t piece) {
    bool moved = false;
    while (auto buf = from.read_outbound<ByteBuf>()) {
      moved = true;
      if (!to.is_open()) continue;
      if (piece == 0) {
        to.write_inbound(std::move(*buf));
        continue;
      }
      const std::string bytes = buf->to_string();
      for (std::size_t i = 0; i < bytes.size() && to.is_open(); i += piece) {
        to.write_inbound(ByteBuf::copy_of(std::string_view(bytes).substr(i, piece)));
      }
    }
    return moved;
  }
  // Passes bytes both ways until neither side has more.
  void pump(std::size_t piece = 0) {
    for (int round = 0; round < 1000; ++round) {
      const bool a = transfer(client, server, piece);
      const bool b = transfer(server, client, piece);
      if (!a && !b) return;
    }
    ADD_FAILURE() << "the two sides never stopped talking";
  }

  EmbeddedChannel server;
  EmbeddedChannel client;
  std::shared_ptr<TlsHandler> server_tls;
  std::shared_ptr<TlsHandler> client_tls;
  std::shared_ptr<TlsRecorder> server_app = std::make_shared<TlsRecorder>();
  std::shared_ptr<TlsRecorder> client_app = std::make_shared<TlsRecorder>();
};

}  // namespace weft::test
