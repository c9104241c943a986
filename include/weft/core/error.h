#pragma once
/// @file
/// Error types. Exceptions are for programming errors and setup failures; I/O outcomes arrive as
/// failed futures or exception events carrying these types.

#include <exception>
#include <stdexcept>
#include <string>
#include <system_error>

namespace weft {

/// Base of every error weft raises itself.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A task was submitted to an event loop that has terminated.
class RejectedExecutionError : public Error {
 public:
  using Error::Error;
};

/// A promise was destroyed without a value or an error: its future fails with this instead of
/// waiting forever.
class BrokenPromiseError : public Error {
 public:
  BrokenPromiseError() : Error("broken promise: destroyed without being completed") {}
  using Error::Error;
};

/// The event loop a coroutine (or a piece of work) waits on terminated before the wait ended: a
/// sleep, an offload or an awaited future whose loop shut down resumes the coroutine with this.
class EventLoopTerminatedError : public Error {
 public:
  EventLoopTerminatedError() : Error("event loop terminated") {}
  using Error::Error;
};

/// A blocking call (Future::get/wait) was made on the event loop that must complete the future.
class BlockingOperationError : public Error {
 public:
  using Error::Error;
};

/// An operation needs an open channel and the channel is closed.
class ChannelClosedError : public Error {
 public:
  ChannelClosedError() : Error("channel closed") {}
  using Error::Error;
};

/// A write reached a channel after Channel::shutdown_output(): the message is dropped and this is
/// fired as an exception event. A ChannelClosedError, since the output is closed.
class ChannelOutputShutdownError : public ChannelClosedError {
 public:
  ChannelOutputShutdownError() : ChannelClosedError("write after shutdown_output: the channel's output is closed") {}
};

/// A transport with a bounded number of channels (the blocking transport: one thread each) is full.
/// Accepted connections are closed; a client connect fails with it.
class ChannelLimitError : public Error {
 public:
  using Error::Error;
};

/// A connect did not complete within the channel's connect timeout.
class ConnectTimeoutError : public Error {
 public:
  using Error::Error;
};

/// Handlers added next to each other disagree on the message type passed between them.
class PipelineTypeError : public Error {
 public:
  using Error::Error;
};

/// An I/O system call failed; code() holds errno.
class IoError : public std::system_error {
 public:
  /// The error `errno_value` (an errno) of the operation described by `what`.
  IoError(int errno_value, const std::string& what)
      : std::system_error(errno_value, std::system_category(), what) {}
};

/// The message of the exception `error` holds: its what(), or "non-standard exception" for one not
/// derived from std::exception. Thread-safe.
std::string describe_exception(const std::exception_ptr& error);

}  // namespace weft
