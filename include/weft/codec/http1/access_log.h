#pragma once
/// @file
/// AccessLog: one line per request, in the Common Log Format, to a sink you give.
///
///   router->use(std::make_shared<weft::http::AccessLog>([](std::string_view line) { my_log(line); }));
///
///   127.0.0.1 - - [05/Dec/2026:20:05:20 +0000] "GET /plaintext?x=1 HTTP/1.1" 200 13
///
/// Fields: the client's address, "-" for identity and user, the time the router took the request
/// (UTC), the request line (the target as sent; HTTP/2 says "HTTP/2.0"; '"', '\' and bytes outside
/// printable ASCII escaped as \\xHH), the status, and the body's size as sent ("-" for none, and for
/// HEAD). Add it first so that it sees the response the others made (compressed, say).

#include <functional>
#include <string>
#include <string_view>

#include "weft/codec/http1/middleware.h"

namespace weft::http {

/// Writes one Common Log Format line per request to a sink (see the file's description).
/// Thread-safe as its sink is: the sink is called on every loop the router serves, concurrently.
class AccessLog final : public Middleware {
 public:
  /// Receives each line, without a line break.
  using Sink = std::function<void(std::string_view line)>;
  /// Logs to `sink`; throws std::invalid_argument when it is empty.
  explicit AccessLog(Sink sink);
  /// Writes the request's line.
  void after(Request& request, HttpResponse& response) override;
  /// The line for `request` answered with `response` (what after() passes to the sink).
  static std::string format(const Request& request, const HttpResponse& response);

 private:
  Sink sink_;
};

}  // namespace weft::http
