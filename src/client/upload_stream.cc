#include "upload_stream.h"

#include <stdexcept>
#include <utility>

#include "weft/client/client_errors.h"
#include "weft/client/request_body.h"
#include "weft/core/error.h"

namespace weft::client::detail {

Future<void> UploadStream::write(ByteBuf chunk) {
  Promise<void> promise(EventLoop::current());
  Future<void> future = promise.future();
  if (loop_.in_loop()) {
    write_on_loop(std::move(chunk), std::move(promise));
  } else if (!loop_.try_execute([self = shared_from_this(), chunk = std::move(chunk), promise]() mutable {
               self->write_on_loop(std::move(chunk), std::move(promise));
             })) {
    promise.fail(ChannelClosedError("the request body's connection has ended (its loop terminated)"));
  }
  return future;
}

Future<void> UploadStream::finish() {
  Promise<void> promise(EventLoop::current());
  Future<void> future = promise.future();
  if (loop_.in_loop()) {
    finish_on_loop(std::move(promise));
  } else if (!loop_.try_execute(
                 [self = shared_from_this(), promise]() mutable { self->finish_on_loop(std::move(promise)); })) {
    promise.fail(ChannelClosedError("the request body's connection has ended (its loop terminated)"));
  }
  return future;
}

void UploadStream::abandon() {
  // Always posted: an abandon from a write()'s listener may run inside the pool's own calls.
  loop_.try_execute([self = shared_from_this()] { self->abandon_on_loop(); });
}

void UploadStream::let_go(std::shared_ptr<UploadStream> stream) {
  EventLoop& loop = stream->loop_;
  loop.try_execute([stream = std::move(stream)]() mutable {
    stream->abandon_on_loop();
    stream.reset();
  });
}

bool UploadStream::claim(Promise<void>& promise) {
  if (error_) {
    promise.set_error(error_);
    return false;
  }
  if (waiting_) {
    promise.fail(std::logic_error("RequestBody: another write() or finish() is waiting"));
    return false;
  }
  if (finishing_) {
    promise.fail(std::logic_error("RequestBody: the body was finished"));
    return false;
  }
  return true;
}

void UploadStream::write_on_loop(ByteBuf chunk, Promise<void> promise) {
  if (!claim(promise)) return;
  const std::size_t n = chunk.readable_bytes();
  if (length_ && written_ + n > *length_) {
    fail_request(std::make_exception_ptr(RequestBodyError(RequestBodyError::Kind::too_long, url_)));
    promise.set_error(error_);
    return;
  }
  if (n == 0) {
    promise.set_value();
    return;
  }
  written_ += n;
  held_.emplace(std::move(chunk));
  waiting_.emplace(std::move(promise));
  pump();
}

void UploadStream::finish_on_loop(Promise<void> promise) {
  if (!claim(promise)) return;
  if (length_ && written_ < *length_) {
    fail_request(std::make_exception_ptr(RequestBodyError(RequestBodyError::Kind::too_short, url_)));
    promise.set_error(error_);
    return;
  }
  finishing_ = true;
  waiting_.emplace(std::move(promise));
  pump();
}

void UploadStream::abandon_on_loop() {
  if (finishing_ || error_) return;
  fail_request(std::make_exception_ptr(RequestBodyError(RequestBodyError::Kind::abandoned, url_)));
}

void UploadStream::attach(std::shared_ptr<UploadSink> sink) {
  if (error_) {
    sink->abort();  // abandoned while it waited for a connection
    return;
  }
  sink_ = std::move(sink);
  pump();
}

void UploadStream::pump() {
  if (!sink_ || pushing_ || error_ || ended_) return;
  if (held_) {
    pushing_ = true;
    ByteBuf chunk = std::move(*held_);
    held_.reset();
    sink_->push(std::move(chunk)).add_listener([self = shared_from_this()](const Future<void>& f) {
      self->pushed(f.error());
    });
    return;
  }
  if (finishing_) {
    ended_ = true;
    sink_->end();
    if (waiting_) std::exchange(waiting_, std::nullopt)->set_value();
  }
}

void UploadStream::pushed(std::exception_ptr error) {
  pushing_ = false;
  if (error_) return;  // stopped meanwhile: the waiting call failed then
  if (error) {
    try {
      std::rethrow_exception(error);
    } catch (const TimeoutError&) {
      fail_request(error);  // the sink's own verdict (HTTP/2: a window closed too long): the request ends with it
      return;
    } catch (...) {
    }
    stop(error);  // the request's own failure: it ends on its own path
    return;
  }
  if (waiting_ && !finishing_) std::exchange(waiting_, std::nullopt)->set_value();
  pump();
}

void UploadStream::stop(std::exception_ptr error) {
  if (error_ || ended_) return;
  error_ = std::move(error);
  held_.reset();
  if (waiting_) std::exchange(waiting_, std::nullopt)->set_error(error_);
  if (sink_) std::exchange(sink_, nullptr)->stopped();
}

void UploadStream::fail_request(std::exception_ptr error) {
  if (error_ || ended_) return;
  std::shared_ptr<UploadSink> sink = std::move(sink_);
  stop(error);
  // The request fails with the body's error first: closing the connection fails it otherwise.
  if (on_failure) std::exchange(on_failure, nullptr)(error);
  if (sink) sink->abort();
}

}  // namespace weft::client::detail

namespace weft::client {

RequestBody& RequestBody::operator=(RequestBody&& other) noexcept {
  if (this != &other) {
    if (stream_) detail::UploadStream::let_go(std::move(stream_));
    stream_ = std::move(other.stream_);
  }
  return *this;
}

RequestBody::~RequestBody() {
  if (stream_) detail::UploadStream::let_go(std::move(stream_));
}

Future<void> RequestBody::write(ByteBuf chunk) {
  if (!stream_) {
    return make_failed_future<void>(
        std::make_exception_ptr(std::logic_error("RequestBody::write: the handle holds no body")),
        EventLoop::current());
  }
  return stream_->write(std::move(chunk));
}

Future<void> RequestBody::finish() {
  if (!stream_) {
    return make_failed_future<void>(
        std::make_exception_ptr(std::logic_error("RequestBody::finish: the handle holds no body")),
        EventLoop::current());
  }
  return stream_->finish();
}

void RequestBody::abandon() {
  if (stream_) stream_->abandon();
}

}  // namespace weft::client
