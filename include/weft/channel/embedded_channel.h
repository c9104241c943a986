#pragma once
/// @file
/// EmbeddedChannel: runs a pipeline without sockets, for tests of handlers and codecs.
///
///   weft::EmbeddedChannel ch;
///   ch.pipeline().add_last("decoder", std::make_shared<LineDecoder>(80));
///   ch.write_inbound(weft::ByteBuf::copy_of("hello\n"));
///   auto line = ch.read_inbound<std::string>();
///
/// It owns an event loop with a manual clock, driven by the thread that created the channel (which
/// counts as the loop thread): posted tasks run in run_pending(), timers in advance_time(). Messages
/// that reach the tail are queued for read_inbound(); messages that reach the head are queued for
/// read_outbound() once flushed; exceptions that reach the tail are kept for check_exception().
/// The channel is active from construction. Loop thread only. Do not call run_pending() or
/// advance_time() from inside a handler: removed contexts are freed by posted loop tasks, which would
/// then run under the handler's own call.

#include <deque>
#include <exception>
#include <optional>
#include <vector>

#include "weft/buffer/byte_buf_allocator.h"
#include "weft/channel/channel.h"
#include "weft/channel/message.h"

namespace weft {

namespace detail {
// Constructed before the Channel base, so that the channel can be given a loop.
struct EmbeddedLoopHolder {
  EmbeddedLoopHolder();
  EventLoop embedded_loop;
};
}  // namespace detail

/// A channel without a socket, for tests of handlers and codecs (see the file's description).
class EmbeddedChannel final : private detail::EmbeddedLoopHolder, public Channel {
 public:
  /// An active channel with `config`, on its own event loop driven by the calling thread; its
  /// handlers allocate from `allocator` (which must outlive the channel).
  explicit EmbeddedChannel(ChannelConfig config = {}, ByteBufAllocator& allocator = default_allocator());
  ~EmbeddedChannel() override;

  /// Fires `message` as a read and a read_complete, then runs pending tasks. Returns whether
  /// anything is waiting in the inbound queue.
  template <class T>
  bool write_inbound(T&& message) {
    static_assert(!std::is_lvalue_reference_v<T>, "write_inbound takes ownership: pass std::move(message)");
    pipeline().fire_read(std::move(message));
    pipeline().fire_read_complete();
    run_pending();
    return !inbound_.empty();
  }
  /// Writes `message` from the tail and flushes, then runs pending tasks. Returns whether anything
  /// is waiting in the outbound queue.
  template <class T>
  bool write_outbound(T&& message) {
    static_assert(!std::is_lvalue_reference_v<T>, "write_outbound takes ownership: pass std::move(message)");
    pipeline().write(std::move(message));
    pipeline().flush();
    run_pending();
    return !outbound_.empty();
  }
  /// The oldest message that reached the tail, if any. Throws std::logic_error if it is not a T.
  template <class T>
  std::optional<T> read_inbound() {
    return pop<T>(inbound_);
  }
  /// The oldest flushed message that reached the head, if any. Throws std::logic_error if not a T.
  template <class T>
  std::optional<T> read_outbound() {
    return pop<T>(outbound_);
  }
  /// Messages waiting for read_inbound().
  std::size_t inbound_count() const noexcept { return inbound_.size(); }
  /// Messages waiting for read_outbound().
  std::size_t outbound_count() const noexcept { return outbound_.size(); }

  /// Runs posted tasks and due timers.
  std::size_t run_pending() { return embedded_loop.run_pending(); }
  /// Moves the manual clock forward and runs what became due.
  void advance_time(Duration d) { embedded_loop.advance_time(d); }
  /// Rethrows (and forgets) the first exception that reached the tail, if any.
  void check_exception();
  /// Closes the channel and runs pending tasks. Returns whether messages are left in either queue.
  bool finish();

 protected:
  void do_register() override {}
  void do_begin_read() override {}
  void do_stop_read() override {}
  void do_flush() override;
  void do_close() override {}
  void do_write_message(MessageRef message) override { unflushed_.push_back(message.take()); }
  const std::type_info* inbound_message_type() const noexcept override { return nullptr; }
  const std::type_info* outbound_message_type() const noexcept override { return nullptr; }
  void on_unhandled_read(MessageRef message) override { inbound_.push_back(message.take()); }
  void on_unhandled_exception(std::exception_ptr error) override { exceptions_.push_back(std::move(error)); }

 private:
  template <class T>
  static std::optional<T> pop(std::deque<Message>& queue) {
    if (queue.empty()) return std::nullopt;
    T value = queue.front().take<T>();
    queue.pop_front();
    return value;
  }

  std::deque<Message> inbound_;
  std::deque<Message> outbound_;
  std::vector<Message> unflushed_;
  std::vector<std::exception_ptr> exceptions_;
};

}  // namespace weft
