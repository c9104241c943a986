#include "weft/codec/http1/http_message.h"

#include <stdexcept>

namespace weft::http {
namespace {

bool is_token(std::string_view s) noexcept {
  if (s.empty()) return false;
  for (unsigned char c : s) {
    bool ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
    if (!ok) return false;
  }
  return true;
}

}  // namespace

HttpResponse& HttpResponse::header(std::string_view name, std::string_view value) & {
  if (!is_token(name)) throw std::invalid_argument("HTTP header name is not a token: '" + std::string(name) + "'");
  for (char c : value) {
    if (c == '\r' || c == '\n' || c == '\0') {
      throw std::invalid_argument("HTTP header value of '" + std::string(name) + "' contains CR, LF or NUL");
    }
  }
  append(name, ": ", value, "\r\n");
  return *this;
}

void HttpResponse::append(std::string_view a, std::string_view b, std::string_view c, std::string_view d) {
  const std::size_t n = a.size() + b.size() + c.size() + d.size();
  if (overflow_.empty() && inline_size_ + n <= inline_.size()) {
    char* p = inline_.data() + inline_size_;
    for (std::string_view part : {a, b, c, d}) {
      part.copy(p, part.size());
      p += part.size();
    }
    inline_size_ += n;
    return;
  }
  if (overflow_.empty()) overflow_.assign(inline_.data(), inline_size_);
  overflow_.append(a).append(b).append(c).append(d);
}

HttpResponse& HttpResponse::body(ByteBuf bytes) & noexcept {
  body_ = std::move(bytes);
  body_view_ = {};
  return *this;
}

HttpResponse& HttpResponse::body_view(std::string_view bytes) & noexcept {
  body_.release();
  body_view_ = bytes;
  return *this;
}

}  // namespace weft::http
