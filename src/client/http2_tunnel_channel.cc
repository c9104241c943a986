#include "http2_tunnel_channel.h"

#include <utility>

#include "weft/channel/events.h"
#include "weft/core/log.h"
#include "weft/core/spawn.h"

namespace weft::client::detail {

namespace {

// A stream shared by the channel and its coroutines, destroyed on `loop` (a ClientStream is loop
// thread only, and the channel's last reference may go elsewhere).
std::shared_ptr<http2::ClientStream> shared_on(EventLoop& loop, http2::ClientStream stream) {
  return {new http2::ClientStream(std::move(stream)), [&loop](http2::ClientStream* s) {
            if (loop.in_loop() || !loop.try_execute([s] { delete s; })) delete s;  // a terminated loop runs nothing
          }};
}

}  // namespace

struct Http2TunnelChannel::ReadWanted {
  Http2TunnelChannel* channel;
  bool await_ready() const noexcept { return channel->reading_ || !channel->is_open(); }
  void await_suspend(std::coroutine_handle<> h) noexcept { channel->read_waiter_ = h; }
  void await_resume() const noexcept {}
};

Http2TunnelChannel::Http2TunnelChannel(Channel& parent, http2::ClientStream stream)
    : Channel(parent.loop(), ChannelConfig{}, parent.allocator()),
      parent_(&parent),
      stream_(shared_on(parent.loop(), std::move(stream))),
      stream_id_(stream_->id()) {}

Http2TunnelChannel::~Http2TunnelChannel() = default;

void Http2TunnelChannel::start() {
  register_on_loop();
  activate(parent_->local_address(), parent_->remote_address());
  // What the pipeline wrote and flushed before the channel was active (an on_open's greeting) was
  // held: it leaves now.
  if (is_open() && outbound().has_flushed()) do_flush();
}

void Http2TunnelChannel::do_begin_read() {
  reading_ = true;
  if (!reader_running_) {
    reader_running_ = true;
    spawn_detached(loop(), read_loop(self()));
    return;
  }
  if (read_waiter_) wake_reader();
}

void Http2TunnelChannel::wake_reader() {
  if (wake_posted_) return;
  wake_posted_ = true;
  if (!loop().try_execute([self = self()] {
        self->wake_posted_ = false;
        if (self->read_waiter_ && (self->reading_ || !self->is_open())) std::exchange(self->read_waiter_, {}).resume();
      })) {
    // A terminated loop runs no task: a closed channel's reader ends here (it only lets go of it).
    wake_posted_ = false;
    if (!is_open() && read_waiter_) std::exchange(read_waiter_, {}).resume();
  }
}

Task<> Http2TunnelChannel::read_loop(std::shared_ptr<Http2TunnelChannel> self) {
  for (;;) {
    co_await ReadWanted{self.get()};
    if (!self->is_open()) break;
    std::optional<ByteBuf> chunk;
    std::exception_ptr error;
    try {
      chunk = co_await self->stream_->read();
    } catch (...) {
      error = std::current_exception();
    }
    if (!self->is_open()) break;
    if (error) {
      self->fail_and_close(std::move(error));  // the reset (ClientStreamError) or the connection's end
      break;
    }
    if (!chunk) {
      self->input_ended();
      break;
    }
    self->pipeline().fire_read(std::move(*chunk));
    if (!self->is_open()) break;
    self->pipeline().fire_read_complete();
    self->read_batch_done();
    if (!self->auto_read_or_requested()) self->reading_ = false;
  }
  self->reader_running_ = false;
}

void Http2TunnelChannel::input_ended() {
  input_ended_ = true;
  if (is_output_shutdown()) {  // both halves have ended: nothing follows
    close_now();
    return;
  }
  pipeline().fire_user_event(ChannelInputShutdownEvent{});
}

void Http2TunnelChannel::do_flush() {
  if (writer_running_ || !outbound().has_flushed()) return;
  writer_running_ = true;
  spawn_detached(loop(), write_loop(self()));
}

Task<> Http2TunnelChannel::write_loop(std::shared_ptr<Http2TunnelChannel> self) {
  while (self->is_open() && self->outbound().has_flushed()) {
    self->taken_.clear();
    self->outbound().retain_flushed(1, self->taken_);
    ByteBuf chunk = std::move(self->taken_.front());
    self->taken_.clear();
    const std::size_t n = chunk.readable_bytes();
    std::exception_ptr error;
    try {
      co_await self->stream_->write(std::move(chunk));  // waits while the windows hold the stream's bytes
    } catch (...) {
      error = std::current_exception();
    }
    if (!self->is_open()) break;
    if (error) {
      self->writer_running_ = false;
      self->fail_and_close(std::move(error));
      co_return;
    }
    self->on_bytes_written(n);  // (a shutdown_output waiting for these bytes ends the stream now)
  }
  self->writer_running_ = false;
}

void Http2TunnelChannel::do_shutdown_output(Promise<void> promise) {
  stream_->end();  // END_STREAM after what the stream has queued
  set_output_shutdown();
  promise.set_value();
  if (!is_open()) return;
  pipeline().fire_user_event(ChannelOutputShutdownEvent{});
  if (is_open() && input_ended_) close_now();
}

void Http2TunnelChannel::do_close() {
  if (input_ended_) {
    stream_->end();  // the server ended its half: ours ends after what was written, no reset
  } else {
    stream_->reset();  // RST_STREAM(CANCEL); the reader's and the writer's waits throw
  }
  if (read_waiter_) wake_reader();  // the reader sees the channel closed and lets go of it
}

}  // namespace weft::client::detail
