#include "forwarded_headers.h"

#include <netinet/in.h>
#include <sys/socket.h>

#include <charconv>
#include <cstdint>
#include <string>

#include "weft/codec/http1/http_types.h"

namespace weft::proxy {
namespace {

using http::iequals;

// What a field is to the proxy.
enum class Field {
  other,
  hop_by_hop,
  expect,
  date,
  via,
  x_forwarded_for,
  forwarded,
  x_forwarded_proto,
  x_forwarded_host
};

// The field `name` is: by its length first, then the one or two names of that length (a walk of
// every name with iequals was a tenth of the proxy's header work).
Field classify(std::string_view name) noexcept {
  switch (name.size()) {
    case 2: return iequals(name, "te") ? Field::hop_by_hop : Field::other;
    case 3: return iequals(name, "via") ? Field::via : Field::other;
    case 4: return iequals(name, "date") ? Field::date : Field::other;
    case 6: return iequals(name, "expect") ? Field::expect : Field::other;
    case 7: return iequals(name, "trailer") || iequals(name, "upgrade") ? Field::hop_by_hop : Field::other;
    case 9: return iequals(name, "forwarded") ? Field::forwarded : Field::other;
    case 10: return iequals(name, "connection") || iequals(name, "keep-alive") ? Field::hop_by_hop : Field::other;
    case 14:  // the framing the next hop sets itself
      return iequals(name, "content-length") ? Field::hop_by_hop : Field::other;
    case 15: return iequals(name, "x-forwarded-for") ? Field::x_forwarded_for : Field::other;
    case 16:
      if (iequals(name, "proxy-connection")) return Field::hop_by_hop;
      return iequals(name, "x-forwarded-host") ? Field::x_forwarded_host : Field::other;
    case 17:
      if (iequals(name, "transfer-encoding")) return Field::hop_by_hop;
      return iequals(name, "x-forwarded-proto") ? Field::x_forwarded_proto : Field::other;
    default: return Field::other;
  }
}

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
  return classify(name) == Field::hop_by_hop || (!connection.empty() && lists(connection, name));
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
    const Field kind = classify(h.name);
    if (kind == Field::hop_by_hop || kind == Field::expect || (!connection.empty() && lists(connection, h.name))) {
      continue;
    }
    switch (kind) {
      case Field::x_forwarded_for: xff.append(xff.empty() ? "" : ", ").append(h.value); break;
      case Field::forwarded: forwarded.append(forwarded.empty() ? "" : ", ").append(h.value); break;
      case Field::via: via.append(via.empty() ? "" : ", ").append(h.value); break;
      default:
        has_proto = has_proto || kind == Field::x_forwarded_proto;
        has_host = has_host || kind == Field::x_forwarded_host;
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
    const Field kind = classify(h.name);
    if (kind == Field::hop_by_hop || kind == Field::date || (!connection.empty() && lists(connection, h.name))) {
      continue;
    }
    if (kind == Field::via) {
      vias.append(vias.empty() ? "" : ", ").append(h.value);
    } else {
      out.header(h.name, h.value);
    }
  }
  vias.append(vias.empty() ? "" : ", ").append(via);
  out.header("Via", vias);
}

}  // namespace weft::proxy
