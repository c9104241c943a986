#include "weft/codec/http1/file_response.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <charconv>
#include <cstdint>
#include <ctime>
#include <memory>
#include <optional>

#include "weft/codec/http1/http_types.h"

namespace weft::http {

namespace {

struct Extension {
  std::string_view extension;
  std::string_view type;
};

constexpr std::array<Extension, 30> kTypes{{
    {"html", "text/html; charset=utf-8"},
    {"htm", "text/html; charset=utf-8"},
    {"css", "text/css; charset=utf-8"},
    {"js", "text/javascript; charset=utf-8"},
    {"mjs", "text/javascript; charset=utf-8"},
    {"json", "application/json"},
    {"txt", "text/plain; charset=utf-8"},
    {"md", "text/markdown; charset=utf-8"},
    {"csv", "text/csv; charset=utf-8"},
    {"xml", "application/xml"},
    {"svg", "image/svg+xml"},
    {"png", "image/png"},
    {"jpg", "image/jpeg"},
    {"jpeg", "image/jpeg"},
    {"gif", "image/gif"},
    {"webp", "image/webp"},
    {"avif", "image/avif"},
    {"ico", "image/x-icon"},
    {"woff", "font/woff"},
    {"woff2", "font/woff2"},
    {"pdf", "application/pdf"},
    {"zip", "application/zip"},
    {"gz", "application/gzip"},
    {"wasm", "application/wasm"},
    {"mp4", "video/mp4"},
    {"webm", "video/webm"},
    {"mp3", "audio/mpeg"},
    {"ogg", "audio/ogg"},
    {"wav", "audio/wav"},
    {"bin", "application/octet-stream"},
}};

// An IMF-fixdate (RFC 9110 5.6.7) for `t`: "Sun, 06 Nov 1994 08:49:37 GMT".
std::string http_date(std::time_t t) {
  std::tm tm{};
  gmtime_r(&t, &tm);
  char text[40];
  const std::size_t n = std::strftime(text, sizeof text, "%a, %d %b %Y %H:%M:%S GMT", &tm);
  return std::string(text, n);
}

// Parses an IMF-fixdate; nullopt for anything else (the obsolete formats are not sent by clients
// that send validators they got from us).
std::optional<std::time_t> parse_http_date(std::string_view text) {
  static constexpr std::array<std::string_view, 12> kMonths{"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                            "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  // "Sun, 06 Nov 1994 08:49:37 GMT"
  if (text.size() != 29 || text[3] != ',' || text.substr(25) != " GMT") return std::nullopt;
  auto number = [&](std::size_t at, std::size_t n) -> std::optional<int> {
    int v = 0;
    const auto r = std::from_chars(text.data() + at, text.data() + at + n, v);
    if (r.ec != std::errc() || r.ptr != text.data() + at + n) return std::nullopt;
    return v;
  };
  std::tm tm{};
  const auto day = number(5, 2), year = number(12, 4), hour = number(17, 2), minute = number(20, 2),
             second = number(23, 2);
  if (!day || !year || !hour || !minute || !second || text[19] != ':' || text[22] != ':') return std::nullopt;
  int month = -1;
  for (std::size_t i = 0; i < kMonths.size(); ++i) {
    if (text.substr(8, 3) == kMonths[i]) month = static_cast<int>(i);
  }
  if (month < 0) return std::nullopt;
  tm.tm_mday = *day;
  tm.tm_mon = month;
  tm.tm_year = *year - 1900;
  tm.tm_hour = *hour;
  tm.tm_min = *minute;
  tm.tm_sec = *second;
  return timegm(&tm);
}

std::string_view trim(std::string_view s) noexcept {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Weak comparison (RFC 9110 8.8.3.2): equal opaque tags, W/ ignored.
bool weak_equal(std::string_view a, std::string_view b) noexcept {
  if (a.starts_with("W/")) a.remove_prefix(2);
  if (b.starts_with("W/")) b.remove_prefix(2);
  return a == b;
}

// Whether the If-None-Match list has `etag` (or is "*").
bool none_match_hits(std::string_view list, std::string_view etag) noexcept {
  while (!list.empty()) {
    const std::size_t comma = list.find(',');
    const std::string_view item = trim(list.substr(0, comma));
    list.remove_prefix(comma == std::string_view::npos ? list.size() : comma + 1);
    if (item == "*" || weak_equal(item, etag)) return true;
  }
  return false;
}

struct ByteRange {
  std::uint64_t first;
  std::uint64_t length;
};
enum class RangeKind { whole, one, unsatisfiable };

std::optional<std::uint64_t> parse_u64(std::string_view s) noexcept {
  if (s.empty()) return std::nullopt;
  std::uint64_t v = 0;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

// One byte range of a file of `size` bytes (RFC 9110 14.1.2); several ranges, another unit or a
// malformed header: the whole file.
RangeKind parse_range(std::string_view header, std::uint64_t size, ByteRange& out) noexcept {
  header = trim(header);
  if (header.size() < 6 || !iequals(header.substr(0, 6), "bytes=")) return RangeKind::whole;
  const std::string_view spec = trim(header.substr(6));
  if (spec.find(',') != std::string_view::npos) return RangeKind::whole;
  const std::size_t dash = spec.find('-');
  if (dash == std::string_view::npos) return RangeKind::whole;
  const std::string_view first_text = trim(spec.substr(0, dash));
  const std::string_view last_text = trim(spec.substr(dash + 1));
  if (first_text.empty()) {  // a suffix: the last n bytes
    const auto n = parse_u64(last_text);
    if (!n) return RangeKind::whole;
    if (*n == 0 || size == 0) return RangeKind::unsatisfiable;
    const std::uint64_t length = *n < size ? *n : size;
    out = {size - length, length};
    return RangeKind::one;
  }
  const auto first = parse_u64(first_text);
  if (!first) return RangeKind::whole;
  std::uint64_t last = size == 0 ? 0 : size - 1;
  if (!last_text.empty()) {
    const auto l = parse_u64(last_text);
    if (!l || *l < *first) return RangeKind::whole;  // invalid: ignored (RFC 9110 14.1.1)
    if (*l < last) last = *l;
  }
  if (*first >= size) return RangeKind::unsatisfiable;
  out = {*first, last - *first + 1};
  return RangeKind::one;
}

void add_validators(HttpResponse& response, std::string_view etag, std::string_view last_modified,
                    const FileResponseOptions& options) {
  response.header("ETag", etag).header("Last-Modified", last_modified);
  if (!options.cache_control.empty()) response.header("Cache-Control", options.cache_control);
}

}  // namespace

std::string_view content_type_for(std::string_view path) noexcept {
  const std::size_t slash = path.rfind('/');
  const std::size_t dot = path.rfind('.');
  if (dot == std::string_view::npos || (slash != std::string_view::npos && dot < slash)) {
    return "application/octet-stream";
  }
  const std::string_view extension = path.substr(dot + 1);
  for (const Extension& e : kTypes) {
    if (iequals(e.extension, extension)) return e.type;
  }
  return "application/octet-stream";
}

HttpResponse FileResponse::make(const HttpRequest& request, const std::string& path,
                                const FileResponseOptions& options) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return HttpResponse(404).for_request(request).body_view("Not Found");
  return from_descriptor(request, fd, path, options);
}

HttpResponse FileResponse::from_descriptor(const HttpRequest& request, int fd, std::string_view name,
                                           const FileResponseOptions& options) {
  auto file = std::make_shared<const FileHandle>(fd);
  const std::string_view method = request.method();
  if (method != "GET" && method != "HEAD") {
    return HttpResponse(405).for_request(request).header("Allow", "GET, HEAD").body_view("Method Not Allowed");
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    return HttpResponse(404).for_request(request).body_view("Not Found");
  }
  const std::uint64_t size = static_cast<std::uint64_t>(st.st_size);
  const std::uint64_t mtime_ns =
      static_cast<std::uint64_t>(st.st_mtim.tv_sec) * 1000000000u + static_cast<std::uint64_t>(st.st_mtim.tv_nsec);
  char etag_text[48];
  char* p = etag_text;
  *p++ = '"';
  p = std::to_chars(p, etag_text + sizeof etag_text, mtime_ns, 16).ptr;
  *p++ = '-';
  p = std::to_chars(p, etag_text + sizeof etag_text, size, 16).ptr;
  *p++ = '"';
  const std::string_view etag(etag_text, static_cast<std::size_t>(p - etag_text));
  const std::string last_modified = http_date(st.st_mtim.tv_sec);

  // Conditionals (RFC 9110 13.2.2): If-None-Match, else If-Modified-Since.
  bool not_modified = false;
  if (const auto inm = request.header("If-None-Match")) {
    not_modified = none_match_hits(*inm, etag);
  } else if (const auto ims = request.header("If-Modified-Since")) {
    const auto since = parse_http_date(trim(*ims));
    not_modified = since && st.st_mtim.tv_sec <= *since;
  }
  if (not_modified) {
    HttpResponse response(304);
    response.for_request(request);
    add_validators(response, etag, last_modified, options);
    return response;
  }

  const std::string_view type = options.content_type.empty() ? content_type_for(name) : options.content_type;
  ByteRange range{0, size};
  RangeKind kind = RangeKind::whole;
  if (const auto header = request.header("Range")) {
    bool range_applies = true;
    if (const auto if_range = request.header("If-Range")) {
      const std::string_view v = trim(*if_range);
      range_applies = v.starts_with('"') ? v == etag : v == last_modified;  // strong comparison
    }
    if (range_applies) kind = parse_range(*header, size, range);
  }
  if (kind == RangeKind::unsatisfiable) {
    HttpResponse response(416);
    response.for_request(request);
    char text[48];
    char* e = std::to_chars(text, text + sizeof text, size).ptr;
    response.header("Content-Range", std::string("bytes */") + std::string(text, static_cast<std::size_t>(e - text)));
    add_validators(response, etag, last_modified, options);
    return response;
  }
  HttpResponse response(kind == RangeKind::one ? 206 : 200);
  response.for_request(request).content_type(type).header("Accept-Ranges", "bytes");
  add_validators(response, etag, last_modified, options);
  if (kind == RangeKind::one) {
    char text[80];
    char* e = text;
    auto put = [&](std::string_view s) {
      s.copy(e, s.size());
      e += s.size();
    };
    put("bytes ");
    e = std::to_chars(e, text + sizeof text, range.first).ptr;
    put("-");
    e = std::to_chars(e, text + sizeof text, range.first + range.length - 1).ptr;
    put("/");
    e = std::to_chars(e, text + sizeof text, size).ptr;
    response.header("Content-Range", std::string_view(text, static_cast<std::size_t>(e - text)));
  }
  if (range.length != 0) response.body(FileRegion(std::move(file), range.first, range.length));
  return response;
}

}  // namespace weft::http
