#pragma once
/// @file
/// RequestId: every request gets an id, the client's X-Request-Id when it sent a usable one, else a
/// new one (32 hex digits, random); the route reads it with RequestId::of(request), and the response
/// carries it back in X-Request-Id.
///
///   router->use(std::make_shared<weft::http::RequestId>());
///
/// An incoming id is used when it is 1 to 128 characters of letters, digits and "-_.:/+=@"; any
/// other (empty, too long, with spaces or controls) is replaced by a new one, so what is logged and
/// echoed is never the client's arbitrary bytes.

#include <optional>
#include <string>
#include <string_view>

#include "weft/codec/http1/middleware.h"

namespace weft::http {

/// Gives every request an id (see the file's description). Thread-safe.
class RequestId final : public Middleware {
 public:
  /// The Request value the id is kept under.
  static constexpr std::string_view kKey = "request-id";
  /// Reads and writes the header `header` (X-Request-Id unless told otherwise).
  explicit RequestId(std::string header = "X-Request-Id");
  /// Takes the client's id or makes one.
  std::optional<HttpResponse> before(Request& request) override;
  /// Echoes the id in the response, unless the route set the header itself.
  void after(Request& request, HttpResponse& response) override;
  /// The id of `request`, once RequestId has run.
  static std::optional<std::string_view> of(const Request& request) noexcept { return request.get(kKey); }
  /// Whether `id` may be used as it is (see the file's description).
  static bool acceptable(std::string_view id) noexcept;
  /// A new id: 32 lowercase hex digits from a per-thread generator seeded by the OS.
  static std::string generate();

 private:
  std::string header_;
};

}  // namespace weft::http
