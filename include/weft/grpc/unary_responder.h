#pragma once
/// @file
/// grpc::UnaryResponder: the callback form of a unary method (ServiceRegistry::add_unary_callback).
/// The callback gets the request and a responder, and answers through it once -- at once, or later
/// from any thread (after work handed to an executor, say):
///
///   services.add_unary_callback("/pkg.Echo/Say", [](weft::grpc::ServerCall&, weft::ByteBuf request,
///                                                   weft::grpc::UnaryResponder responder) {
///     responder.respond(std::move(request));
///   });

#include <coroutine>
#include <memory>
#include <mutex>
#include <optional>

#include "weft/buffer/byte_buf.h"
#include "weft/grpc/status.h"
#include "weft/core/event_loop.h"

namespace weft::grpc {

/// Answers one unary call (see the file's description). Move-only; dropped without an answer it
/// fails the call with INTERNAL ("the method did not respond"). It must not outlive the event loop
/// group of its call (it answers through that loop). Answered or dropped after that loop terminated
/// (an executor still holding it at shutdown), it throws nothing: the call's coroutine ends with
/// EventLoopTerminatedError.
class UnaryResponder {
 public:
  /// What the call's coroutine awaits: the response message, or the status it fails with.
  struct Outcome {
    std::optional<ByteBuf> response;  ///< the response message (none: the call failed)
    Status status;                    ///< OK with a response, else why the call failed
  };
  /// The state shared by the responder and the call's coroutine (an implementation detail).
  class State;

  /// Loop thread only (made by the registry). Answers the call whose coroutine waits in `state`.
  explicit UnaryResponder(std::shared_ptr<State> state) noexcept : state_(std::move(state)) {}
  /// Thread-safe as the responder it moves from is not used meanwhile. Takes over the call.
  UnaryResponder(UnaryResponder&&) noexcept = default;
  /// As the move constructor; a call this responder held and did not answer fails INTERNAL.
  UnaryResponder& operator=(UnaryResponder&& other) noexcept;
  UnaryResponder(const UnaryResponder&) = delete;
  UnaryResponder& operator=(const UnaryResponder&) = delete;
  /// Thread-safe. Fails the call with INTERNAL when it was not answered.
  ~UnaryResponder();

  /// Thread-safe; the first answer counts. The response message: the call ends OK after it.
  void respond(ByteBuf response);
  /// Thread-safe; the first answer counts. Ends the call with `status` (not OK), no message.
  void fail(Status status);

 private:
  void complete(Outcome outcome);
  std::shared_ptr<State> state_;
};

/// The state shared by a UnaryResponder and the coroutine of its call (loop of the call). Its
/// methods are thread-safe.
class UnaryResponder::State {
 public:
  /// For the call on `loop`.
  explicit State(EventLoop& loop) noexcept : loop_(loop) {}

  /// Thread-safe; never throws. Stores the first outcome and resumes the waiting coroutine on the
  /// loop; when the loop has terminated, here, and its co_await throws EventLoopTerminatedError.
  void complete(Outcome outcome);

  /// What the call's coroutine awaits (loop thread only).
  struct Awaiter {
    State& state;                                   ///< the state awaited
    /// Whether the outcome is there already.
    bool await_ready() const;
    /// Parks the coroutine; false when the outcome came meanwhile.
    bool await_suspend(std::coroutine_handle<> h);
    /// The outcome; EventLoopTerminatedError when the loop terminated before it came.
    Outcome await_resume();
  };
  /// Loop thread only. co_await: the outcome, once there.
  Awaiter wait() noexcept { return Awaiter{*this}; }

 private:
  EventLoop& loop_;
  std::mutex mutex_;
  std::optional<Outcome> outcome_;
  std::coroutine_handle<> waiter_;
  bool answered_ = false;
  bool cancelled_ = false;  // set (before the resume) when the loop had terminated
};

}  // namespace weft::grpc
