#pragma once
/// @file
/// Cors: Cross-Origin Resource Sharing (the Fetch standard's CORS protocol) for a router.
///
///   router->use(std::make_shared<weft::http::Cors>(weft::http::CorsOptions{
///       .allowed_origins = {"https://app.example"}, .allowed_methods = {"GET", "POST"}}));
///
/// A preflight (OPTIONS with Origin and Access-Control-Request-Method) is answered by the middleware
/// itself, before the routes: 204 with Access-Control-Allow-Origin, -Methods, -Headers and -Max-Age
/// when the origin and the method are allowed (and every requested header, unless allowed_headers is
/// empty, which allows those requested), else 403 without them. Other requests with an allowed Origin
/// get Access-Control-Allow-Origin (and -Credentials, -Expose-Headers) on their response; a
/// disallowed origin gets nothing added (the browser then refuses the response to the page). Vary:
/// Origin is added whenever the answer depends on the origin.

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "weft/codec/http1/middleware.h"

namespace weft::http {

/// What Cors allows.
struct CorsOptions {
  /// Origins allowed ("https://app.example", compared exactly); "*" allows every origin.
  std::vector<std::string> allowed_origins = {"*"};
  /// Methods a preflight may ask for.
  std::vector<std::string> allowed_methods = {"GET", "HEAD", "POST"};
  /// Request headers a preflight may ask for (case-insensitive); empty: whatever it asks.
  std::vector<std::string> allowed_headers;
  /// Response headers the page may read (Access-Control-Expose-Headers).
  std::vector<std::string> exposed_headers;
  /// Sends Access-Control-Allow-Credentials: true (the origin is then echoed, never "*").
  bool allow_credentials = false;
  /// How long a browser may cache a preflight's answer.
  std::chrono::seconds max_age{600};
};

/// The CORS protocol (see the file's description). Thread-safe.
class Cors final : public Middleware {
 public:
  /// Throws std::invalid_argument on a value that cannot be a header value.
  explicit Cors(CorsOptions options = {});
  /// Answers preflights.
  std::optional<HttpResponse> before(Request& request) override;
  /// Adds the CORS headers to other answers.
  void after(Request& request, HttpResponse& response) override;

 private:
  bool origin_allowed(std::string_view origin) const noexcept;
  bool headers_allowed(std::string_view requested) const noexcept;
  // The Access-Control-Allow-Origin value for an allowed `origin`.
  std::string_view allow_origin_value(std::string_view origin) const noexcept;

  CorsOptions options_;
  bool any_origin_ = false;
  std::string methods_;  // joined with ", "
  std::string allowed_headers_;
  std::string exposed_;
  std::string max_age_;
};

}  // namespace weft::http
