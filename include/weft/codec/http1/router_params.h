#pragma once
/// @file
/// RouteParams: the parameters a Router pattern captured.

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>

namespace weft::http {

class Router;

/// The parameters a pattern captured: "/users/{id}" matching "/users/42" gives id -> "42". Names
/// view the router's pattern, values the request's path: valid while both live. Values are the bytes
/// as sent, still percent-encoded: decode them with percent_decode (weft/codec/http1/query.h).
/// Fixed-size, no allocation. Thread-safe to read.
class RouteParams {
 public:
  static constexpr std::size_t kMax = 8;  ///< parameters one pattern may have
  /// One captured parameter.
  struct Param {
    /// The parameter's name in the pattern.
    std::string_view name;
    /// The path segment it matched, still percent-encoded.
    std::string_view value;
  };

  /// The value of the parameter `name`, if the pattern has one.
  std::optional<std::string_view> get(std::string_view name) const noexcept;
  /// The number of parameters captured.
  std::size_t size() const noexcept { return size_; }
  /// size() == 0.
  bool empty() const noexcept { return size_ == 0; }
  /// The i-th parameter, in pattern order; requires i < size().
  const Param& operator[](std::size_t i) const noexcept { return params_[i]; }
  /// The first parameter, for range-for.
  const Param* begin() const noexcept { return params_.data(); }
  /// Past the last parameter.
  const Param* end() const noexcept { return params_.data() + size_; }

 private:
  friend class Router;
  std::array<Param, kMax> params_{};
  std::size_t size_ = 0;
};

}  // namespace weft::http
