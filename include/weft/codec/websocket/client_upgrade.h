#pragma once
/// @file
/// The WebSocket client's opening handshake over HTTP/1.1 (RFC 6455 section 4.1), as a pipeline
/// handler: ClientUpgrade sends the upgrade request on a connected channel (after TLS, if any),
/// reads the answer, checks it, and puts a client's ws::Codec (codec.h) and the application in its
/// place. client::HttpClient::websocket() (weft/client/http_client.h) is the way in; this is its
/// protocol half.
///
/// The request: GET target, Host, `Upgrade: websocket`, `Connection: Upgrade`, a fresh
/// `Sec-WebSocket-Key` (16 bytes from OpenSSL's random generator), `Sec-WebSocket-Version: 13`, the
/// subprotocols offered, the permessage-deflate offer (deflate.h) and the caller's extra fields.
///
/// The answer must be a 101 with `Upgrade: websocket`, `Connection: upgrade`, `Sec-WebSocket-Accept`
/// equal to accept_key(our key), no subprotocol we did not offer, and no extension but the
/// permessage-deflate we offered, with parameters check_deflate_answer() accepts; its head must
/// arrive whole within ClientHandshakeRequest::timeout and fit in 16 KiB. Any failure is a
/// HandshakeError through the handshake's future, and the connection is closed. Bytes the server
/// sent right behind its 101 are the WebSocket's first.
///
/// Loop thread only; one per channel.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "weft/buffer/byte_buf.h"
#include "weft/channel/handler.h"
#include "weft/codec/websocket/codec.h"
#include "weft/codec/websocket/deflate.h"
#include "weft/codec/websocket/upgrade.h"
#include "weft/core/error.h"
#include "weft/core/future.h"

namespace weft::ws {

/// A client's handshake failed (see the file's description). Thread-safe to read.
class HandshakeError : public Error {
 public:
  /// `status`: the HTTP status of the server's answer, 0 when there was none; `reason`: what was wrong.
  HandshakeError(int status, std::string reason);
  /// The HTTP status of the server's answer (200, 426, or 101 with a wrong header); 0 when there
  /// was no HTTP answer (the connection closed, the timeout passed, the bytes were not HTTP).
  int status() const noexcept { return status_; }
  /// What was wrong.
  const std::string& reason() const noexcept { return reason_; }

 private:
  int status_;
  std::string reason_;
};

/// What a client's handshake asks for.
struct ClientHandshakeRequest {
  std::string host;                                          ///< the Host field: "host[:port]"
  std::string target = "/";                                  ///< path and query: "/chat?room=7"
  std::vector<std::string> subprotocols;                     ///< offered, preferred first
  std::vector<std::pair<std::string, std::string>> headers;  ///< extra fields, sent as given
  DeflateOptions deflate;                                    ///< permessage-deflate: offered when enabled
  Options connection;                                        ///< the WebSocket's limits and timeouts
  Duration timeout = std::chrono::seconds(10);               ///< the whole answer's head must arrive within it
};

/// Checks what an accepting answer negotiated against what `request` offered -- HTTP/1.1's 101 or
/// HTTP/2's 2xx to an extended CONNECT (RFC 8441 5) -- from its fields in `h.headers`: a
/// subprotocol only one offered (set in `h.subprotocol`), extensions only the permessage-deflate
/// offered, with parameters check_deflate_answer() accepts (set in `h.deflate`, returned). Throws
/// HandshakeError with `status` naming the flaw. Thread-safe.
std::optional<DeflateParameters> check_negotiation(const ClientHandshakeRequest& request, int status, Handshake& h);

/// Throws std::invalid_argument when `request` could not be sent as given: CR, LF or NUL in its
/// host, target, a field or a subprotocol, an empty field name or one with ':', a subprotocol with
/// ',', DeflateOptions out of range. Thread-safe.
void validate(const ClientHandshakeRequest& request);

/// The client's handshake as a pipeline handler (see the file's description). Loop thread only.
class ClientUpgrade final : public Handler {
 public:
  /// Once added to an active channel, sends `request`'s handshake; `done` gets what it settled (or
  /// a HandshakeError), and `add_tail` puts the application after the codec. Throws
  /// std::invalid_argument for a header name or value that could break the request (CR, LF, NUL),
  /// and for DeflateOptions out of range.
  ClientUpgrade(ClientHandshakeRequest request, Promise<Handshake> done, TailFn add_tail);
  ~ClientUpgrade() override;

  void handler_added(Context& ctx) override;
  void handler_removed(Context& ctx) override;
  void channel_active(Context& ctx) override;
  void read_message(Context& ctx, MessageRef message) override;
  void channel_inactive(Context& ctx) override;
  void exception_caught(Context& ctx, std::exception_ptr error) override;

 private:
  void send_request(Context& ctx);
  void fail(Context& ctx, std::exception_ptr error);
  void switch_over(Context& ctx, Handshake handshake, std::optional<DeflateParameters> deflate, ByteBuf rest);

  ClientHandshakeRequest request_;
  Promise<Handshake> done_;
  TailFn add_tail_;
  std::string key_;
  ByteBuf in_;  // the answer's bytes so far
  TimerId timer_ = 0;
  bool sent_ = false;
  bool finished_ = false;
};

}  // namespace weft::ws
