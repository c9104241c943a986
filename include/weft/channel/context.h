#pragma once
// Context: a handler's place in a pipeline. Handlers use it to pass events on -- inbound events to
// the next handler (fire_*), outbound operations to the previous one -- and to reach the channel.
//
// Loop thread only. A context stays valid while its handler is in the pipeline; once removed, it
// stays usable until the pipeline call that removed it returns (so a handler may remove itself).

#include <any>
#include <exception>
#include <memory>
#include <string>
#include <type_traits>
#include <typeinfo>

#include "weft/channel/handler.h"
#include "weft/core/future.h"

namespace weft {

class Channel;
class Pipeline;
class EventLoop;
class ByteBufAllocator;

class Context {
 public:
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  Channel& channel() const noexcept;
  Pipeline& pipeline() const noexcept { return pipeline_; }
  EventLoop& loop() const noexcept;
  ByteBufAllocator& allocator() const noexcept;
  Handler& handler() const noexcept { return *handler_; }
  const std::string& name() const noexcept { return name_; }
  bool is_removed() const noexcept { return removed_; }

  // ---- inbound: to the next handler
  void fire_channel_active();
  void fire_channel_inactive();
  // Takes ownership: pass an rvalue. The message is handed over by address; nothing is copied.
  template <class T>
  void fire_read(T&& message) {
    static_assert(!std::is_lvalue_reference_v<T>, "fire_read takes ownership: pass std::move(message)");
    next_->invoke_read(MessageRef::of(message));
  }
  void fire_read_complete();
  void fire_user_event(const std::any& event);
  void fire_writability_changed();
  void fire_exception(std::exception_ptr error);

  // ---- outbound: to the previous handler
  // Takes ownership: pass an rvalue.
  template <class T>
  void write(T&& message) {
    static_assert(!std::is_lvalue_reference_v<T>, "write takes ownership: pass std::move(message)");
    prev_->invoke_write(MessageRef::of(message));
  }
  void flush();
  template <class T>
  void write_and_flush(T&& message) {
    write(std::forward<T>(message));
    flush();
  }
  // Requests one read batch (when auto-read is off).
  void read();
  Future<void> close();
  void close(Promise<void> promise);
  Future<void> bind(const SocketAddress& local);
  void bind(const SocketAddress& local, Promise<void> promise);
  Future<void> connect(const SocketAddress& remote);
  void connect(const SocketAddress& remote, Promise<void> promise);

  // For handlers that pass on messages of any type (AnyMessage): forward without knowing the type.
  void fire_read_erased(MessageRef message) { next_->invoke_read(message); }
  void write_erased(MessageRef message) { prev_->invoke_write(message); }

 private:
  friend class Pipeline;
  Context(Pipeline& pipeline, std::string name, Handler* handler, std::shared_ptr<Handler> owner);

  void invoke_read(MessageRef message);
  void invoke_write(MessageRef message);
  void handle_inbound_exception(std::exception_ptr error) noexcept;
  void handle_outbound_exception(std::exception_ptr error) noexcept;

  Pipeline& pipeline_;
  std::string name_;
  Handler* handler_;
  std::shared_ptr<Handler> owner_;  // null for the pipeline's own head and tail
  Context* prev_ = nullptr;
  Context* next_ = nullptr;
  MessageTypes types_;
  bool removed_ = false;
};

}  // namespace weft
