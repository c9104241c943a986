#include "weft/grpc/unary_responder.h"

#include <utility>

#include "weft/core/awaitables.h"

namespace weft::grpc {

UnaryResponder& UnaryResponder::operator=(UnaryResponder&& other) noexcept {
  if (this != &other) {
    if (state_) complete(Outcome{std::nullopt, Status(StatusCode::internal, "the method did not respond")});
    state_ = std::move(other.state_);
  }
  return *this;
}

UnaryResponder::~UnaryResponder() {
  if (state_) complete(Outcome{std::nullopt, Status(StatusCode::internal, "the method did not respond")});
}

void UnaryResponder::respond(ByteBuf response) { complete(Outcome{std::move(response), Status()}); }

void UnaryResponder::fail(Status status) {
  if (status.ok()) status = Status(StatusCode::unknown, "a unary method failed with OK");
  complete(Outcome{std::nullopt, std::move(status)});
}

void UnaryResponder::complete(Outcome outcome) {
  if (!state_) return;
  std::shared_ptr<State> state = std::move(state_);
  state->complete(std::move(outcome));
}

void UnaryResponder::State::complete(Outcome outcome) {
  std::coroutine_handle<> waiter;
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (answered_) return;
    answered_ = true;
    outcome_.emplace(std::move(outcome));
    waiter = std::exchange(waiter_, {});
  }
  if (!waiter) return;
  // Resumed from a loop task: never inside the caller (which may be another call's handler). A loop
  // that has terminated hands the task back, and destroying it resumes the coroutine here with
  // cancelled_ set: its co_await throws EventLoopTerminatedError (ResumeTask's policy). Nothing
  // throws at the answering thread, nor out of ~UnaryResponder.
  UniqueFunction<void()> task(weft::detail::ResumeTask(waiter, &cancelled_));
  loop_.try_execute(std::move(task));
}

bool UnaryResponder::State::Awaiter::await_ready() const {
  const std::lock_guard<std::mutex> lock(state.mutex_);
  return state.answered_;
}

bool UnaryResponder::State::Awaiter::await_suspend(std::coroutine_handle<> h) {
  const std::lock_guard<std::mutex> lock(state.mutex_);
  if (state.answered_) return false;
  state.waiter_ = h;
  return true;
}

UnaryResponder::Outcome UnaryResponder::State::Awaiter::await_resume() {
  if (state.cancelled_) weft::detail::throw_loop_terminated("a unary call waiting for its responder");
  const std::lock_guard<std::mutex> lock(state.mutex_);
  return std::move(*state.outcome_);
}

}  // namespace weft::grpc
