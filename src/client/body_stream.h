#pragma once
// The state behind a ResponseBody, on the loop of the connection that carries the body: the chunks
// fetched and not yet read, the reader's waiting promise, the end (trailers) or the failure, and
// the idle timer between body bytes. Its transports say how the body is fetched: Http1Body (the
// socket's reading suspended past kBodyBufferBound) and Http2Body (a stream read only as the
// reader asks). Loop thread only, except next() and cancel().

#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "weft/buffer/byte_buf.h"
#include "weft/channel/channel.h"
#include "weft/client/url.h"
#include "weft/codec/http1/client_codec.h"
#include "weft/codec/http2/client_stream.h"
#include "weft/codec/http2/stream_channel.h"
#include "weft/core/clock.h"
#include "weft/core/event_loop.h"
#include "weft/core/future.h"
#include "weft/core/task.h"
#include "weft/core/unique_function.h"

namespace weft::client::detail {

// The chunks fetched and not yet read, in order. The first waits inline: a typical answer is one
// chunk, and a body then costs no allocation for its queue; the rest wait in a deque made once a
// second chunk waits.
class ChunkQueue {
 public:
  bool empty() const noexcept { return !first_.has_value(); }  // rest_ holds chunks only behind first_
  void push(ByteBuf chunk) {
    if (!first_) {
      first_.emplace(std::move(chunk));
      return;
    }
    if (!rest_) rest_ = std::make_unique<std::deque<ByteBuf>>();
    rest_->push_back(std::move(chunk));
  }
  // The first chunk; not empty().
  ByteBuf pop() {
    ByteBuf out = std::move(*first_);
    if (rest_ && !rest_->empty()) {
      *first_ = std::move(rest_->front());
      rest_->pop_front();
    } else {
      first_.reset();
    }
    return out;
  }
  void clear() noexcept {
    first_.reset();
    if (rest_) rest_->clear();
  }

 private:
  std::optional<ByteBuf> first_;
  std::unique_ptr<std::deque<ByteBuf>> rest_;
};

class BodyStream : public std::enable_shared_from_this<BodyStream> {
 public:
  // On `loop` (the connection's); `idle` (zero: none) bounds the time without a body byte while
  // bytes are expected; `url` names the request in a TimeoutError (kept parsed: written out only
  // for the error, not for every request).
  BodyStream(EventLoop& loop, Duration idle, Url url) noexcept : loop_(loop), idle_(idle), url_(std::move(url)) {}
  virtual ~BodyStream() = default;
  BodyStream(const BodyStream&) = delete;
  BodyStream& operator=(const BodyStream&) = delete;

  // Thread-safe (see ResponseBody).
  Future<std::optional<ByteBuf>> next();
  void cancel();
  // Thread-safe. The last handle's end: cancels on the loop, where `stream` is then let go of (an
  // HTTP/2 stream must be destroyed there).
  static void let_go(std::shared_ptr<BodyStream> stream);
  const http2::Fields& trailers() const noexcept { return trailers_; }
  EventLoop& loop() const noexcept { return loop_; }

 protected:
  // For the transports, loop thread only.
  void deliver(ByteBuf chunk);
  void finish();
  void fail(std::exception_ptr error);
  // Whether body bytes are owed now (the idle timer runs while they are).
  void expect_bytes(bool owed);
  bool over() const noexcept { return ended_ || error_ != nullptr; }
  std::size_t buffered() const noexcept { return buffered_; }
  bool reader_waiting() const noexcept { return waiting_.has_value(); }
  http2::Fields trailers_;

  // A reader waits and nothing is buffered: fetch more (HTTP/2 reads its stream).
  virtual void demand() {}
  // `n` bytes were handed to the reader (HTTP/1.1 resumes its reading).
  virtual void consumed(std::size_t n) { (void)n; }
  // The reader let go (or the idle timeout fired) before the end: stop the transport.
  virtual void abort() = 0;

 private:
  void next_on_loop(Promise<std::optional<ByteBuf>> promise);
  void cancel_on_loop();
  void serve();  // completes the waiting reader when it can
  void arm_idle(Duration in);
  void idle_due();

  EventLoop& loop_;
  const Duration idle_;
  const Url url_;
  ChunkQueue chunks_;
  std::size_t buffered_ = 0;
  std::optional<Promise<std::optional<ByteBuf>>> waiting_;
  std::exception_ptr error_;
  bool ended_ = false;     // the whole body arrived (nullopt once the chunks are read)
  bool finished_ = false;  // the reader was given nullopt or the failure
  bool owed_ = false;
  TimePoint last_byte_{};
  std::optional<TimerId> idle_timer_;
};

// An HTTP/1.1 body, from the codec (http::ResponseBodySink): its socket's reading is suspended
// while more than kBodyBufferBound bytes wait for the reader. Ending lets the connection serve again
// (`on_end`); a reader letting go early closes the connection (its unread bytes would be taken for
// the next answer).
class Http1Body final : public BodyStream, public http::ResponseBodySink {
 public:
  Http1Body(const ChannelPtr& channel, Duration idle, Url url)
      : BodyStream(channel->loop(), idle, std::move(url)), channel_(channel) {}
  // Loop thread only: the head has come; the body is owed from now on.
  void start() { expect_bytes(true); }
  // Loop thread only: called once the body has ended whole (set before the request is written).
  UniqueFunction<void()> on_end;

  void body_data(ByteBuf bytes) override;
  void body_end(std::string_view trailer_block) override;
  void body_failed(std::exception_ptr error) override;

 private:
  void consumed(std::size_t n) override;
  void abort() override;
  void resume();

  std::weak_ptr<Channel> channel_;  // weak: the channel's codec holds this
  bool suspended_ = false;
};

// An HTTP/2 body: its stream is read only when the reader asks (so its window is returned only
// then); letting go early resets it (CANCEL).
class Http2Body final : public BodyStream {
 public:
  // `stream`: shared with the request's streamed body (UploadStream's sink), if any; destroyed on `loop`.
  Http2Body(EventLoop& loop, std::shared_ptr<http2::ClientStream> stream, Duration idle, Url url)
      : BodyStream(loop, idle, std::move(url)), stream_(std::move(stream)) {}

 private:
  void demand() override;
  void abort() override;
  static Task<> read_one(std::shared_ptr<Http2Body> self);

  std::shared_ptr<http2::ClientStream> stream_;
  bool reading_ = false;
};

}  // namespace weft::client::detail
