#include "weft/codec/http1/route_request.h"

namespace weft::http {

void Request::set(std::string_view key, std::string value) {
  for (auto& [k, v] : values_) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  values_.emplace_back(std::string(key), std::move(value));
}

std::optional<std::string_view> Request::get(std::string_view key) const noexcept {
  for (const auto& [k, v] : values_) {
    if (k == key) return std::string_view(v);
  }
  return std::nullopt;
}

}  // namespace weft::http
