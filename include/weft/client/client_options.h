#pragma once
/// @file
/// client::ClientOptions: how an HttpClient pools its connections, how long it waits, and what it
/// accepts (see http_client.h).

#include <chrono>
#include <cstddef>

#include "weft/codec/tls/tls_context.h"
#include "weft/core/clock.h"
#include "weft/dns/resolver.h"

namespace weft::client {

/// The settings of an HttpClient; every duration zero turns its timeout off.
struct ClientOptions {
  /// Connections open at once to one origin (scheme, host, port), per loop.
  std::size_t max_connections_per_origin = 8;
  /// Requests waiting for a connection, per origin and loop; past it a request fails with PoolQueueFullError.
  std::size_t max_pending_requests = 1024;
  /// A pooled connection with nothing to do is closed after this long.
  Duration idle_connection_timeout = std::chrono::seconds(60);
  /// A connection is not given new requests once it is this old (zero: no limit).
  Duration max_connection_age = Duration::zero();

  /// How host names are resolved: DNS servers (empty: /etc/resolv.conf's), the hosts file, cache
  /// TTLs, the resolution's own timeout. Each loop of the group that connects to a name makes a
  /// weft::Resolver with these (on the blocking transport, one for the client); numeric hosts are
  /// never looked up.
  ResolverOptions resolver;
  /// Happy Eyeballs (RFC 8305): how long a connection attempt to one of a name's addresses runs
  /// alone before the next address (of the other family first) is tried as well.
  Duration connection_attempt_delay = std::chrono::milliseconds(250);

  /// Resolution, TCP, TLS and (HTTP/2) the server's SETTINGS within this: else TimeoutError::Kind::connect.
  Duration connect_timeout = std::chrono::seconds(10);
  /// The whole request, redirects and a retry included: else TimeoutError::Kind::request. A
  /// request's own http::HttpClientRequest::timeout() replaces it for that request.
  Duration request_timeout = std::chrono::seconds(60);
  /// No byte of an owed response for this long: TimeoutError::Kind::idle. HTTP/1.1: the connection
  /// is closed; HTTP/2: the stream is reset (CANCEL) and the connection serves on (a whole answer:
  /// no frame on its stream; a streamed body: no DATA while the reader waits). Also an upload the
  /// connection could take no more of for this long (request_body.h).
  Duration idle_timeout = std::chrono::seconds(30);

  /// A larger response body fails the request with ResponseTooLargeError.
  std::size_t max_response_body = 64u << 20;
  /// Follow 301, 302, 303, 307 and 308 (303, and 301/302 after POST, become GET without a body).
  bool follow_redirects = false;
  /// More redirects than this fail the request with TooManyRedirectsError.
  std::size_t max_redirects = 10;

  /// https: offer h2 by ALPN (and http/1.1); false: http/1.1 only.
  bool http2 = true;
  /// http: speak HTTP/2 without asking (h2c with prior knowledge).
  bool http2_prior_knowledge = false;
  /// https: accept any certificate (no chain or name check). For tests and tools only.
  bool insecure = false;
  /// https: the TLS context to use (its ALPN list and trust); null: the system's trust store, ALPN
  /// from `http2`, verification unless `insecure`, built once, when the client first meets an https
  /// origin (a client that speaks only http never loads the trust store).
  TlsContextPtr tls;
};

}  // namespace weft::client
