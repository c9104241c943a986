#pragma once
/// @file
/// The typed failures of client::HttpClient's requests (besides UrlError, url.h; TlsHandshakeError,
/// weft/codec/tls/tls_error.h, whose cause() is `certificate` for an untrusted or misnamed
/// certificate; ChannelClosedError for a connection lost under a request; IoError for a refused connect).

#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>
#include <string_view>

#include "weft/core/error.h"
#include "weft/dns/dns_error.h"

namespace weft::client {

/// A request ran out of time; kind() names the timeout that fired.
class TimeoutError : public Error {
 public:
  /// The timeouts of HttpClient::Options.
  enum class Kind : std::uint8_t {
    connect,  ///< Options::connect_timeout: the connection (TCP, TLS, HTTP/2 SETTINGS) was not ready
    request,  ///< Options::request_timeout: the whole request, from the call to the response's end
    idle,     ///< Options::idle_timeout: no byte of the response for this long while it was owed, or an
              ///< upload that the connection could take no more of for this long
  };
  /// `kind` fired for the request to `url`.
  TimeoutError(Kind kind, std::string_view url);
  /// The timeout that fired.
  Kind kind() const noexcept { return kind_; }

 private:
  Kind kind_;
};

/// The origin's queue of requests waiting for a connection was full (Options::max_pending_requests).
class PoolQueueFullError : public Error {
 public:
  /// For the origin `origin` ("http://host:port") whose queue holds `limit` requests.
  PoolQueueFullError(std::string_view origin, std::size_t limit);
};

/// The response's body was larger than Options::max_response_body.
class ResponseTooLargeError : public Error {
 public:
  /// For `url`, whose response was longer than `limit` bytes.
  ResponseTooLargeError(std::string_view url, std::size_t limit);
};

/// A redirect chain longer than Options::max_redirects.
class TooManyRedirectsError : public Error {
 public:
  /// `url`: the last URL reached; `limit`: the redirects allowed.
  TooManyRedirectsError(std::string_view url, std::size_t limit);
};

/// A host name that did not resolve (ClientOptions::resolver): what() is the resolver's message,
/// which names the host and the reason; code() and cause() keep the resolver's DnsError.
class HostResolutionError : public Error {
 public:
  /// From the resolver's failure `cause`.
  explicit HostResolutionError(const DnsError& cause);
  /// Thread-safe. The name that did not resolve.
  const std::string& host() const noexcept { return host_; }
  /// Thread-safe. Why: NXDOMAIN, no address, timeout, server failure...
  DnsErrorCode code() const noexcept { return code_; }
  /// Thread-safe. The resolver's DnsError (rethrow it to inspect it).
  std::exception_ptr cause() const noexcept { return cause_; }

 private:
  std::string host_;
  DnsErrorCode code_;
  std::exception_ptr cause_;
};

/// A streamed request body (HttpClient::upload, RequestBody) that could not be sent as asked;
/// kind() says why. The request fails with it too, except for `answered`.
class RequestBodyError : public Error {
 public:
  /// Why the body stopped.
  enum class Kind : std::uint8_t {
    too_long,   ///< more bytes written than the declared Content-Length
    too_short,  ///< finish() before the declared Content-Length was written
    abandoned,  ///< the RequestBody was let go of (or abandon() called) before finish()
    answered,   ///< the server answered (a final status >= 300) before the body's end: the rest is not sent
  };
  /// `kind` for the request to `url`.
  RequestBodyError(Kind kind, std::string_view url);
  /// Thread-safe. Why the body stopped.
  Kind kind() const noexcept { return kind_; }

 private:
  Kind kind_;
};

/// The client was closed (HttpClient::close) before the request could be carried out.
class ClientClosedError : public Error {
 public:
  /// The request could not be carried out: the client was closed.
  ClientClosedError() : Error("the HTTP client is closed") {}
};

}  // namespace weft::client
