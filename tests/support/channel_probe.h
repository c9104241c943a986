#pragma once
// Handlers for tests over real sockets:
//
// - ChannelProbe: records every inbound event of a channel (in order) into a ProbeState that test
//   threads can inspect, and forwards everything unchanged. Put it first in a pipeline.
// - ProbeRegistry: collects the ProbeStates of the channels a server accepts, in accept order.
// - BackpressureEcho: the echo handler of examples/echo (writes back, flushes per read batch, turns
//   auto-read off while the channel is unwritable).
// - PendingMeter: an outbound pass-through that records the largest write queue it saw.
//
// Handlers run on the channel's loop; ProbeState and ProbeRegistry are safe from any thread.

#include <algorithm>
#include <any>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <system_error>
#include <vector>

#include "weft/buffer/byte_buf.h"
#include "weft/channel/channel.h"
#include "weft/channel/context.h"
#include "weft/channel/events.h"
#include "weft/channel/handler.h"
#include "weft/core/error.h"
#include "weft/core/future.h"

namespace weft::test {

struct ProbeState {
  // Completed (from the loop) when the event first happens; wait on them from a test thread.
  Promise<void> active;
  Promise<void> inactive;
  Promise<void> exception;
  Promise<void> input_shutdown;

  std::vector<std::string> events() const {
    std::lock_guard lock(mutex);
    return events_;
  }
  std::string received() const {
    std::lock_guard lock(mutex);
    return received_;
  }
  std::exception_ptr first_error() const {
    std::lock_guard lock(mutex);
    return errors_.empty() ? nullptr : errors_.front();
  }
  // errno of the first error when it is a std::system_error (IoError), else 0.
  int first_error_code() const {
    auto error = first_error();
    if (!error) return 0;
    try {
      std::rethrow_exception(error);
    } catch (const std::system_error& e) {
      return e.code().value();
    } catch (...) {
      return 0;
    }
  }
  // The channel, while it is alive (null before channel_active or once it was torn down).
  ChannelPtr channel() const {
    std::lock_guard lock(mutex);
    return channel_.lock();
  }
  // Index of the first event equal to `name`, or -1.
  int index_of(const std::string& name) const {
    std::lock_guard lock(mutex);
    auto it = std::find(events_.begin(), events_.end(), name);
    return it == events_.end() ? -1 : static_cast<int>(it - events_.begin());
  }

  void record(std::string event) {
    std::lock_guard lock(mutex);
    events_.push_back(std::move(event));
  }
  void record_read(const ByteBuf& buf) {
    std::lock_guard lock(mutex);
    received_.append(reinterpret_cast<const char*>(buf.read_ptr()), buf.readable_bytes());
    if (events_.empty() || events_.back() != "read") events_.push_back("read");
  }
  void record_error(std::exception_ptr error) {
    std::lock_guard lock(mutex);
    errors_.push_back(std::move(error));
    events_.push_back("exception");
  }
  void set_channel(const ChannelPtr& channel) {
    std::lock_guard lock(mutex);
    channel_ = channel;
  }

 private:
  mutable std::mutex mutex;
  std::vector<std::string> events_;
  std::string received_;
  std::vector<std::exception_ptr> errors_;
  std::weak_ptr<Channel> channel_;
};

class ChannelProbe final : public InboundHandler<ByteBuf> {
 public:
  explicit ChannelProbe(std::shared_ptr<ProbeState> state) : state_(std::move(state)) {}

  void channel_active(Context& ctx) override {
    state_->set_channel(ctx.channel().shared_from_this());
    state_->record("active");
    state_->active.set_value();
    ctx.fire_channel_active();
  }
  void channel_inactive(Context& ctx) override {
    state_->record("inactive");
    state_->inactive.set_value();
    ctx.fire_channel_inactive();
  }
  void channel_read(Context& ctx, ByteBuf&& buf) override {
    state_->record_read(buf);
    ctx.fire_read(std::move(buf));
  }
  void channel_read_complete(Context& ctx) override { ctx.fire_read_complete(); }
  void user_event(Context& ctx, const std::any& event) override {
    if (std::any_cast<ChannelInputShutdownEvent>(&event) != nullptr) {
      state_->record("input_shutdown");
      state_->input_shutdown.set_value();
    } else if (std::any_cast<ChannelOutputShutdownEvent>(&event) != nullptr) {
      state_->record("output_shutdown");
    } else {
      state_->record("user_event");
    }
    ctx.fire_user_event(event);
  }
  void writability_changed(Context& ctx) override {
    state_->record(ctx.channel().is_writable() ? "writable" : "unwritable");
    ctx.fire_writability_changed();
  }
  void exception_caught(Context& ctx, std::exception_ptr error) override {
    state_->record_error(error);
    state_->exception.set_value();
    ctx.fire_exception(std::move(error));
  }

 private:
  std::shared_ptr<ProbeState> state_;
};

class ProbeRegistry {
 public:
  // Loop thread (from a child initializer). A new state, registered in accept order.
  std::shared_ptr<ProbeState> add() {
    auto state = std::make_shared<ProbeState>();
    {
      std::lock_guard lock(mutex_);
      states_.push_back(state);
    }
    cv_.notify_all();
    return state;
  }
  // Any thread. The index-th registered state, waiting up to `timeout` for it; null on timeout.
  std::shared_ptr<ProbeState> wait(std::size_t index, std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
    std::unique_lock lock(mutex_);
    if (!cv_.wait_for(lock, timeout, [&] { return states_.size() > index; })) return nullptr;
    return states_[index];
  }
  std::size_t size() const {
    std::lock_guard lock(mutex_);
    return states_.size();
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<std::shared_ptr<ProbeState>> states_;
};

class BackpressureEcho final : public InboundHandler<ByteBuf> {
 public:
  void channel_read(Context& ctx, ByteBuf&& buf) override { ctx.write(std::move(buf)); }
  void channel_read_complete(Context& ctx) override { ctx.flush(); }
  void writability_changed(Context& ctx) override {
    ctx.channel().set_auto_read(ctx.channel().is_writable());
    ctx.fire_writability_changed();
  }
  void exception_caught(Context& ctx, std::exception_ptr) override { ctx.close(); }
};

// Outbound pass-through: after each write, records the channel's pending write bytes.
class PendingMeter final : public OutboundHandler<ByteBuf> {
 public:
  void write(Context& ctx, ByteBuf&& buf) override {
    ctx.write(std::move(buf));
    std::size_t pending = ctx.channel().pending_write_bytes();
    std::size_t seen = max_pending.load(std::memory_order_relaxed);
    while (pending > seen && !max_pending.compare_exchange_weak(seen, pending, std::memory_order_relaxed)) {
    }
  }
  std::atomic<std::size_t> max_pending{0};
};

}  // namespace weft::test
