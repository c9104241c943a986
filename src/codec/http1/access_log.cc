#include "weft/codec/http1/access_log.h"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <ctime>
#include <stdexcept>

namespace weft::http {
namespace {

constexpr std::string_view version_text(Version v) noexcept {
  switch (v) {
    case Version::http10: return "HTTP/1.0";
    case Version::http11: return "HTTP/1.1";
    case Version::http2: return "HTTP/2.0";
  }
  return "HTTP/1.1";
}

// Appends `text` with '"', '\' and bytes outside printable ASCII as \xHH.
void append_escaped(std::string& out, std::string_view text) {
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u >= 0x7f || c == '"' || c == '\\') {
      fmt::format_to(std::back_inserter(out), "\\x{:02x}", u);
    } else {
      out += c;
    }
  }
}

}  // namespace

AccessLog::AccessLog(Sink sink) : sink_(std::move(sink)) {
  if (!sink_) throw std::invalid_argument("AccessLog: no sink");
}

std::string AccessLog::format(const Request& request, const HttpResponse& response) {
  const std::string host = request.channel().remote_address().host();
  const std::time_t seconds = std::chrono::system_clock::to_time_t(request.received());
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  std::string line = fmt::format("{} - - [{:%d/%b/%Y:%H:%M:%S} +0000] \"", host.empty() ? "-" : host, utc);
  append_escaped(line, request.method());
  line += ' ';
  append_escaped(line, request.message().target());
  line += ' ';
  line += version_text(request.message().version());
  const std::size_t bytes = request.method() == "HEAD" ? 0 : response.body_bytes().size();
  if (bytes == 0) {
    fmt::format_to(std::back_inserter(line), "\" {} -", response.status());
  } else {
    fmt::format_to(std::back_inserter(line), "\" {} {}", response.status(), bytes);
  }
  return line;
}

void AccessLog::after(Request& request, HttpResponse& response) { sink_(format(request, response)); }

}  // namespace weft::http
