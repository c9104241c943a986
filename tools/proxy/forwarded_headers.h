#pragma once
// The header rules of a reverse proxy (RFC 9110 7.6): what it drops between the hops, what it adds.

#include <string>
#include <string_view>

#include "weft/channel/socket_address.h"
#include "weft/codec/http1/client_codec.h"
#include "weft/codec/http1/http_message.h"

namespace weft::proxy {

// Whether the field `name` belongs to one connection and is not forwarded: the hop-by-hop fields
// (Connection, Keep-Alive, Proxy-Connection, TE, Trailer, Transfer-Encoding, Upgrade), those the
// message's `connection` field names, and the framing the next hop sets itself (Content-Length).
bool is_hop_by_hop(std::string_view name, std::string_view connection) noexcept;

// The address of `peer` without its port ("unknown" for none, as RFC 7239 6.3 says).
std::string client_ip(const SocketAddress& peer);

// Who the request came from, for the fields the proxy adds.
struct Origin {
  std::string_view client_ip;  // the client's address, without its port
  std::string_view proto;      // "http" or "https"
  std::string_view via;        // "1.1 weft-proxy" or "2 weft-proxy"
};

// Copies the end-to-end fields of `in` into `out` (Expect too is left out: the proxy answers it),
// then appends the client to X-Forwarded-For and Forwarded (RFC 7239), sets X-Forwarded-Proto and
// X-Forwarded-Host unless present, and appends `via` to Via. Throws std::invalid_argument as
// HttpClientRequest::header() does for a field it cannot send.
void forward_request_headers(const http::RequestHead& in, const Origin& origin, http::HttpClientRequest& out);

// Copies the end-to-end fields of a backend's answer into `out`, less Date (the proxy's codec sets
// its own), and appends `via` to Via.
void forward_response_headers(const http::ResponseHead& in, std::string_view via, http::HttpResponse& out);

}  // namespace weft::proxy
