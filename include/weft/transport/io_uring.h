#pragma once
/// @file
/// The io_uring transport: the same channels, pipelines and handlers as epoll on a completion-based
/// engine.
///
///   weft::EventLoopGroup loops(weft::io_uring(), 4);          // default options
///
///   weft::IoUringTransport tuned({.buffer_size = 16384});      // must outlive its groups
///   weft::EventLoopGroup loops(tuned, 4);
///
/// Each loop owns one ring. A listening channel keeps one multishot accept armed; a connection keeps
/// one receive armed while reading, into a buffer the loop provides from a ring of pooled buffers
/// (weft's pooled allocator, a fresh one per completion, handed up the pipeline without a copy); each
/// flush queues one gathered sendmsg. Nothing is submitted at once: the loop submits what every channel
/// queued and waits for completions in one io_uring_enter per turn, and the reads of one turn end with
/// one read-complete per channel, so a pipelined batch is answered with one send. Timers are the wait's
/// timeout, and wake-ups from other threads complete a read on an eventfd in the ring.
///
/// A close cancels what the channel has in flight; the channel stays allocated until the last of its
/// completions arrived, so no completion touches freed memory. When the kernel refuses io_uring (too old,
/// disabled by io_uring_disabled or a seccomp filter) the transport logs one line and runs on epoll.

#include <cstddef>
#include <string>

#include "weft/channel/transport.h"

namespace weft {

/// Options of the io_uring transport, per loop.
struct IoUringOptions {
  /// Submission queue entries per loop; when full, the loop submits early.
  unsigned submission_entries = 4096;
  /// Completion queue entries per loop (the kernel rounds up to a power of two).
  unsigned completion_entries = 16384;
  /// Receive buffers provided to the kernel per loop: count (a power of two, at most 32768) and size.
  /// A completion carries at most buffer_size bytes; count * size is the loop's receive memory. The
  /// kernel takes them in ring order, so a smaller ring stays warmer in the cache (measured: a 4 KiB
  /// message stream costs 1.3-1.5 us per message with 32-128 buffers, 1.9-2.0 us with 512).
  unsigned buffer_count = 128;
  /// Bytes in each receive buffer (see buffer_count).
  std::size_t buffer_size = 16 * 1024;
  /// IORING_SETUP_SINGLE_ISSUER and IORING_SETUP_DEFER_TASKRUN: completions are processed only when the
  /// loop asks, on its own thread (no interrupting task work). Turned off when the kernel refuses them.
  bool single_issuer = true;
  /// IORING_SETUP_DEFER_TASKRUN (see single_issuer).
  bool defer_taskrun = true;
  /// Sends of at least this many bytes use zero-copy sendmsg (the buffers are held until the kernel's
  /// notification). 0: off. Off by default: on loopback the kernel copies anyway and the notification
  /// costs a completion; see docs/io_uring.md for the measured threshold.
  std::size_t zero_copy_threshold = 0;

  /// Throws std::invalid_argument naming the first inconsistent option.
  void validate() const;
};

/// The io_uring transport (see the file's description); falls back to epoll where rings are refused.
class IoUringTransport final : public Transport {
 public:
  /// Throws std::invalid_argument for inconsistent options.
  explicit IoUringTransport(IoUringOptions options = {});

  /// Thread-safe. Whether this process can run rings (probed once per process); when not, `reason`
  /// says why and this transport runs on epoll.
  static bool available(std::string* reason = nullptr);
  /// Thread-safe.
  const IoUringOptions& options() const noexcept { return options_; }

  std::unique_ptr<IoDriver> create_driver() override;
  std::string_view name() const noexcept override { return "io_uring"; }
  ChannelPtr new_socket_channel(EventLoop& loop, const ChannelConfig& config) override;
  ChannelPtr new_accepted_channel(EventLoop& loop, const ChannelConfig& config, AcceptedSocket socket) override;
  ChannelPtr new_server_channel(EventLoop& loop, const ChannelConfig& config) override;

 private:
  IoUringOptions options_;
};

/// Thread-safe. The process-wide io_uring transport with default options.
Transport& io_uring();

}  // namespace weft
