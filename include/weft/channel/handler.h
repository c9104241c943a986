#pragma once
/// @file
/// Handlers: the units a pipeline is made of.
///
/// A handler sees inbound events (from the socket towards the application) and outbound operations
/// (from the application towards the socket). Every default implementation forwards to the next
/// handler, so a handler overrides only what it cares about.
///
/// Messages are typed. Derive from InboundHandler<In, Out>, OutboundHandler<In, Out> or
/// DuplexHandler<InIn, InOut, OutIn, OutOut>: the pipeline checks, when a handler is added, that
/// the type it takes is the type its neighbour emits, and reports both names if not. A message is
/// passed by address along the chain: passing it does not allocate or copy; a handler takes
/// ownership by moving from the rvalue it receives.
///
/// All methods run on the channel's event loop thread.
///
/// One pipeline at a time: a handler keeps per-channel state unless it says otherwise, so adding it
/// to a second pipeline (or twice to one) throws std::invalid_argument; once removed, it may be
/// added again. A handler without per-channel state overrides is_sharable() to return true (Netty's
/// `@Sharable`) and may then be in many pipelines at once, on several loops: its callbacks then run
/// concurrently and must be thread-safe.

#include <any>
#include <atomic>
#include <exception>
#include <string>
#include <typeinfo>

#include "weft/channel/message.h"
#include "weft/channel/socket_address.h"
#include "weft/core/future.h"

namespace weft {

class Context;

/// Marker for a handler that accepts any message type and forwards it unchanged (logging, metrics).
struct AnyMessage {};

/// The message types of a handler; null where it does not take part in that direction.
struct MessageTypes {
  /// The inbound messages the handler takes.
  const std::type_info* inbound_in = nullptr;
  /// The inbound messages it passes on (fire_read).
  const std::type_info* inbound_out = nullptr;
  /// The outbound messages it takes.
  const std::type_info* outbound_in = nullptr;
  /// The outbound messages it writes on.
  const std::type_info* outbound_out = nullptr;
};


/// The base of every handler: inbound event callbacks and outbound operations, each forwarding
/// to the neighbouring handler by default. Derive from InboundHandler, OutboundHandler or
/// DuplexHandler rather than from Handler itself. Its methods run on the channel's event loop
/// (or the executor the handler was added with).
class Handler {
 public:
  /// Destroys the handler (the pipeline holds it by shared_ptr).
  virtual ~Handler() = default;

  /// Called after the handler was added to a pipeline (default: nothing).
  virtual void handler_added(Context& /*ctx*/) {}
  /// Called before the handler is removed from its pipeline (default: nothing).
  virtual void handler_removed(Context& /*ctx*/) {}

  // ---- inbound events (default: forward to the next handler)
  /// The channel became active (connected, accepted, or bound).
  virtual void channel_active(Context& ctx);
  /// The channel was closed.
  virtual void channel_inactive(Context& ctx);
  /// The end of a batch of reads: the point to flush what the reads produced.
  virtual void channel_read_complete(Context& ctx);
  /// An event fired with Context::fire_user_event (for example IdleStateEvent).
  virtual void user_event(Context& ctx, const std::any& event);
  /// Channel::is_writable() changed: the outbound buffer crossed its high or low water mark.
  virtual void writability_changed(Context& ctx);
  /// An error raised by a handler or by I/O; one that reaches the end of the pipeline is logged.
  virtual void exception_caught(Context& ctx, std::exception_ptr error);

  // ---- outbound operations (default: forward to the previous handler)
  /// Binds the channel to `local`; `promise` completes when it is bound.
  virtual void bind(Context& ctx, const SocketAddress& local, Promise<void> promise);
  /// Connects the channel to `remote`; `promise` completes when it is connected.
  virtual void connect(Context& ctx, const SocketAddress& remote, Promise<void> promise);
  /// Sends what was written so far.
  virtual void flush(Context& ctx);
  /// Asks for more inbound data (when auto-read is off).
  virtual void read(Context& ctx);
  /// Closes the channel; `promise` completes when it is closed.
  virtual void close(Context& ctx, Promise<void> promise);

  // ---- type-erased message entry points; the typed bases below implement them
  /// An inbound message of any type (default: passes it on with Context::fire_read).
  virtual void read_message(Context& ctx, MessageRef message);
  /// An outbound message of any type (default: passes it on with Context::write).
  virtual void write_message(Context& ctx, MessageRef message);
  /// The message types the handler takes and emits, which the pipeline checks when it is added.
  virtual MessageTypes message_types() const noexcept { return {}; }

  /// Thread-safe. True: keeps no per-channel state and may be in many pipelines at once.
  virtual bool is_sharable() const noexcept { return false; }

 protected:
  /// Throws PipelineTypeError: `type` arrived where `expected` was declared.
  [[noreturn]] static void throw_type_mismatch(const Context& ctx, const char* direction,
                                               const std::type_info& expected, const std::type_info& type);

 private:
  friend class Pipeline;
  // Set while a pipeline holds this handler (when it is not sharable). A copy is in no pipeline.
  struct Membership {
    Membership() noexcept = default;
    Membership(const Membership&) noexcept {}
    Membership& operator=(const Membership&) noexcept { return *this; }
    std::atomic<bool> in_pipeline{false};
  };
  Membership membership_;
};

/// Takes inbound messages of type In and emits Out with ctx.fire_read(Out&&).
template <class In, class Out = In>
class InboundHandler : public Handler {
 public:
  /// The inbound message type the handler takes.
  using InboundIn = In;
  /// The inbound message type it passes on.
  using InboundOut = Out;

  /// An inbound message; move from it to keep it, or pass it on with ctx.fire_read().
  virtual void channel_read(Context& ctx, In&& message) = 0;

  /// Checks that the message is an In (PipelineTypeError otherwise) and calls channel_read().
  void read_message(Context& ctx, MessageRef message) final {
    if (!message.is<In>()) throw_type_mismatch(ctx, "inbound", typeid(In), message.type());
    channel_read(ctx, std::move(message.as<In>()));
  }
  /// In and Out, inbound.
  MessageTypes message_types() const noexcept override { return {&typeid(In), &typeid(Out), nullptr, nullptr}; }
};

/// Takes outbound messages of type In and writes Out with ctx.write(Out&&).
template <class In, class Out = In>
class OutboundHandler : public Handler {
 public:
  /// The outbound message type the handler takes.
  using OutboundIn = In;
  /// The outbound message type it writes on.
  using OutboundOut = Out;

  /// An outbound message; write it on with ctx.write() (as Out) or drop it.
  virtual void write(Context& ctx, In&& message) = 0;

  /// Checks that the message is an In (PipelineTypeError otherwise) and calls write().
  void write_message(Context& ctx, MessageRef message) final {
    if (!message.is<In>()) throw_type_mismatch(ctx, "outbound", typeid(In), message.type());
    write(ctx, std::move(message.as<In>()));
  }
  /// In and Out, outbound.
  MessageTypes message_types() const noexcept override { return {nullptr, nullptr, &typeid(In), &typeid(Out)}; }
};

/// Both directions: a codec (decoder InIn -> InOut, encoder OutIn -> OutOut).
template <class InIn, class InOut, class OutIn, class OutOut>
class DuplexHandler : public Handler {
 public:
  /// An inbound message (InIn); pass on InOut with ctx.fire_read().
  virtual void channel_read(Context& ctx, InIn&& message) = 0;
  /// An outbound message (OutIn); write on OutOut with ctx.write().
  virtual void write(Context& ctx, OutIn&& message) = 0;

  /// Checks that the message is an InIn (PipelineTypeError otherwise) and calls channel_read().
  void read_message(Context& ctx, MessageRef message) final {
    if (!message.is<InIn>()) throw_type_mismatch(ctx, "inbound", typeid(InIn), message.type());
    channel_read(ctx, std::move(message.as<InIn>()));
  }
  /// Checks that the message is an OutIn (PipelineTypeError otherwise) and calls write().
  void write_message(Context& ctx, MessageRef message) final {
    if (!message.is<OutIn>()) throw_type_mismatch(ctx, "outbound", typeid(OutIn), message.type());
    write(ctx, std::move(message.as<OutIn>()));
  }
  /// InIn and InOut inbound, OutIn and OutOut outbound.
  MessageTypes message_types() const noexcept override {
    return {&typeid(InIn), &typeid(InOut), &typeid(OutIn), &typeid(OutOut)};
  }
};

}  // namespace weft
