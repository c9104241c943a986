#pragma once
// One request of HttpClient from the call to its answer: the URL it is on now (redirects move it),
// what to send (sent again on a retry or a redirect), and the caller's promise. Pool loop only.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "weft/buffer/byte_buf.h"
#include "weft/client/response_body.h"
#include "weft/client/url.h"
#include "weft/codec/http1/client_codec.h"
#include "weft/core/clock.h"
#include "weft/core/event_loop.h"
#include "weft/core/future.h"

namespace weft::client::detail {

/// Calls add(name, value) for each "Name: value\r\n" line of a caller's header block (an exchange's
/// header_block), the value's leading spaces dropped; a line without ':' is skipped.
template <typename Add>
void for_each_header_line(std::string_view lines, Add&& add) {
  while (!lines.empty()) {
    const std::size_t end = lines.find("\r\n");
    const std::string_view line = lines.substr(0, end);
    lines.remove_prefix(end == std::string_view::npos ? lines.size() : end + 2);
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    add(line.substr(0, colon), value);
  }
}

class BodyStream;
class PooledConnection;
class RequestDeadlines;
class TunnelOpener;
class UploadStream;

// What an exchange's caller waits for: the response (whole, or an extended CONNECT's head), or a
// StreamedResponse (HttpClient::stream and upload), made when the head comes from it and the
// exchange's body stream. One promise either way: a streamed answer is not passed through a head's
// future first. Pool loop only (the promises deliver where their futures' loops are).
class ExchangeResult {
 public:
  explicit ExchangeResult(Promise<http::HttpClientResponse> whole) noexcept : promise_(std::move(whole)) {}
  explicit ExchangeResult(Promise<StreamedResponse> streamed) noexcept : promise_(std::move(streamed)) {}

  bool is_streamed() const noexcept { return promise_.index() == 1; }
  // The answer; a StreamedResponse takes `body` (null: an empty body) with it.
  void set_value(http::HttpClientResponse&& response, std::shared_ptr<BodyStream>& body) {
    if (auto* whole = std::get_if<0>(&promise_)) {
      whole->set_value(std::move(response));
    } else {
      std::get<1>(promise_).set_value(StreamedResponse{std::move(response), ResponseBody(std::move(body))});
    }
  }
  void set_error(std::exception_ptr error) {
    std::visit([&](auto& promise) { promise.set_error(std::move(error)); }, promise_);
  }
  template <class E>
  void fail(E&& error) {
    set_error(std::make_exception_ptr(std::forward<E>(error)));
  }

 private:
  std::variant<Promise<http::HttpClientResponse>, Promise<StreamedResponse>> promise_;
};

struct Exchange : std::enable_shared_from_this<Exchange> {
  Url url;
  std::string method;
  std::string header_block;  // the caller's header lines ("Name: value\r\n" each)
  ByteBuf body;              // kept whole: each attempt sends a slice of it
  ExchangeResult result;
  std::size_t redirects = 0;
  bool retried = false;            // a retry was spent
  bool fresh_only = false;         // the retry: only a connection that has served nothing takes it
  bool done = false;               // result completed (a timeout may have come first)
  bool queued = false;             // waiting in its pool's queue
  bool streamed = false;           // the answer is its head; the body is read from body_stream
  std::shared_ptr<BodyStream> body_stream;  // streamed: the body of the answer, once it came
  std::shared_ptr<UploadStream> upload;     // the request's body is written as it goes (never retried)
  std::shared_ptr<TunnelOpener> tunnel;     // an extended CONNECT (tunnel_opener.h): HTTP/2 only
  PooledConnection* on = nullptr;  // the connection carrying it, while one does
  std::uint64_t h2_call = 0;       // HTTP/2: its number on that connection (OriginConnection::abandon)
  std::optional<Duration> timeout;  // its own request timeout (HttpClientRequest::timeout), else the options'
  // Its request timeout: in the loop's RequestDeadlines (request_deadlines.h) while it runs.
  TimePoint deadline{};
  RequestDeadlines* deadlines = nullptr;
  Exchange* deadline_prev = nullptr;
  Exchange* deadline_next = nullptr;

  // `u`: a Url or a const Url&, copied or moved once, into place.
  template <class U, class P>
  Exchange(U&& u, std::string_view m, P&& r) : url(std::forward<U>(u)), method(m), result(std::forward<P>(r)) {
    streamed = result.is_streamed();
  }
  ~Exchange();
  Exchange(const Exchange&) = delete;
  Exchange& operator=(const Exchange&) = delete;

  // GET, HEAD, PUT, DELETE, OPTIONS (RFC 9110 9.2.2): safe to send again when no answer came.
  bool idempotent() const noexcept {
    const std::string_view m = method;  // compared as views: the length first
    return m == "GET" || m == "HEAD" || m == "PUT" || m == "DELETE" || m == "OPTIONS";
  }
  // The request as it goes on the wire now: the target from the URL, the caller's headers, the body.
  http::HttpClientRequest wire_request() const;
  // Its client closed under it: fails it with ClientClosedError (unless it is done), its request
  // timeout stopped. On `loop`, the pool's.
  void fail_closed(EventLoop& loop);
};

// A new exchange, its memory from the per-thread frame pool (one per request: no trip to the heap).
// `result`: a Promise<http::HttpClientResponse>, or a Promise<StreamedResponse> (streamed).
template <class U, class P>
std::shared_ptr<Exchange> make_exchange(U&& url, std::string_view method, P result) {
  return std::allocate_shared<Exchange>(weft::detail::FramePoolAllocator<Exchange>(), std::forward<U>(url), method,
                                        std::move(result));
}

}  // namespace weft::client::detail
