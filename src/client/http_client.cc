#include "weft/client/http_client.h"

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

Future<http::HttpClientResponse> HttpClient::request(http::HttpClientRequest request) {
  try {
    Url url = Url::parse(request.target());
    return core_->start(std::move(url), request.method(), request.take_header_block(), std::move(request.owned_body()),
                        request.timeout());
  } catch (const UrlError&) {
    return make_failed_future<http::HttpClientResponse>(std::current_exception(), EventLoop::current());
  }
}

Future<http::HttpClientResponse> HttpClient::request(const Url& origin, http::HttpClientRequest request) {
  try {
    Url url = origin.with_target(request.target());
    return core_->start(std::move(url), request.method(), request.take_header_block(), std::move(request.owned_body()),
                        request.timeout());
  } catch (const UrlError&) {
    return make_failed_future<http::HttpClientResponse>(std::current_exception(), EventLoop::current());
  }
}

Future<StreamedResponse> HttpClient::stream(std::string_view method, std::string_view url, ByteBuf body) {
  try {
    return core_->stream(Url::parse(url), std::string(method), {}, std::move(body));
  } catch (const UrlError&) {
    return make_failed_future<StreamedResponse>(std::current_exception(), EventLoop::current());
  }
}

Future<StreamedResponse> HttpClient::stream(http::HttpClientRequest request) {
  try {
    Url url = Url::parse(request.target());
    return core_->stream(std::move(url), request.method(), request.take_header_block(), std::move(request.owned_body()),
                         request.timeout());
  } catch (const UrlError&) {
    return make_failed_future<StreamedResponse>(std::current_exception(), EventLoop::current());
  }
}

Future<StreamedResponse> HttpClient::stream(const Url& origin, http::HttpClientRequest request) {
  try {
    Url url = origin.with_target(request.target());
    return core_->stream(std::move(url), request.method(), request.take_header_block(), std::move(request.owned_body()),
                         request.timeout());
  } catch (const UrlError&) {
    return make_failed_future<StreamedResponse>(std::current_exception(), EventLoop::current());
  }
}

namespace {

Upload failed_upload(std::exception_ptr error) {
  return Upload{RequestBody(), make_failed_future<StreamedResponse>(std::move(error), EventLoop::current())};
}

}  // namespace

Upload HttpClient::upload(std::string_view method, std::string_view url, std::optional<std::uint64_t> content_length) {
  try {
    return core_->upload(Url::parse(url), std::string(method), {}, content_length);
  } catch (const UrlError&) {
    return failed_upload(std::current_exception());
  }
}

Upload HttpClient::upload(http::HttpClientRequest request, std::optional<std::uint64_t> content_length) {
  try {
    Url url = Url::parse(request.target());
    return core_->upload(std::move(url), request.method(), request.take_header_block(), content_length,
                         request.timeout());
  } catch (const UrlError&) {
    return failed_upload(std::current_exception());
  }
}

Upload HttpClient::upload(const Url& origin, http::HttpClientRequest request,
                          std::optional<std::uint64_t> content_length) {
  try {
    Url url = origin.with_target(request.target());
    return core_->upload(std::move(url), request.method(), request.take_header_block(), content_length,
                         request.timeout());
  } catch (const UrlError&) {
    return failed_upload(std::current_exception());
  }
}

Future<void> HttpClient::close() { return core_->close(); }

ClientStats HttpClient::stats() const noexcept { return core_->stats(); }

}  // namespace weft::client
