#pragma once
/// @file
/// Decodes a message body after its head: fixed length, chunked (with trailers checked and dropped)
/// or, for responses without framing, until the connection closes. Aggregates into one buffer up
/// to Limits::max_body. Shared by the server and client codecs. Loop thread only.

#include <cstdint>
#include <string_view>

#include "weft/buffer/byte_buf.h"
#include "weft/buffer/byte_buf_allocator.h"
#include "weft/codec/http1/http_types.h"

namespace weft::http::detail {

class BodyDecoder {
 public:
  enum class Status { need_more, done, error };
  struct Result {
    Status status;
    int http_status = 0;  // error: the status that describes the problem (400, 413, 431)
    std::string_view reason;
  };

  void start_fixed(std::uint64_t length) noexcept;
  void start_chunked() noexcept;
  void start_until_close() noexcept;
  bool until_close() const noexcept { return state_ == State::until_close; }

  // Moves body bytes from `in` into `body` (allocated on first use). Consumes only what belongs to
  // the body; stops at the end of the message.
  Result decode(ByteBuf& in, ByteBuf& body, ByteBufAllocator& allocator, const Limits& limits);

 private:
  enum class State : std::uint8_t { fixed, chunk_size, chunk_data, chunk_crlf, trailers, until_close, done };
  State state_ = State::done;
  std::uint64_t remaining_ = 0;
};

// After decoding: drops `in` when all of it was decoded, else keeps only the undecoded bytes
// (compacting in place, or copying them out while messages handed on still share the storage).
void keep_undecoded(ByteBuf& in);

}  // namespace weft::http::detail
