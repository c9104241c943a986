#include "forwarded_headers.h"

#include <netinet/in.h>
#include <sys/socket.h>

#include <array>
#include <charconv>
#include <cstdint>
#include <string>

#include "weft/codec/http1/http_types.h"

namespace weft::proxy {
namespace {

using http::iequals;

constexpr std::array<std::string_view, 8> kHopByHop = {
    "connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade", "content-length"};

std::string_view trim(std::string_view s) noexcept {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Whether the comma-separated `list` holds `token` (case-insensitive).
bool lists(std::string_view list, std::string_view token) noexcept {
  while (!list.empty()) {
    const std::size_t comma = list.find(',');
    if (iequals(trim(list.substr(0, comma)), token)) return true;
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return false;
}

// The value of the first `name` field of a head, or empty.
template <class Head>
std::string_view field(const Head& head, std::string_view name) noexcept {
  return head.header(name).value_or(std::string_view());
}

// An IPv6 address is quoted and bracketed in Forwarded (RFC 7239 6).
std::string forwarded_for(std::string_view ip) {
  if (ip.find(':') == std::string_view::npos) return std::string(ip);
  return "\"[" + std::string(ip) + "]\"";
}

}  // namespace

bool is_hop_by_hop(std::string_view name, std::string_view connection) noexcept {
  for (std::string_view h : kHopByHop) {
    if (iequals(name, h)) return true;
  }
  return !connection.empty() && lists(connection, name);
}

std::string client_ip(const SocketAddress& peer) {
  if (!peer.is_valid() || peer.is_unix()) return "unknown";
  if (peer.family() != AF_INET) return peer.host();
  // IPv4 by hand: inet_ntop's sprintf cost more than the rest of the request's fields together.
  const auto* a = reinterpret_cast<const std::uint8_t*>(&reinterpret_cast<const sockaddr_in*>(peer.raw())->sin_addr);
  char text[16];
  char* at = text;
  for (int i = 0; i < 4; ++i) {
    if (i > 0) *at++ = '.';
    at = std::to_chars(at, text + sizeof text, a[i]).ptr;
  }
  return std::string(text, at);
}

void forward_request_headers(const http::RequestHead& in, const Origin& origin, http::HttpClientRequest& out) {
  const std::string_view connection = field(in, "connection");
  // Scratch for the three fields built per request; header() copies them (no allocation once warm).
  thread_local std::string xff, forwarded, via;
  xff.clear();
  forwarded.clear();
  via.clear();
  bool has_proto = false, has_host = false;
  for (std::size_t i = 0; i < in.header_count; ++i) {
    const http::Header& h = in.inline_headers[i];
    if (is_hop_by_hop(h.name, connection) || iequals(h.name, "expect")) continue;
    if (iequals(h.name, "x-forwarded-for")) {
      xff.append(xff.empty() ? "" : ", ").append(h.value);
    } else if (iequals(h.name, "forwarded")) {
      forwarded.append(forwarded.empty() ? "" : ", ").append(h.value);
    } else if (iequals(h.name, "via")) {
      via.append(via.empty() ? "" : ", ").append(h.value);
    } else {
      has_proto = has_proto || iequals(h.name, "x-forwarded-proto");
      has_host = has_host || iequals(h.name, "x-forwarded-host");
      out.header(h.name, h.value);
    }
  }
  xff.append(xff.empty() ? "" : ", ").append(origin.client_ip);
  out.header("X-Forwarded-For", xff);
  forwarded.append(forwarded.empty() ? "" : ", ").append("for=").append(forwarded_for(origin.client_ip));
  forwarded.append(";proto=").append(origin.proto);
  if (!in.authority.empty()) forwarded.append(";host=\"").append(in.authority).append("\"");
  out.header("Forwarded", forwarded);
  if (!has_proto) out.header("X-Forwarded-Proto", origin.proto);
  if (!has_host && !in.authority.empty()) out.header("X-Forwarded-Host", in.authority);
  via.append(via.empty() ? "" : ", ").append(origin.via);
  out.header("Via", via);
}

void forward_response_headers(const http::ResponseHead& in, std::string_view via, http::HttpResponse& out) {
  const std::string_view connection = field(in, "connection");
  std::string vias;
  for (std::size_t i = 0; i < in.header_count; ++i) {
    const http::Header& h = in.inline_headers[i];
    if (is_hop_by_hop(h.name, connection) || iequals(h.name, "date")) continue;
    if (iequals(h.name, "via")) {
      vias.append(vias.empty() ? "" : ", ").append(h.value);
    } else {
      out.header(h.name, h.value);
    }
  }
  vias.append(vias.empty() ? "" : ", ").append(via);
  out.header("Via", vias);
}

}  // namespace weft::proxy
