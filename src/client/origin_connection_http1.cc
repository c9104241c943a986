// OriginConnection over HTTP/1.1: one request at a time; the answer or the close reaches the pool.

#include <utility>

#include "exchange.h"
#include "http1_side.h"
#include "origin_connection.h"
#include "origin_pool.h"
#include "upload_stream.h"
#include "weft/client/client_errors.h"

namespace weft::client::detail {
namespace {

bool is_timeout(const std::exception_ptr& error) {
  if (!error) return false;
  try {
    std::rethrow_exception(error);
  } catch (const TimeoutError&) {
    return true;
  } catch (...) {
    return false;
  }
}

}  // namespace

void OriginConnection::install_http1(Channel& ch) {
  http::Limits limits;
  limits.max_body = options_.max_response_body;
  // This attempt's own: the connection takes it once its channel is known to be the one (attempt_ready).
  auto side =
      std::make_shared<Http1Side>(std::static_pointer_cast<OriginConnection>(shared_from_this()), options_.idle_timeout,
                                  std::string(origin_.scheme_name()) + "://" + origin_.authority());
  side->install(ch, limits, origin_.authority());
}

void OriginConnection::http1_ready(std::shared_ptr<Http1Side> side, ChannelPtr channel) {
  auto self = std::static_pointer_cast<OriginConnection>(shared_from_this());
  on_pool_loop([self, side = std::move(side), channel = std::move(channel)]() mutable {
    Early report;
    report.channel = std::move(channel);
    report.http1 = std::move(side);
    self->attempt_ready(std::move(report));
  });
}

void OriginConnection::http1_response(http::HttpClientResponse&& response) {
  if (pool_loop().in_loop()) {  // no task, and the response (a large value) moved once less
    http1_answered(std::move(response));
    return;
  }
  auto self = std::static_pointer_cast<OriginConnection>(shared_from_this());
  on_pool_loop([self, response = std::move(response)]() mutable { self->http1_answered(std::move(response)); });
}

void OriginConnection::http1_answered(http::HttpClientResponse&& response) {
  std::shared_ptr<Exchange> x = std::move(current_);
  if (x && x->streamed) {
    // The head: the connection stays the body's until it ends (http1_body_done) or closes.
    if (!response.keep_alive()) dead = true;
    if (upload_ && upload_->active() && response.status() >= 300) {
      // Answered before the body's end: the rest is not sent, and the connection not reused.
      dead = true;
      upload_->stop(std::make_exception_ptr(RequestBodyError(RequestBodyError::Kind::answered, x->url.to_string())));
    }
    if (auto p = pool()) {
      p->answered(*this, std::move(x), std::move(response));
    } else {
      x->fail_closed(pool_loop());
    }
    return;
  }
  in_flight = 0;
  ++served;
  idle_since = pool_loop().turn_time();
  if (!response.keep_alive()) {
    dead = true;  // the server closes it: never handed out again
    if (channel_) channel_->close();
  }
  auto p = pool();
  if (!x) return;
  if (!p) {
    x->fail_closed(pool_loop());
    return;
  }
  p->answered(*this, std::move(x), std::move(response));
}

void OriginConnection::http1_body_done() {
  auto self = std::static_pointer_cast<OriginConnection>(shared_from_this());
  on_pool_loop([self] {
    if (self->in_flight == 0) return;  // closed meanwhile
    if (auto upload = std::exchange(self->upload_, nullptr); upload && upload->active()) {
      // The answer ended before the body: the body stops, and the connection is not reused.
      self->dead = true;
      upload->stop(std::make_exception_ptr(RequestBodyError(RequestBodyError::Kind::answered, upload->url())));
    }
    self->in_flight = 0;
    ++self->served;
    self->idle_since = self->pool_loop().now();
    if (self->dead && self->channel_) self->channel_->close();
    if (auto p = self->pool()) p->released(*self);
  });
}

void OriginConnection::http1_closed(ChannelPtr channel, std::exception_ptr error, bool answer_started,
                                    bool never_sent) {
  auto self = std::static_pointer_cast<OriginConnection>(shared_from_this());
  on_pool_loop([self, channel = std::move(channel), error, answer_started, never_sent]() mutable {
    if (!self->reported_) {
      self->attempt_failed(std::move(channel), error);
      return;
    }
    if (channel != self->channel_) return;  // an attempt that lost (Happy Eyeballs closed it)
    self->dead = true;
    std::shared_ptr<Exchange> x = std::move(self->current_);
    self->upload_.reset();  // the request fails: its body stops with it
    self->in_flight = 0;
    auto p = self->pool();
    if (!p) {
      if (x) x->fail_closed(self->pool_loop());
      return;
    }
    p->connection_closed(*self);
    if (!x) return;
    std::exception_ptr failure = error;
    if (failure) {
      try {
        std::rethrow_exception(failure);
      } catch (const http::HttpProtocolError& e) {
        if (e.status() == 413) {
          failure =
              std::make_exception_ptr(ResponseTooLargeError(x->url.to_string(), self->options_.max_response_body));
        }
      } catch (...) {
      }
    } else {
      failure =
          std::make_exception_ptr(ChannelClosedError(never_sent ? "the connection closed before the request was sent"
                                                                : "the server closed the connection before answering"));
    }
    // Sent again: what never reached the socket (whatever the connection's error, unless its own
    // idle timeout), and an idempotent request whose keep-alive connection closed before a byte of
    // its answer (the server's idle close racing with our request).
    const bool retryable =
        never_sent ? !is_timeout(error) : !error && !answer_started && self->served > 0 && x->idempotent();
    p->failed(*self, std::move(x), failure, retryable);
  });
}

}  // namespace weft::client::detail
