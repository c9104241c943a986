#include "weft/codec/http1/compression.h"

#include <zlib.h>

#include <algorithm>
#include <charconv>
#include <stdexcept>

#include "weft/buffer/byte_buf_allocator.h"
#include "weft/codec/http1/http_types.h"

namespace weft::http {
namespace {

std::string_view coding_trim(std::string_view s) noexcept {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool starts_with_nocase(std::string_view text, std::string_view prefix) noexcept {
  return text.size() >= prefix.size() && iequals(text.substr(0, prefix.size()), prefix);
}

// The q-value of one Accept-Encoding element's parameters (";q=0.5"); 1 without one, 0 when malformed.
double q_value(std::string_view params) noexcept {
  while (!params.empty()) {
    const std::size_t semicolon = params.find(';');
    const std::string_view param = coding_trim(params.substr(0, semicolon));
    params.remove_prefix(semicolon == std::string_view::npos ? params.size() : semicolon + 1);
    if (param.size() < 2 || (param[0] != 'q' && param[0] != 'Q') || param[1] != '=') continue;
    const std::string_view number = param.substr(2);
    double q = 0;
    const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), q);
    if (ec != std::errc() || end != number.data() + number.size() || q < 0 || q > 1) return 0;
    return q;
  }
  return 1;
}

}  // namespace

Compression::Compression(CompressionOptions options) : options_(std::move(options)) {
  if (options_.level < 1 || options_.level > 9) throw std::invalid_argument("Compression: level must be 1..9");
}

bool Compression::accepts_gzip(std::string_view accept_encoding) noexcept {
  std::optional<double> gzip, any;
  while (!accept_encoding.empty()) {
    const std::size_t comma = accept_encoding.find(',');
    const std::string_view element = accept_encoding.substr(0, comma);
    accept_encoding.remove_prefix(comma == std::string_view::npos ? accept_encoding.size() : comma + 1);
    const std::size_t semicolon = element.find(';');
    const std::string_view coding = coding_trim(element.substr(0, semicolon));
    const double q = semicolon == std::string_view::npos ? 1 : q_value(element.substr(semicolon + 1));
    if (iequals(coding, "gzip") || iequals(coding, "x-gzip")) {
      gzip = std::max(gzip.value_or(0), q);
    } else if (coding == "*") {
      any = q;
    }
  }
  return gzip ? *gzip > 0 : any.value_or(0) > 0;
}

std::optional<ByteBuf> Compression::gzip(ByteBufAllocator& allocator, std::string_view data, int level) {
  z_stream z{};
  if (deflateInit2(&z, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) return std::nullopt;
  const uLong bound = deflateBound(&z, static_cast<uLong>(data.size()));
  ByteBuf out = allocator.buffer(bound, bound);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.write_ptr());
  z.avail_out = static_cast<uInt>(bound);
  const int result = deflate(&z, Z_FINISH);
  const std::size_t produced = bound - z.avail_out;
  deflateEnd(&z);
  if (result != Z_STREAM_END) return std::nullopt;
  out.advance_writer(produced);
  return out;
}

bool Compression::compressible_type(std::optional<std::string_view> content_type) const noexcept {
  if (!content_type) return true;
  return std::none_of(options_.skip_types.begin(), options_.skip_types.end(),
                      [&](const std::string& prefix) { return starts_with_nocase(*content_type, prefix); });
}

void Compression::after(Request& request, HttpResponse& response) {
  const int status = response.status();
  if (status < 200 || status == 204 || status == 206 || status == 304) return;
  const std::string_view body = response.body_bytes();
  if (body.size() < options_.min_size || body.size() > 0xffffffffu) return;
  if (response.find_header("Content-Encoding") || !compressible_type(response.find_header("Content-Type"))) return;
  response.header("Vary", "Accept-Encoding");
  const std::optional<std::string_view> accept = request.header("Accept-Encoding");
  if (!accept || !accepts_gzip(*accept)) return;
  std::optional<ByteBuf> compressed = gzip(request.channel().allocator(), body, options_.level);
  if (!compressed || compressed->readable_bytes() >= body.size()) return;
  response.header("Content-Encoding", "gzip");
  response.body(std::move(*compressed));
}

}  // namespace weft::http
