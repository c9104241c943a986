#pragma once
// An extended CONNECT (RFC 8441) sent through an OriginPool: an Exchange whose `tunnel` is set goes
// only to an HTTP/2 connection whose server enabled extended CONNECT; there it opens a stream with
// `:protocol` and the opener's fields, and a 2xx hands the stream to the opener. Elsewhere the
// exchange fails with TunnelUnavailableError (the caller may fall back to HTTP/1.1).

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "weft/channel/channel.h"
#include "weft/codec/http1/client_codec.h"
#include "weft/codec/http2/client_stream.h"
#include "weft/core/error.h"
#include "weft/core/future.h"

namespace weft::client::detail {

// The pool's connection to the origin cannot carry an extended CONNECT: it is HTTP/1.1, or its
// server's SETTINGS did not enable extended CONNECT.
class TunnelUnavailableError final : public Error {
 public:
  using Error::Error;
};

class TunnelOpener {
 public:
  virtual ~TunnelOpener() = default;
  // Thread-safe (set before the exchange is sent). The :protocol.
  virtual std::string_view protocol() const noexcept = 0;
  // Thread-safe. The request's fields (names lowercase).
  virtual const std::vector<std::pair<std::string, std::string>>& fields() const noexcept = 0;
  // The connection's loop: the server answered `head` (a 2xx) on `stream`, a stream of the
  // connection whose channel is `connection`: the stream is the opener's. Returns the future of the
  // tunnel's end (its channel's close) when it opened: the stream counts toward the connection's
  // requests in flight until then (the pool neither closes the connection as idle nor counts the
  // stream's slot free); nullopt when it did not open.
  virtual std::optional<Future<void>> opened(Channel& connection, http2::ClientStream stream,
                                             const http::HttpClientResponse& head) = 0;
};

}  // namespace weft::client::detail
