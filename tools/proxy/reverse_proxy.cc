#include "reverse_proxy.h"

#include <charconv>
#include <exception>
#include <stdexcept>
#include <string_view>
#include <utility>

#include "forwarded_headers.h"
#include "weft/client/url.h"
#include "weft/codec/http1/body_writer.h"
#include "weft/core/awaitables.h"
#include "weft/core/error.h"
#include "weft/core/log.h"

namespace weft::proxy {
namespace {

// A backend's answer whose body is at most this and came in one piece is answered whole, with
// Content-Length, rather than through a producer (the common small answer costs less).
constexpr std::uint64_t kWholeAnswerBound = 64u << 10;

client::ClientOptions client_options(const ProxyOptions& o) {
  client::ClientOptions c;
  c.max_connections_per_origin = o.max_connections_per_backend;
  c.max_pending_requests = 1u << 16;
  c.connect_timeout = o.connect_timeout;
  c.request_timeout = o.response_timeout;
  c.idle_timeout = o.idle_timeout;
  c.http2 = o.backend_http2;
  c.http2_prior_knowledge = o.backend_http2;
  c.insecure = o.insecure;
  return c;
}

// The body's declared length: Content-Length (HTTP/1.1's framing, or HTTP/2's field).
std::optional<std::uint64_t> declared_length(const http::ResponseHead& head) {
  if (head.content_length) return head.content_length;
  const std::optional<std::string_view> field = head.header("content-length");
  std::uint64_t n = 0;
  if (!field || std::from_chars(field->data(), field->data() + field->size(), n).ec != std::errc()) return std::nullopt;
  return n;
}

bool answer_has_body(std::string_view method, int status) {
  return method != "HEAD" && status >= 200 && status != 204 && status != 304;
}

// Whether `error` happened before the backend took the request (refused, unresolved, no
// connection in time): a request without a body may go to the next backend.
bool before_connection(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const IoError&) {
    return true;
  } catch (const client::HostResolutionError&) {
    return true;
  } catch (const client::TimeoutError& e) {
    return e.kind() == client::TimeoutError::Kind::connect;
  } catch (...) {
    return false;
  }
}

bool is_timeout(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const client::TimeoutError&) {
    return true;
  } catch (...) {
    return false;
  }
}

// The backend's body, and its first chunk when it was read already, piped into the client's.
struct Pipe {
  client::ResponseBody upstream;
  ByteBuf first;
  std::atomic<std::uint64_t>* failed_mid_body;
};

Task<void> pipe_body(std::shared_ptr<Pipe> pipe, http::BodyWriter& out) {
  if (pipe->first.readable_bytes() > 0) co_await out.write(std::move(pipe->first));
  for (;;) {
    std::optional<ByteBuf> chunk;
    try {
      chunk = co_await pipe->upstream.next();
    } catch (...) {
      // The backend failed mid-body: ending without finish() cuts the client's answer (a close, an
      // unfinished chunked body or a stream reset), never a short body taken for whole.
      pipe->failed_mid_body->fetch_add(1, std::memory_order_relaxed);
      throw;
    }
    if (!chunk) break;
    co_await out.write(std::move(*chunk));
  }
  co_await out.finish();
}

}  // namespace

ReverseProxy::ReverseProxy(EventLoopGroup& client_loops, ProxyOptions options)
    : options_(std::move(options)), client_(client_loops, client_options(options_)) {
  if (options_.backends.empty()) throw std::invalid_argument("weft-proxy: no backend");
  for (const std::string& text : options_.backends) {
    client::Url url = client::Url::parse(text);  // throws client::UrlError, an invalid_argument
    std::string prefix = url.path();
    while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
    backends_.push_back(Backend{std::move(url), std::move(prefix)});
  }
}

ReverseProxy::~ReverseProxy() = default;

void ReverseProxy::install(http::Router& router) {
  router.fallback([this](http::Request& request, http::BodyReader& body) -> Task<http::HttpResponse> {
    return forward(request, body);
  });
}

Future<void> ReverseProxy::close() { return client_.close(); }

ProxyStats ReverseProxy::stats() const noexcept {
  const auto get = [](const std::atomic<std::uint64_t>& c) { return c.load(std::memory_order_relaxed); };
  return {get(counters_.requests), get(counters_.bad_gateway), get(counters_.gateway_timeout),
          get(counters_.failed_mid_body), get(counters_.next_backend)};
}

http::HttpClientRequest ReverseProxy::backend_request(const http::Request& request, std::size_t backend) const {
  const http::HttpRequest& in = request.message();
  // Origin-form as it came; another form (absolute, HTTP/2's :path is origin-form) by its parts.
  const bool origin_form = !in.target().empty() && in.target().front() == '/';
  std::string target = backends_[backend].path_prefix;
  target.append(origin_form ? in.target() : in.path());
  if (!origin_form && !in.query().empty()) target.append("?").append(in.query());
  http::HttpClientRequest out(std::string(in.method()), std::move(target));
  const std::string ip = client_ip(request.channel().remote_address());
  const Origin origin{ip, options_.scheme_in, in.version() == http::Version::http2 ? "2 weft-proxy" : "1.1 weft-proxy"};
  forward_request_headers(in.head(), origin, out);
  return out;
}

http::HttpResponse ReverseProxy::error_answer(int status, std::string_view why) {
  (status == 504 ? counters_.gateway_timeout : counters_.bad_gateway).fetch_add(1, std::memory_order_relaxed);
  http::HttpResponse r(status);
  r.content_type("text/plain")
      .body(std::string(status == 504 ? "504 Gateway Timeout: " : "502 Bad Gateway: ") + std::string(why) + "\n");
  return r;
}

Task<client::StreamedResponse> ReverseProxy::send(const http::Request& request, http::BodyReader& body,
                                                  std::optional<ByteBuf> first, std::size_t backend) {
  http::HttpClientRequest out = backend_request(request, backend);
  if (!first) co_return co_await client_.stream(backends_[backend].origin, std::move(out));
  // A body: streamed to the backend as the client sends it. The head is owed within
  // response_timeout of the body's end, not of its start (a long upload is no timeout).
  out.timeout(Duration::zero());
  client::Upload up = client_.upload(backends_[backend].origin, std::move(out), body.content_length());
  ByteBuf chunk = std::move(*first);
  bool backend_stopped = false;
  for (;;) {
    try {
      co_await up.body.write(std::move(chunk));
    } catch (...) {
      backend_stopped = true;  // it answered early, or failed: its answer (or failure) tells
      break;
    }
    std::optional<ByteBuf> next = co_await body.next();  // the client failing ends the request here
    if (!next) break;
    chunk = std::move(*next);
  }
  if (!backend_stopped) {
    try {
      co_await up.body.finish();
    } catch (...) {
      // As above: the response says what happened.
    }
  }
  co_return co_await std::move(up.response);
}

Task<http::HttpResponse> ReverseProxy::forward(http::Request& request, http::BodyReader& body) {
  counters_.requests.fetch_add(1, std::memory_order_relaxed);
  // Whether a body comes: the first chunk, or its end (an HTTP/1.1 request without one ends at once).
  std::optional<ByteBuf> first = co_await body.next();
  const bool has_body = first.has_value();
  const std::size_t start = next_.fetch_add(1, std::memory_order_relaxed) % backends_.size();
  std::optional<client::StreamedResponse> answer;
  std::exception_ptr error;
  for (std::size_t attempt = 0; attempt < backends_.size(); ++attempt) {
    error = nullptr;
    try {
      answer.emplace(co_await send(request, body, std::move(first), (start + attempt) % backends_.size()));
      break;
    } catch (...) {
      error = std::current_exception();
    }
    // A request the backend never saw, without a body to replay, goes to the next backend.
    if (has_body || !before_connection(error)) break;
    if (attempt + 1 < backends_.size()) counters_.next_backend.fetch_add(1, std::memory_order_relaxed);
  }
  if (!answer) {
    log(LogLevel::debug, "weft-proxy: {} {}: {}", request.method(), request.path(), describe_exception(error));
    co_return error_answer(is_timeout(error) ? 504 : 502, describe_exception(error));
  }

  const http::ResponseHead& head = answer->head.head();
  http::HttpResponse response(head.status);
  forward_response_headers(head, head.version == http::Version::http2 ? "2 weft-proxy" : "1.1 weft-proxy", response);
  const std::optional<std::uint64_t> length = declared_length(head);
  if (!answer_has_body(request.method(), head.status)) {
    // No body follows (its end is read, so that the connection is reused); HEAD keeps its length.
    try {
      (void)co_await answer->body.next();
    } catch (...) {
      // A body where none belongs: the backend connection is dropped, the answer stands.
    }
    if (request.method() == "HEAD" && length) {
      response.stream([](http::BodyWriter&) -> Task<void> { co_return; }, length);
    }
    co_return response;
  }
  ByteBuf first_chunk;
  if (length && *length <= kWholeAnswerBound) {
    // Nothing is sent yet: a backend that fails here gets the client a 502.
    std::optional<ByteBuf> chunk;
    std::exception_ptr failed;
    try {
      chunk = co_await answer->body.next();
      if (chunk && chunk->readable_bytes() == *length && !co_await answer->body.next()) {
        co_return std::move(response.body(std::move(*chunk)));  // one piece, the whole body
      }
    } catch (...) {
      failed = std::current_exception();
    }
    if (failed) co_return error_answer(is_timeout(failed) ? 504 : 502, describe_exception(failed));
    if (!chunk) {
      if (*length == 0) co_return response;
      co_return error_answer(502, "the backend's body ended before its Content-Length");
    }
    first_chunk = std::move(*chunk);
  }
  auto pipe = std::make_shared<Pipe>(Pipe{std::move(answer->body), std::move(first_chunk), &counters_.failed_mid_body});
  response.stream([pipe](http::BodyWriter& out) { return pipe_body(pipe, out); }, length);
  co_return response;
}

}  // namespace weft::proxy
