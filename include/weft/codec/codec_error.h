#pragma once
/// @file
/// Errors raised by decoders and encoders. Decoders fire them as exception events (the channel is not
/// closed for them: the application decides); encoders throw them from write, which turns them into
/// an exception event from the head of the pipeline.

#include <cstddef>
#include <exception>
#include <string>

#include "weft/core/error.h"

namespace weft {

/// Base of every decoding error.
class DecoderError : public Error {
 public:
  using Error::Error;
};

/// Base of every encoding error.
class EncoderError : public Error {
 public:
  using Error::Error;
};

/// A frame is longer than a decoder's limit; the frame was (or is being) discarded.
/// limit_name() names the option that was exceeded (e.g. "max_frame_length").
class TooLongFrameError : public DecoderError {
 public:
  /// `length`: the frame's length when known, else the bytes seen so far (then `at_least` is true).
  TooLongFrameError(std::string limit_name, std::size_t limit, std::size_t length, bool at_least = false);
  /// The name of the option that was exceeded (e.g. "max_frame_length").
  const std::string& limit_name() const noexcept { return limit_name_; }
  /// The limit's value.
  std::size_t limit() const noexcept { return limit_; }
  /// The frame's length, or the bytes seen so far (see the constructor).
  std::size_t length() const noexcept { return length_; }

 private:
  std::string limit_name_;
  std::size_t limit_;
  std::size_t length_;
};

/// The bytes cannot be a frame of this protocol (e.g. a negative length field).
class CorruptedFrameError : public DecoderError {
 public:
  using DecoderError::DecoderError;
};

/// The input ended (channel inactive or input shut down) in the middle of a frame; the partial frame
/// was discarded.
class TruncatedFrameError : public DecoderError {
 public:
  /// A partial frame of `discarded_bytes` bytes was discarded.
  explicit TruncatedFrameError(std::size_t discarded_bytes);
  /// The bytes of the partial frame.
  std::size_t discarded_bytes() const noexcept { return discarded_; }

 private:
  std::size_t discarded_;
};

class Context;

/// What a protocol codec (HTTP/1.1, HTTP/2, WebSocket) does with an exception event: an IoError (the
/// peer reset, a write failed) closes the connection, logged at debug; anything else goes on to the
/// next handler. Loop thread only.
void close_on_io_error(Context& ctx, std::exception_ptr error);

}  // namespace weft
