#pragma once
// The two coroutines of a callback-form call (the main one: writes, finish or half-close, the end;
// the reader: reads), and how the reactor's requests wake them. A request made inside a reactor
// method wakes its coroutine once the method returned, from the coroutine that called it; one run
// by a loop task (a request made off the loop) wakes it at once; one made on the loop by other
// code (outside the reactor's methods) through the loop's task queue. So reactor methods never
// nest, and a call whose reactor answers from its methods takes no loop task. Loop thread only.
// A request that finds the loop terminated ends the call instead (run_request).

#include <memory>
#include <optional>
#include <utility>

#include "weft/core/event_loop.h"
#include "weft/core/future.h"
#include "weft/core/log.h"
#include "weft/core/loop_signal.h"
#include "weft/core/unique_function.h"

namespace weft::grpc::detail {

class ReactorWakes {
 public:
  explicit ReactorWakes(EventLoop& loop) noexcept : main(loop), reader(loop) {}

  LoopSignal main;    // the main coroutine parks here
  LoopSignal reader;  // the reader parks here

  void wake_main() { wake(main, main_pending_); }
  void wake_reader() { wake(reader, reader_pending_); }

  // Around a reactor method.
  void enter_method() noexcept { ++in_method_; }
  void leave_method() {
    if (--in_method_ > 0) return;
    if (main_pending_) {
      main_pending_ = false;
      main.resume_now();
    }
    if (reader_pending_) {
      reader_pending_ = false;
      reader.resume_now();
    }
  }

  // Runs `request` from a loop task: nothing of the call is on the stack.
  template <class F>
  void from_task(F&& request) {
    in_task_ = true;
    request();
    in_task_ = false;
  }

 private:
  void wake(LoopSignal& signal, bool& pending) {
    if (in_method_ > 0) {
      pending = true;
    } else if (in_task_) {
      signal.resume_now();
    } else {
      signal.notify();
    }
  }

  int in_method_ = 0;
  bool in_task_ = false;
  bool main_pending_ = false;
  bool reader_pending_ = false;
};

// What the server's and the client's call states share below: `loop`, `wakes`, `invoke(method)`,
// `end_without_loop()`, and the requests wanted / outstanding / ended.

// Whether the loop has run its last turn (its final drain is over): nothing of it will run the
// call again. Cheap while the loop runs; on the loop's thread false during the final drain.
inline bool loop_gone(EventLoop& loop) { return loop.is_terminated() && loop.termination_future().is_done(); }

// The call's loop has terminated or is in its final drain: once the drain is over (it may still
// end the call as usual), the call ends without the loop, State::end_without_loop(): on the
// terminating thread, or here when the drain is over already.
template <class State>
void end_after_the_loop(const std::shared_ptr<State>& state) {
  state->loop.termination_future().add_listener([state](const Future<void>&) { state->end_without_loop(); });
}

// Runs `request(state)` on the call's loop: now when called there, else from a loop task. A loop
// that has terminated takes no request: the call ends without it (end_after_the_loop), and the
// request fails with the call (on_read_done(nullopt), on_write_done(false)), never dropped.
template <class State, class F>
void run_request(const std::shared_ptr<State>& state, F request) {
  EventLoop& loop = state->loop;
  if (loop.in_loop()) {
    if (!loop_gone(loop)) {
      request(*state);
      return;
    }
  } else if (loop.try_execute(UniqueFunction<void()>([self = state, request = std::move(request)]() mutable {
               State& st = *self;
               st.wakes.from_task([&] { request(st); });
             }))) {
    return;
  }
  end_after_the_loop(state);
}

// Runs a reactor method where no loop is left to run it (end_without_loop): what it throws is logged.
template <class Reactor, class F>
void call_without_loop(Reactor& reactor, F method) noexcept {
  try {
    method(reactor);
  } catch (const std::exception& e) {
    log(LogLevel::warn, "grpc reactor threw after its loop terminated: {}", e.what());
  } catch (...) {
    log(LogLevel::warn, "grpc reactor threw after its loop terminated");
  }
}

// Fails what the reactor asked for after the call was over, until nothing is outstanding (a
// request made from these methods fails too, or throws: a read after nullopt).
template <class State>
void fail_remaining(State& st) {
  while (st.read_wanted || st.write_wanted) {
    if (st.write_wanted) {
      st.write_wanted.reset();
      st.write_outstanding.store(false);
      st.writes_ended.store(true);
      st.invoke([](auto& reactor) { reactor.on_write_done(false); });
    } else {
      st.read_wanted = false;
      st.read_outstanding.store(false);
      st.reads_ended.store(true);
      st.invoke([](auto& reactor) { reactor.on_read_done(std::nullopt); });
    }
  }
}

}  // namespace weft::grpc::detail
