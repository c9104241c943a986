#include "response_headers.h"

#include <charconv>
#include <cstring>

#include "../http1/date_cache.h"
#include "weft/codec/http1/http_types.h"

namespace weft::http2::detail {

bool is_connection_specific(std::string_view name) noexcept {
  using http::iequals;
  return iequals(name, "connection") || iequals(name, "keep-alive") || iequals(name, "transfer-encoding") ||
         iequals(name, "upgrade") || iequals(name, "proxy-connection");
}

namespace {

HeaderField make_nv(std::string_view name, std::string_view value) noexcept {
  HeaderField nv;
  nv.name = reinterpret_cast<std::uint8_t*>(const_cast<char*>(name.data()));
  nv.namelen = name.size();
  nv.value = reinterpret_cast<std::uint8_t*>(const_cast<char*>(value.data()));
  nv.valuelen = value.size();
  nv.flags = HeaderField::indexed;
  return nv;
}

// Appends the fields of `lines` ("Name: value\r\n", validated when they were added to the
// response) to `out`, their names lowercased into `lower` (room for lines.size() bytes), without
// those HTTP/2 forbids or the codec adds. Returns the bytes of `lower` used.
std::size_t parse_lines(std::string_view lines, char* lower, std::vector<HeaderField>& out) {
  std::size_t used = 0;
  while (!lines.empty()) {
    const std::size_t eol = lines.find("\r\n");
    const std::string_view line = lines.substr(0, eol);
    lines.remove_prefix(eol == std::string_view::npos ? lines.size() : eol + 2);
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    const std::string_view name = line.substr(0, colon);
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
    if (is_connection_specific(name) || http::iequals(name, "content-length") || http::iequals(name, "date")) {
      continue;  // forbidden in HTTP/2, or added by the codec
    }
    char* to = lower + used;
    for (std::size_t i = 0; i < name.size(); ++i) {
      const char c = name[i];
      to[i] = c >= 'A' && c <= 'Z' ? static_cast<char>(c | 0x20) : c;
    }
    used += name.size();
    out.push_back(make_nv(std::string_view(to, name.size()), value));
  }
  return used;
}

}  // namespace

void ResponseHeaders::build(const http::HttpResponse& response, std::optional<std::size_t> content_length) {
  const std::string_view shared = response.shared_header_block();
  const std::string_view own = response.header_block();
  nv_.clear();
  used_ = 0;
  // Room for every lowercased name, the status and the content-length: the entries point into
  // text_, which must not move while they are made.
  const std::size_t need = own.size() + 64;
  if (text_.size() < need) text_.resize(need);

  char* status = text_.data();
  const auto [end, ec] = std::to_chars(status, status + 8, response.status());
  (void)ec;
  used_ = static_cast<std::size_t>(end - status);
  add(":status", std::string_view(status, used_));
  if (!shared.empty()) {
    if (shared != std::string_view(shared_text_)) cache_shared(shared);
    nv_.insert(nv_.end(), shared_nv_.begin(), shared_nv_.end());
  }
  used_ += parse_lines(own, text_.data() + used_, nv_);
  const std::string_view date_line = http::date_header_line();  // "Date: ...\r\n"
  if (date_line.size() > 8) add("date", date_line.substr(6, date_line.size() - 8));
  if (content_length) {
    char* p = text_.data() + used_;
    const auto [stop, error] = std::to_chars(p, p + 24, *content_length);
    (void)error;
    const std::size_t n = static_cast<std::size_t>(stop - p);
    used_ += n;
    add("content-length", std::string_view(p, n));
  }
}

void ResponseHeaders::build_fields(const Fields& fields) {
  nv_.clear();
  used_ = 0;
  std::size_t need = 0;
  for (const Fields::Field& f : fields) need += f.name.size();
  if (text_.size() < need) text_.resize(need);  // the entries point into text_: sized before them
  for (const Fields::Field& f : fields) {
    if (is_connection_specific(f.name)) continue;
    char* to = text_.data() + used_;
    for (std::size_t i = 0; i < f.name.size(); ++i) {
      const char c = f.name[i];
      to[i] = c >= 'A' && c <= 'Z' ? static_cast<char>(c | 0x20) : c;
    }
    used_ += f.name.size();
    add(std::string_view(to, f.name.size()), f.value);
  }
}

// Parses a shared HeaderBlock once; the responses that share it reuse its fields.
void ResponseHeaders::cache_shared(std::string_view block) {
  shared_text_.assign(block);
  shared_names_.assign(block.size(), '\0');
  shared_nv_.clear();
  parse_lines(shared_text_, shared_names_.data(), shared_nv_);
}

void ResponseHeaders::add(std::string_view name, std::string_view value) { nv_.push_back(make_nv(name, value)); }

}  // namespace weft::http2::detail
