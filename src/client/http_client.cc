#include "weft/client/http_client.h"

#include <string>
#include <utility>

#include "client_core.h"

namespace weft::client {

HttpClient::HttpClient(EventLoopGroup& group, ClientOptions options)
    : core_(std::make_shared<detail::ClientCore>(group, std::move(options))) {}

HttpClient::~HttpClient() {
  Future<void> closed = core_->close();
  // Off the loops, wait: the pools' connections hold channels of the group's loops, which must not
  // be closed after the group has gone. (On a loop, blocking it is worse; its own pools closed inline.)
  if (EventLoop::current() == nullptr) closed.wait();
}

namespace {

// Where a request object goes: its absolute target, or its origin-form target on `origin`. Throws
// UrlError.
Url url_of(const http::HttpClientRequest& request, const Url* origin) {
  return origin != nullptr ? origin->with_target(request.target()) : Url::parse(request.target());
}

Upload failed_upload(std::exception_ptr error) {
  return Upload{RequestBody(), make_failed_future<StreamedResponse>(std::move(error), EventLoop::current())};
}

// The request-object forms of request(), stream() and upload(): its header lines (`lines`, taken
// from it by HttpClient, its friend) and body move into the request's exchange.
Future<http::HttpClientResponse> start_request(detail::ClientCore& core, const Url* origin,
                                               http::HttpClientRequest& request, std::string lines) {
  try {
    Url url = url_of(request, origin);
    return core.start(std::move(url), request.method(), std::move(lines), std::move(request.owned_body()),
                      request.timeout());
  } catch (const UrlError&) {
    return make_failed_future<http::HttpClientResponse>(std::current_exception(), EventLoop::current());
  }
}

Future<StreamedResponse> stream_request(detail::ClientCore& core, const Url* origin, http::HttpClientRequest& request,
                                        std::string lines) {
  try {
    Url url = url_of(request, origin);
    return core.stream(std::move(url), request.method(), std::move(lines), std::move(request.owned_body()),
                       request.timeout());
  } catch (const UrlError&) {
    return make_failed_future<StreamedResponse>(std::current_exception(), EventLoop::current());
  }
}

Upload upload_request(detail::ClientCore& core, const Url* origin, http::HttpClientRequest& request, std::string lines,
                      std::optional<std::uint64_t> content_length) {
  try {
    Url url = url_of(request, origin);
    return core.upload(std::move(url), request.method(), std::move(lines), content_length, request.timeout());
  } catch (const UrlError&) {
    return failed_upload(std::current_exception());
  }
}

}  // namespace

Future<http::HttpClientResponse> HttpClient::request(http::HttpClientRequest request) {
  return start_request(*core_, nullptr, request, request.take_header_block());
}

Future<http::HttpClientResponse> HttpClient::request(const Url& origin, http::HttpClientRequest request) {
  return start_request(*core_, &origin, request, request.take_header_block());
}

Future<StreamedResponse> HttpClient::stream(http::HttpClientRequest request) {
  return stream_request(*core_, nullptr, request, request.take_header_block());
}

Future<StreamedResponse> HttpClient::stream(const Url& origin, http::HttpClientRequest request) {
  return stream_request(*core_, &origin, request, request.take_header_block());
}

Upload HttpClient::upload(http::HttpClientRequest request, std::optional<std::uint64_t> content_length) {
  return upload_request(*core_, nullptr, request, request.take_header_block(), content_length);
}

Upload HttpClient::upload(const Url& origin, http::HttpClientRequest request,
                          std::optional<std::uint64_t> content_length) {
  return upload_request(*core_, &origin, request, request.take_header_block(), content_length);
}

Future<http::HttpClientResponse> HttpClient::request(std::string_view method, std::string_view url, ByteBuf body) {
  try {
    return core_->start(Url::parse(url), method, {}, std::move(body));
  } catch (const UrlError&) {
    return make_failed_future<http::HttpClientResponse>(std::current_exception(), EventLoop::current());
  }
}

Future<http::HttpClientResponse> HttpClient::request(std::string_view method, const Url& url, ByteBuf body) {
  return core_->start(url, method, {}, std::move(body));
}

Future<StreamedResponse> HttpClient::stream(std::string_view method, std::string_view url, ByteBuf body) {
  try {
    return core_->stream(Url::parse(url), std::string(method), {}, std::move(body));
  } catch (const UrlError&) {
    return make_failed_future<StreamedResponse>(std::current_exception(), EventLoop::current());
  }
}

Upload HttpClient::upload(std::string_view method, std::string_view url, std::optional<std::uint64_t> content_length) {
  try {
    return core_->upload(Url::parse(url), std::string(method), {}, content_length);
  } catch (const UrlError&) {
    return failed_upload(std::current_exception());
  }
}

Future<void> HttpClient::close() { return core_->close(); }

ClientStats HttpClient::stats() const noexcept { return core_->stats(); }

}  // namespace weft::client
