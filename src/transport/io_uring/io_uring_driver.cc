#include "io_uring_driver.h"

#include <fmt/format.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <exception>
#include <thread>
#include <utility>

#include "weft/buffer/pooled_byte_buf_allocator.h"
#include "weft/core/error.h"
#include "weft/core/event_loop.h"
#include "weft/core/log.h"
#include "weft/core/stall_watch.h"

namespace weft {
namespace {

constexpr unsigned kMaxCompletionsPerPeek = 256;
constexpr auto kDrainLimit = std::chrono::seconds(2);
// While the wake-up read is not armed, other threads' posts are noticed only by a poll that ends on
// its own: polls wait at most this long and retry the arming.
constexpr Duration kUnarmedPollLimit = std::chrono::milliseconds(1);

}  // namespace

IoUringDriver::IoUringDriver(const IoUringOptions& options) : options_(options) {
  // Blocking on purpose: io_uring completes a read of a non-blocking eventfd at once with -EAGAIN.
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC);
  if (wake_fd_ < 0) throw IoError(errno, "eventfd");
  try {
    // On a thread of its own: the kernel notifies every task that touched a ring when the ring goes
    // away, and that notification makes a blocking call with a timeout fail with EINTR. The caller's
    // thread (the application's) must not be one of them; the loop thread, which submits, is.
    std::exception_ptr failure;
    std::thread setup([&] {
      try {
        create_ring();
        provide_buffers();
      } catch (...) {
        failure = std::current_exception();
      }
    });
    setup.join();
    if (failure) std::rethrow_exception(failure);
  } catch (...) {
    if (ring_ready_) io_uring_queue_exit(&ring_);
    if (buffer_ring_ != nullptr) ::munmap(buffer_ring_, buffer_ring_bytes_);
    ::close(wake_fd_);
    throw;
  }
}

IoUringDriver::~IoUringDriver() {
  // Exiting the ring cancels whatever drain() could not finish; the kernel no longer writes into the
  // provided buffers once the ring is gone, so they are released after it.
  if (ring_ready_) io_uring_queue_exit(&ring_);
  if (buffer_ring_ != nullptr) ::munmap(buffer_ring_, buffer_ring_bytes_);
  buffers_.clear();
  ::close(wake_fd_);
}

void IoUringDriver::create_ring() {
  // Created disabled and enabled by attach() on the loop thread: a single-issuer ring belongs to the
  // thread that enables it, and a group makes its drivers on the caller's thread.
  unsigned flags = IORING_SETUP_R_DISABLED | IORING_SETUP_CQSIZE | IORING_SETUP_SUBMIT_ALL;
  if (options_.single_issuer) flags |= IORING_SETUP_SINGLE_ISSUER;
  if (options_.single_issuer && options_.defer_taskrun) {
    flags |= IORING_SETUP_DEFER_TASKRUN;
  } else {
    flags |= IORING_SETUP_COOP_TASKRUN;
  }
  for (;;) {
    io_uring_params params{};
    params.flags = flags;
    params.cq_entries = std::max(options_.completion_entries, options_.submission_entries);
    int rc = io_uring_queue_init_params(options_.submission_entries, &ring_, &params);
    if (rc == 0) break;
    const unsigned optional = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_COOP_TASKRUN;
    if (rc == -EINVAL && (flags & optional) != 0) {
      // An older kernel: run without the optional flags rather than not at all.
      log(LogLevel::warn, "io_uring: the kernel refused single-issuer/deferred task running; running without");
      flags &= ~optional;
      continue;
    }
    throw IoError(-rc, "io_uring_queue_init");
  }
  ring_ready_ = true;
}

void IoUringDriver::provide_buffers() {
  const unsigned count = options_.buffer_count;
  buffer_ring_bytes_ = count * sizeof(io_uring_buf);
  void* mapping = ::mmap(nullptr, buffer_ring_bytes_, PROT_READ | PROT_WRITE, MAP_ANONYMOUS | MAP_PRIVATE, -1, 0);
  if (mapping == MAP_FAILED) throw IoError(errno, "mmap(io_uring buffer ring)");
  buffer_ring_ = static_cast<io_uring_buf_ring*>(mapping);
  io_uring_buf_reg reg{};
  reg.ring_addr = reinterpret_cast<std::uintptr_t>(buffer_ring_);
  reg.ring_entries = count;
  reg.bgid = kBufferGroup;
  int rc = io_uring_register_buf_ring(&ring_, &reg, 0);
  if (rc < 0) throw IoError(-rc, "io_uring_register_buf_ring");
  io_uring_buf_ring_init(buffer_ring_);
  buffer_mask_ = static_cast<unsigned>(io_uring_buf_ring_mask(count));
  buffers_.reserve(count);
  for (unsigned id = 0; id < count; ++id) {
    buffers_.push_back(pooled_allocator().buffer(options_.buffer_size, options_.buffer_size));
    io_uring_buf_ring_add(buffer_ring_, buffers_.back().write_ptr(), static_cast<unsigned>(options_.buffer_size),
                          static_cast<unsigned short>(id), static_cast<int>(buffer_mask_), static_cast<int>(id));
  }
  io_uring_buf_ring_advance(buffer_ring_, static_cast<int>(count));
}

IoUringDriver& IoUringDriver::of(EventLoop& loop) {
  auto* driver = dynamic_cast<IoUringDriver*>(&loop.driver());
  if (driver == nullptr) {
    throw Error(fmt::format("an io_uring channel cannot run on loop '{}': its group was not made by weft::io_uring()",
                            loop.name()));
  }
  return *driver;
}

void IoUringDriver::attach(EventLoop& /*loop*/) {
  // liburing 2.3 declares io_uring_enable_rings but does not export it.
  int rc = io_uring_register(static_cast<unsigned>(ring_.ring_fd), IORING_REGISTER_ENABLE_RINGS, nullptr, 0);
  if (rc < 0) {
    log(LogLevel::error, "io_uring: enabling the ring failed: errno {}", -rc);
    std::abort();  // the group was made, so the probe said yes: nothing sane is left to do
  }
  // Enter by registered index instead of descriptor: spares the kernel a file lookup per io_uring_enter.
  if (int r = io_uring_register_ring_fd(&ring_); r < 0) {
    log(LogLevel::debug, "io_uring: registering the ring's descriptor failed (errno {}); entering by descriptor", -r);
  }
  arm_wake_read();
}

void IoUringDriver::arm_wake_read() {
  if (failing_wake_arms_ > 0) [[unlikely]] {
    --failing_wake_arms_;
    throw IoError(EBUSY, "io_uring_submit (injected by a test)");
  }
  io_uring_sqe* sqe = next_sqe();
  io_uring_prep_read(sqe, wake_fd_, &wake_value_, sizeof wake_value_, 0);
  io_uring_sqe_set_data(sqe, &wake_op_);  // not counted in flight: it is always armed
  wake_armed_ = true;
}

void IoUringDriver::WakeOp::on_completion(int result, unsigned /*flags*/) {
  driver_.wake_armed_ = false;
  if (result < 0 && result != -ECANCELED && result != -EINTR) {
    log(LogLevel::error, "io_uring: the wake-up read failed: errno {}", -result);
  }
  driver_.arm_wake_read();  // when it throws, the next poll retries
}

void IoUringDriver::wakeup() noexcept {
  std::uint64_t one = 1;
  [[maybe_unused]] auto r = ::write(wake_fd_, &one, sizeof one);
}

io_uring_sqe* IoUringDriver::next_sqe() {
  io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
  while (sqe == nullptr) {
    // The queue is full: hand what is queued to the kernel now (completions still wait for poll).
    int rc = io_uring_submit(&ring_);
    if (rc < 0 && rc != -EINTR && rc != -EBUSY) throw IoError(-rc, "io_uring_submit");
    sqe = io_uring_get_sqe(&ring_);
  }
  return sqe;
}

io_uring_sqe* IoUringDriver::prepare(IoUringOp& op) {
  io_uring_sqe* sqe = next_sqe();
  io_uring_sqe_set_data(sqe, &op);
  ++in_flight_;
  return sqe;
}

void IoUringDriver::reserve(unsigned n) {
  while (io_uring_sq_space_left(&ring_) < n) {
    int rc = io_uring_submit(&ring_);
    if (rc < 0 && rc != -EINTR && rc != -EBUSY) throw IoError(-rc, "io_uring_submit");
  }
}

void IoUringDriver::cancel(IoUringOp& op) {
  io_uring_sqe* sqe = next_sqe();
  io_uring_prep_cancel(sqe, &op, 0);
  io_uring_sqe_set_data(sqe, nullptr);  // null: a completion nobody waits for
  sqe->flags |= IOSQE_CQE_SKIP_SUCCESS;
}

ByteBuf IoUringDriver::take_buffer(unsigned id, std::size_t length) {
  ByteBuf filled = std::move(buffers_[id]);
  filled.advance_writer(length);
  try {
    buffers_[id] = pooled_allocator().buffer(options_.buffer_size, options_.buffer_size);
  } catch (const std::bad_alloc&) {
    // The ring runs one buffer short; receives fail with ENOBUFS and are re-armed when it is empty.
    log(LogLevel::error, "io_uring: no memory to refill receive buffer {}", id);
    return filled;
  }
  io_uring_buf_ring_add(buffer_ring_, buffers_[id].write_ptr(), static_cast<unsigned>(options_.buffer_size),
                        static_cast<unsigned short>(id), static_cast<int>(buffer_mask_), 0);
  io_uring_buf_ring_advance(buffer_ring_, 1);
  return filled;
}

void IoUringDriver::poll(Duration timeout) {
  if (!wake_armed_) [[unlikely]] {
    try {
      arm_wake_read();
      wake_arm_failing_ = false;
    } catch (const std::exception& e) {
      if (!std::exchange(wake_arm_failing_, true)) {
        log(LogLevel::error, "io_uring: arming the wake-up read failed: {}; polls are bounded until it is armed",
            e.what());
      }
      if (timeout.count() < 0 || timeout > kUnarmedPollLimit) timeout = kUnarmedPollLimit;
    }
  }
  submit_and_wait(timeout);
  detail::note_io_ready();
  dispatch_completions();
  end_batches();
}

void IoUringDriver::submit_and_wait(Duration timeout) {
  int rc;
  if (timeout.count() == 0) {
    rc = io_uring_submit_and_get_events(&ring_);
  } else if (timeout.count() < 0) {
    rc = io_uring_submit_and_wait(&ring_, 1);
  } else {
    __kernel_timespec ts{};
    ts.tv_sec = timeout.count() / 1'000'000'000;
    ts.tv_nsec = timeout.count() % 1'000'000'000;
    io_uring_cqe* cqe = nullptr;
    rc = io_uring_submit_and_wait_timeout(&ring_, &cqe, 1, &ts, nullptr);
  }
  if (rc < 0 && rc != -ETIME && rc != -EINTR && rc != -EBUSY && rc != -EAGAIN) {
    log(LogLevel::error, "io_uring_enter failed: errno {}", -rc);
  }
}

void IoUringDriver::dispatch_completions() {
  io_uring_cqe* cqes[kMaxCompletionsPerPeek];
  // Bounded, so that a flood of completions cannot starve the loop's timers and tasks.
  for (int round = 0; round < 16; ++round) {
    unsigned n = io_uring_peek_batch_cqe(&ring_, cqes, kMaxCompletionsPerPeek);
    if (n == 0) return;
    for (unsigned i = 0; i < n; ++i) {
      auto* op = static_cast<IoUringOp*>(io_uring_cqe_get_data(cqes[i]));
      if (op == nullptr) continue;  // a cancellation that found nothing to cancel
      const int result = cqes[i]->res;
      const unsigned flags = cqes[i]->flags;
      if (op != &wake_op_ && (flags & IORING_CQE_F_MORE) == 0) --in_flight_;
      try {
        op->on_completion(result, flags);
      } catch (const std::exception& e) {
        // Pipelines catch their handlers' exceptions; this is the transport's own failure (no memory).
        log(LogLevel::error, "io_uring: handling a completion failed: {}", e.what());
      }
    }
    io_uring_cq_advance(&ring_, n);
  }
}

void IoUringDriver::end_batches() {
  // A batch end may start another (a handler reads again): those run at the next poll.
  ending_.swap(batch_ends_);
  for (IoUringBatchEnd* listener : ending_) listener->on_batch_end();
  ending_.clear();
}

void IoUringDriver::drain() noexcept {
  const auto deadline = std::chrono::steady_clock::now() + kDrainLimit;
  while (in_flight_ > 0 && std::chrono::steady_clock::now() < deadline) {
    poll(std::chrono::milliseconds(10));
  }
  end_batches();
  if (in_flight_ > 0) {
    log(LogLevel::error, "io_uring: {} operations still in flight when the loop ended; the ring's exit cancels them",
        in_flight_);
  }
}

}  // namespace weft
