#pragma once
// The two coroutines of a callback-form call (the main one: writes, finish or half-close, the end;
// the reader: reads), and how the reactor's requests wake them. A request made inside a reactor
// method wakes its coroutine once the method returned, from the coroutine that called it; one run
// by a loop task (a request made off the loop) wakes it at once; one made on the loop by other
// code (outside the reactor's methods) through the loop's task queue. So reactor methods never
// nest, and a call whose reactor answers from its methods takes no loop task. Loop thread only.

#include "loop_signal.h"

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

}  // namespace weft::grpc::detail
