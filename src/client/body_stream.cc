#include "body_stream.h"

#include <stdexcept>
#include <utility>

#include "weft/client/client_errors.h"
#include "weft/client/response_body.h"
#include "weft/core/error.h"
#include "weft/core/spawn.h"

namespace weft::client::detail {

Future<std::optional<ByteBuf>> BodyStream::next() {
  Promise<std::optional<ByteBuf>> promise(EventLoop::current());
  Future<std::optional<ByteBuf>> future = promise.future();
  if (loop_.in_loop()) {
    next_on_loop(std::move(promise));
  } else if (!loop_.try_execute(
                 [self = shared_from_this(), promise]() mutable { self->next_on_loop(std::move(promise)); })) {
    promise.fail(ChannelClosedError("the response body's connection has ended (its loop terminated)"));
  }
  return future;
}

void BodyStream::cancel() {
  // Always posted: a cancel from a next() listener may run inside the codec's decoding.
  loop_.try_execute([self = shared_from_this()] { self->cancel_on_loop(); });
}

void BodyStream::let_go(std::shared_ptr<BodyStream> stream) {
  EventLoop& loop = stream->loop_;
  // Moved into the task, so that the loop's reference is the last one. A terminated loop drops the
  // task here: its connection is gone, and nothing runs there any more.
  loop.try_execute([stream = std::move(stream)]() mutable {
    stream->cancel_on_loop();
    stream.reset();
  });
}

void BodyStream::next_on_loop(Promise<std::optional<ByteBuf>> promise) {
  if (waiting_) {
    promise.fail(std::logic_error("ResponseBody::next: another next() is waiting"));
    return;
  }
  if (finished_) {
    if (error_) {
      promise.set_error(error_);
    } else {
      promise.set_value(std::nullopt);
    }
    return;
  }
  waiting_.emplace(std::move(promise));
  serve();
  if (waiting_ && chunks_.empty() && !over()) demand();
}

void BodyStream::cancel_on_loop() {
  if (finished_ || ended_ || error_) {
    chunks_.clear();
    buffered_ = 0;
    return;
  }
  fail(std::make_exception_ptr(ClientClosedError()));
  abort();
}

void BodyStream::serve() {
  if (!waiting_) return;
  Promise<std::optional<ByteBuf>> promise = std::move(*waiting_);
  if (error_) {
    waiting_.reset();
    finished_ = true;
    promise.set_error(error_);
    return;
  }
  if (!chunks_.empty()) {
    waiting_.reset();
    ByteBuf chunk = chunks_.pop();
    const std::size_t n = chunk.readable_bytes();
    buffered_ -= n;
    consumed(n);
    promise.set_value(std::optional<ByteBuf>(std::move(chunk)));
    return;
  }
  if (ended_) {
    waiting_.reset();
    finished_ = true;
    promise.set_value(std::nullopt);
    return;
  }
  *waiting_ = std::move(promise);
}

void BodyStream::deliver(ByteBuf chunk) {
  if (over() || !chunk.is_readable()) return;
  last_byte_ = loop_.now();
  buffered_ += chunk.readable_bytes();
  chunks_.push(std::move(chunk));
  serve();
}

void BodyStream::finish() {
  if (over()) return;
  ended_ = true;
  expect_bytes(false);
  serve();
}

void BodyStream::fail(std::exception_ptr error) {
  if (over()) return;
  error_ = std::move(error);
  expect_bytes(false);
  chunks_.clear();
  buffered_ = 0;
  serve();
}

void BodyStream::expect_bytes(bool owed) {
  owed_ = owed && !over();
  if (!owed_) {
    if (idle_timer_) loop_.cancel(*idle_timer_);
    idle_timer_.reset();
    return;
  }
  last_byte_ = loop_.now();  // the quiet time counts from when bytes are owed again
  if (idle_ > Duration::zero() && !idle_timer_) arm_idle(idle_);
}

void BodyStream::arm_idle(Duration in) {
  idle_timer_ = loop_.schedule(in, [self = shared_from_this()] {
    self->idle_timer_.reset();
    self->idle_due();
  });
}

void BodyStream::idle_due() {
  if (!owed_ || over()) return;
  const Duration quiet = loop_.now() - last_byte_;
  if (quiet < idle_) {
    arm_idle(idle_ - quiet);
    return;
  }
  fail(std::make_exception_ptr(TimeoutError(TimeoutError::Kind::idle, url_.to_string())));
  abort();
}

void Http1Body::body_data(ByteBuf bytes) {
  deliver(std::move(bytes));
  if (!suspended_ && buffered() > kBodyBufferBound) {
    if (ChannelPtr ch = channel_.lock()) {
      suspended_ = true;
      ch->suspend_reading();
    }
    expect_bytes(false);  // the reader is slow, not the server
  }
}

void Http1Body::consumed(std::size_t) {
  if (suspended_ && buffered() <= kBodyBufferBound / 2) {
    resume();
    expect_bytes(true);
  }
}

void Http1Body::resume() {
  if (!suspended_) return;
  suspended_ = false;
  if (ChannelPtr ch = channel_.lock()) ch->resume_reading();
}

void Http1Body::body_end(std::string_view trailer_block) {
  resume();                         // the connection reads its next answers
  while (!trailer_block.empty()) {  // checked by the codec: "Name: value\r\n" lines
    const std::size_t end = trailer_block.find("\r\n");
    const std::string_view line = trailer_block.substr(0, end);
    trailer_block.remove_prefix(end == std::string_view::npos ? trailer_block.size() : end + 2);
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
    while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
    trailers_.add_unchecked(line.substr(0, colon), value);
  }
  finish();
  if (on_end) std::exchange(on_end, nullptr)();
}

void Http1Body::body_failed(std::exception_ptr error) {
  resume();
  fail(std::move(error));
}

void Http1Body::abort() {
  on_end = nullptr;
  if (ChannelPtr ch = channel_.lock()) ch->close();  // never reused: its unread bytes would be read as the next answer
}

void Http2Body::demand() {
  if (reading_ || over()) return;
  reading_ = true;
  expect_bytes(true);
  spawn_detached(loop(), read_one(std::static_pointer_cast<Http2Body>(shared_from_this())));
}

Task<> Http2Body::read_one(std::shared_ptr<Http2Body> self) {
  try {
    for (;;) {
      std::optional<ByteBuf> chunk = co_await self->stream_->read();
      if (!chunk) {
        self->trailers_ = self->stream_->trailers();
        self->reading_ = false;
        self->finish();
        co_return;
      }
      if (!chunk->is_readable()) continue;  // an empty DATA frame
      self->reading_ = false;
      self->expect_bytes(false);
      self->deliver(std::move(*chunk));
      co_return;
    }
  } catch (...) {
    self->reading_ = false;
    self->fail(std::current_exception());
  }
}

void Http2Body::abort() { stream_->reset(); }

}  // namespace weft::client::detail

namespace weft::client {

ResponseBody& ResponseBody::operator=(ResponseBody&& other) noexcept {
  if (this != &other) {
    if (stream_) detail::BodyStream::let_go(std::move(stream_));
    stream_ = std::move(other.stream_);
  }
  return *this;
}

ResponseBody::~ResponseBody() {
  if (stream_) detail::BodyStream::let_go(std::move(stream_));
}

Future<std::optional<ByteBuf>> ResponseBody::next() {
  if (!stream_) {
    return make_failed_future<std::optional<ByteBuf>>(
        std::make_exception_ptr(std::logic_error("ResponseBody::next: the handle holds no body")),
        EventLoop::current());
  }
  return stream_->next();
}

void ResponseBody::cancel() {
  if (stream_) stream_->cancel();
}

const http2::Fields& ResponseBody::trailers() const noexcept {
  static const http2::Fields none;
  return stream_ ? stream_->trailers() : none;
}

}  // namespace weft::client
