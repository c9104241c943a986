#pragma once
// The IoDriver of a blocking loop: the loop serves at most one channel, whose blocking socket it
// waits on with poll(2) next to an eventfd.
//
// Why poll and an eventfd instead of a plain blocking recv(): a thread blocked in recv() can only be
// woken by data, a signal (process-wide, hostile to libraries) or by destroying the socket. Writes,
// closes and tasks posted from other threads must run promptly on the channel's thread, so it
// blocks in poll() on both the socket and the eventfd that wakeup() writes; the socket stays in
// blocking mode and recv/accept then return at once. Sends block in the kernel until it has taken
// every byte (the OIO model: the peer's pace is the writer thread's pace); a close or shutdown
// requested meanwhile shuts the socket down to make the send return (interrupt_blocking_call).

#include <poll.h>

#include <atomic>
#include <mutex>

#include "weft/core/io_driver.h"

namespace weft {

// Receives readiness of the one descriptor a blocking loop watches. Loop thread only.
class BlockingHandle {
 public:
  virtual void on_ready(short revents) = 0;

 protected:
  ~BlockingHandle() = default;
};

class BlockingDriver final : public IoDriver {
 public:
  BlockingDriver();
  ~BlockingDriver() override;
  BlockingDriver(const BlockingDriver&) = delete;
  BlockingDriver& operator=(const BlockingDriver&) = delete;

  void poll(Duration timeout) override;
  void wakeup() noexcept override;
  void interrupt_blocking_call(const void* owner) noexcept override;
  // A send in progress is left to return by itself (within its slice, kSendSlice); an accept or a
  // connect is interrupted.
  void interrupt_for_shutdown(Duration timeout) noexcept override;
  void attach(EventLoop& loop) override { loop_ = &loop; }

  // Thread-safe. Reserves a free loop for a channel about to be made on it (Transport::choose_loop).
  bool try_reserve() noexcept;
  // Thread-safe. A new channel takes the loop, reserved or free; false when another channel has it.
  bool try_own() noexcept;
  // Thread-safe. The owning channel is done with the loop: another channel may take it.
  void release() noexcept;

  // Loop thread only. Waits for `events` on `fd` for `handle` (events 0: does not poll `fd` at all,
  // since poll() reports a hang-up even when nothing was asked for).
  void watch(int fd, short events, BlockingHandle* handle) noexcept;
  void unwatch() noexcept;

  // Loop thread only. Brackets a blocking system call on `fd` made for channel `owner`, so that
  // interrupt_blocking_call() can make it return by shutting the socket down. end_blocking_call()
  // returns true once the owner's socket was shut down that way. While the loop shuts down
  // gracefully, sends go on (a GOAWAY, the answers in flight: the channel stops at the shutdown's
  // deadline), and any other call fails at once.
  // `send`: a send, which a graceful shutdown bounds; any other call (accept, connect) fails at once
  // while the loop shuts down.
  void begin_blocking_call(int fd, const void* owner, bool send = false) noexcept;
  bool end_blocking_call() noexcept;

 private:
  static constexpr int kFree = 0, kReserved = 1, kOwned = 2;

  int event_fd_;
  int watched_fd_ = -1;
  short watched_events_ = 0;
  BlockingHandle* handle_ = nullptr;
  std::atomic<int> state_{kFree};

  std::mutex call_mutex_;  // orders an interrupting shutdown() before the owner closes the descriptor
  int call_fd_ = -1;
  const void* call_owner_ = nullptr;
  const void* closing_owner_ = nullptr;  // close() asked from another thread, until the next owner
  bool interrupted_ = false;             // until the next owner
  bool call_is_send_ = false;
  const EventLoop* loop_ = nullptr;      // set by attach() before the first poll
};

}  // namespace weft
