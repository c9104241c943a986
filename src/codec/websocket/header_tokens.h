#pragma once
// Header-value helpers the WebSocket handshakes share (server: upgrade.cc; client: client_upgrade.cc):
// ASCII case-insensitive comparison, optional whitespace trimmed, comma-separated token lists.
// Thread-safe (pure functions).

#include <string_view>

namespace weft::ws::detail {

// Whether `a` and `b` are equal, ASCII letters compared without case.
inline bool iequals(std::string_view a, std::string_view b) noexcept {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

// `s` without leading and trailing spaces and tabs (RFC 9110's OWS).
inline std::string_view trim(std::string_view s) noexcept {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Calls fn(token) for each element of a comma-separated header value, trimmed; stops when fn
// returns true, and says whether one did.
template <class Fn>
bool any_token(std::string_view list, Fn fn) {
  while (!list.empty()) {
    const std::size_t comma = list.find(',');
    if (fn(trim(list.substr(0, comma)))) return true;
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return false;
}

// Whether the comma-separated `list` holds `token` (case-insensitive).
inline bool has_token(std::string_view list, std::string_view token) noexcept {
  return any_token(list, [&](std::string_view t) { return iequals(t, token); });
}

}  // namespace weft::ws::detail
