#pragma once
// io_uring-based IoDriver: one ring per loop, created on the loop thread (single issuer). Channels
// queue submissions through prepare(); poll() submits everything queued and waits for completions in
// one io_uring_enter, dispatches each completion to its IoUringOp, then ends the read batches of the
// channels that received data (one read-complete per channel per turn).

#include <liburing.h>

#include <atomic>
#include <cstdint>
#include <vector>

#include "weft/buffer/byte_buf.h"
#include "weft/channel/channel.h"
#include "weft/core/io_driver.h"
#include "weft/transport/io_uring.h"

namespace weft {

// One kind of operation of one owner (a channel's receive, its send...). Its address is the
// submission's user_data, so the owner must stay allocated until the operation's last completion
// (the one without IORING_CQE_F_MORE). Loop thread only.
class IoUringOp {
 public:
  virtual void on_completion(int result, unsigned flags) = 0;

 protected:
  ~IoUringOp() = default;
};

// Told once at the end of a poll's completions, when it asked during them. Loop thread only.
class IoUringBatchEnd {
 public:
  virtual void on_batch_end() = 0;

 protected:
  ~IoUringBatchEnd() = default;
};

class IoUringDriver final : public IoDriver {
 public:
  // Throws IoError when the wake-up eventfd cannot be made; the ring is made by attach().
  explicit IoUringDriver(const IoUringOptions& options);
  ~IoUringDriver() override;
  IoUringDriver(const IoUringDriver&) = delete;
  IoUringDriver& operator=(const IoUringDriver&) = delete;

  // The driver of `loop`. Throws weft::Error naming the loop when its group was not made by weft::io_uring().
  static IoUringDriver& of(EventLoop& loop);

  void attach(EventLoop& loop) override;
  void poll(Duration timeout) override;
  void wakeup() noexcept override;
  void drain() noexcept override;

  // Loop thread only. A cleared submission entry whose completions go to `op`; submitted by the next
  // poll (or earlier when the queue is full). Never null. Counts `op` in flight until its last completion.
  io_uring_sqe* prepare(IoUringOp& op);
  // Loop thread only. Makes room for `n` submission entries (submitting what is queued when there
  // is not), so that the next `n` prepare() calls form one chain when linked (IOSQE_IO_LINK).
  void reserve(unsigned n);
  // Loop thread only. Asks the kernel to cancel `op`; its completions still arrive (with -ECANCELED
  // when it had not finished).
  void cancel(IoUringOp& op);
  // Loop thread only. The provided buffer `id` that a receive filled with `length` bytes, as a pooled
  // ByteBuf of its own; a fresh buffer takes its place in the ring.
  ByteBuf take_buffer(unsigned id, std::size_t length);
  // Loop thread only. `listener->on_batch_end()` after this poll's completions; its owner keeps itself
  // allocated until then (an InFlightGuard does).
  void at_batch_end(IoUringBatchEnd* listener) { batch_ends_.push_back(listener); }

  // Loop thread only; for tests. The next `n` attempts to arm the wake-up read fail as a full
  // submission queue that cannot be submitted would.
  void fail_wake_arms_for_testing(int n) noexcept { failing_wake_arms_ = n; }
  // Loop thread only. Whether the wake-up read is armed (a failed re-arm is retried by every poll).
  bool wake_read_armed() const noexcept { return wake_armed_; }

  // Which path this loop's channels sent files by, in bytes of FileRegions that reached the socket:
  // through a channel's pipe (splice), or read into a buffer because no pipe could be made. Counted on
  // the loop thread; thread-safe to read (for tests and diagnostics).
  std::uint64_t file_bytes_spliced() const noexcept { return file_bytes_spliced_.load(std::memory_order_relaxed); }
  std::uint64_t file_bytes_read() const noexcept { return file_bytes_read_.load(std::memory_order_relaxed); }
  // Loop thread only.
  void count_file_bytes(std::size_t n, bool spliced) noexcept {
    auto& counter = spliced ? file_bytes_spliced_ : file_bytes_read_;
    counter.store(counter.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
  // Loop thread only; for tests. The next `n` pipes that channels of this loop make for files fail
  // as with EMFILE.
  void fail_pipes_for_testing(int n) noexcept { failing_pipes_ = n; }
  // Loop thread only. Whether the next pipe must fail (counts the injected failures down).
  bool pipe_must_fail() noexcept { return failing_pipes_ > 0 && failing_pipes_-- > 0; }
  // Loop thread only; for tests. The next `n` rounds of a file's splices that start with an empty
  // pipe first splice from it alone, which answers -EAGAIN as a splice into a full socket does.
  void eagain_splices_for_testing(int n) noexcept { eagain_splices_ = n; }
  // Loop thread only. Whether the next round must start so (counts the injected rounds down).
  bool splice_must_eagain() noexcept { return eagain_splices_ > 0 && eagain_splices_-- > 0; }

  static constexpr unsigned short kBufferGroup = 1;
  const IoUringOptions& options() const noexcept { return options_; }

 private:
  class WakeOp final : public IoUringOp {
   public:
    explicit WakeOp(IoUringDriver& driver) : driver_(driver) {}
    void on_completion(int result, unsigned flags) override;

   private:
    IoUringDriver& driver_;
  };

  void create_ring();
  void provide_buffers();
  void arm_wake_read();
  io_uring_sqe* next_sqe();
  void submit_and_wait(Duration timeout);
  void dispatch_completions();
  void end_batches();

  IoUringOptions options_;
  ::io_uring ring_{};
  bool ring_ready_ = false;
  int wake_fd_ = -1;
  std::uint64_t wake_value_ = 0;
  bool wake_armed_ = false;
  bool wake_arm_failing_ = false;  // logged once per streak of failed re-arms
  int failing_wake_arms_ = 0;
  int failing_pipes_ = 0;
  int eagain_splices_ = 0;
  std::atomic<std::uint64_t> file_bytes_spliced_{0};
  std::atomic<std::uint64_t> file_bytes_read_{0};
  WakeOp wake_op_{*this};
  io_uring_buf_ring* buffer_ring_ = nullptr;
  std::size_t buffer_ring_bytes_ = 0;
  unsigned buffer_mask_ = 0;
  std::vector<ByteBuf> buffers_;  // slot i is the pooled buffer behind provided buffer id i
  std::size_t in_flight_ = 0;     // operations whose last completion has not arrived
  std::vector<IoUringBatchEnd*> batch_ends_;
  std::vector<IoUringBatchEnd*> ending_;
};

}  // namespace weft

namespace weft {

// An IoUringOp that calls a member function of its owner.
template <class Owner, void (Owner::*Handler)(int, unsigned)>
class MemberOp final : public IoUringOp {
 public:
  explicit MemberOp(Owner& owner) noexcept : owner_(owner) {}
  void on_completion(int result, unsigned flags) override { (owner_.*Handler)(result, flags); }

 private:
  Owner& owner_;
};

// Keeps a channel allocated while the kernel may still complete one of its operations: the first
// started operation takes a reference, the last completion hands it back to the caller, who drops it
// once it is done with the channel. Loop thread only.
class InFlightGuard {
 public:
  void started(Channel& channel) {
    if (count_++ == 0) keep_ = channel.shared_from_this();
  }
  [[nodiscard]] ChannelPtr finished() noexcept { return --count_ == 0 ? std::move(keep_) : ChannelPtr(); }
  bool idle() const noexcept { return count_ == 0; }

 private:
  std::size_t count_ = 0;
  ChannelPtr keep_;
};

}  // namespace weft
