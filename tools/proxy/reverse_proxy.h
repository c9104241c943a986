#pragma once
// weft-proxy's work, as a library its tests link: an HTTP reverse proxy as one streamed route
// (Router::fallback), forwarding every request to a backend with client::HttpClient, round robin,
// bodies streamed both ways with backpressure. See docs/http-proxy.md.

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "weft/client/http_client.h"
#include "weft/client/url.h"
#include "weft/codec/http1/body_reader.h"
#include "weft/codec/http1/router.h"
#include "weft/core/clock.h"
#include "weft/core/task.h"

namespace weft::proxy {

struct ProxyOptions {
  // Where requests go, in turn: "http://host:port[/prefix]" or "https://...". A prefix is put
  // before each request's target.
  std::vector<std::string> backends;
  // The scheme the clients speak to the proxy, for X-Forwarded-Proto and Forwarded: "http" or "https".
  std::string scheme_in = "http";
  // HTTP/2 to the backends: h2c by prior knowledge for http; for https, h2 when ALPN chooses it.
  bool backend_http2 = false;
  // https backends: accept any certificate.
  bool insecure = false;
  // Connections to one backend, per loop (HTTP/1.1 carries one request at a time on each).
  std::size_t max_connections_per_backend = 512;
  // A backend that does not accept (TCP, TLS) within this: 504, or the next backend.
  Duration connect_timeout = std::chrono::seconds(5);
  // A request's response head must come within this (a body being uploaded: no limit): else 504.
  Duration response_timeout = std::chrono::seconds(60);
  // No byte from the backend for this long while its answer is owed: 504 before the head, the
  // connection to the client failed after it.
  Duration idle_timeout = std::chrono::seconds(60);
};

// What the proxy did; thread-safe to read.
struct ProxyStats {
  std::uint64_t requests = 0;         // forwarded (or tried)
  std::uint64_t bad_gateway = 0;      // answered 502: the backend failed or answered malformed
  std::uint64_t gateway_timeout = 0;  // answered 504: the backend timed out
  std::uint64_t failed_mid_body = 0;  // the backend failed after its head: the client's response cut
  std::uint64_t next_backend = 0;     // requests sent to the next backend after one refused
};

// The proxy (see the file's description). Thread-safe: its route runs on every loop at once.
class ReverseProxy {
 public:
  // A proxy whose client runs on `client_loops` (the server's own loops, so that a request and
  // its backend exchange share a loop; a group of its own for the blocking transport). Throws
  // std::invalid_argument for no backend or one that is not an http(s) URL.
  ReverseProxy(EventLoopGroup& client_loops, ProxyOptions options);
  ~ReverseProxy();
  ReverseProxy(const ReverseProxy&) = delete;
  ReverseProxy& operator=(const ReverseProxy&) = delete;

  // Setup, not thread-safe: makes the proxy `router`'s fallback (every request no route takes).
  // The proxy must outlive the router's use.
  void install(http::Router& router);
  // The route: forwards `request` and its body, answers with the backend's answer (502 or 504
  // when there is none). Runs on the request's loop.
  Task<http::HttpResponse> forward(http::Request& request, http::BodyReader& body);
  // Thread-safe. Ends the backend connections (requests under way fail); once, after the server drained.
  Future<void> close();
  // Thread-safe.
  ProxyStats stats() const noexcept;

 private:
  struct Backend {
    client::Url origin;       // parsed once: requests go to its scheme, host and port
    std::string path_prefix;  // its path without a trailing '/' ("/api"; empty for "/")
  };
  struct Counters {
    std::atomic<std::uint64_t> requests{0}, bad_gateway{0}, gateway_timeout{0}, failed_mid_body{0}, next_backend{0};
  };

  Task<client::StreamedResponse> send(const http::Request& request, http::BodyReader& body,
                                      std::optional<ByteBuf> first, std::size_t backend);
  http::HttpClientRequest backend_request(const http::Request& request, std::size_t backend) const;
  http::HttpResponse error_answer(int status, std::string_view why);

  ProxyOptions options_;
  std::vector<Backend> backends_;
  client::HttpClient client_;
  std::atomic<std::size_t> next_{0};
  Counters counters_;
};

}  // namespace weft::proxy
