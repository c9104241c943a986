#pragma once
/// @file
/// Decodes a message body after its head: fixed length, chunked (trailers checked; decode_piece keeps them)
/// or, for responses without framing, until the connection closes. Aggregates into one buffer up
/// to Limits::max_body (decode), or hands the body out in pieces as it comes, without a bound or a
/// copy (decode_piece: a streamed response). Shared by the server and client codecs. Loop thread only.

#include <cstdint>
#include <string>
#include <string_view>

#include "weft/buffer/byte_buf.h"
#include "weft/buffer/byte_buf_allocator.h"
#include "weft/codec/http1/http_types.h"

namespace weft::http::detail {

class BodyDecoder {
 public:
  enum class Status { need_more, done, error, piece };
  struct Result {
    Status status;
    int http_status = 0;  // error: the status that describes the problem (400, 413, 431)
    std::string_view reason;
  };

  void start_fixed(std::uint64_t length) noexcept;
  void start_chunked() noexcept;
  void start_until_close() noexcept;
  bool until_close() const noexcept { return state_ == State::until_close; }
  bool finished() const noexcept { return state_ == State::done; }

  // Moves body bytes from `in` into `body` (allocated on first use). Consumes only what belongs to
  // the body; stops at the end of the message.
  Result decode(ByteBuf& in, ByteBuf& body, ByteBufAllocator& allocator, const Limits& limits);
  // As decode, but returns each run of body bytes as `piece` (a slice of `in`) with Status::piece;
  // call again for the rest. No bound on the body's size. A chunked body's trailer section is kept
  // (trailer_block()).
  Result decode_piece(ByteBuf& in, ByteBuf& piece, const Limits& limits);
  // decode_piece: the trailer lines of the chunked body that ended ("Name: value\r\n" each,
  // checked), empty when none came.
  const std::string& trailer_block() const noexcept { return trailer_block_; }

 private:
  // One step over framing (chunk-size line, CRLF, trailers): true when it moved on; false with
  // `stopped` set (need_more, error, done) when it cannot. `room`: the largest chunk allowed.
  // `keep_trailers`: where to keep the trailer section (null: dropped).
  bool framing_step(ByteBuf& in, const Limits& limits, std::uint64_t room, Result& stopped, std::string* keep_trailers);

  enum class State : std::uint8_t { fixed, chunk_size, chunk_data, chunk_crlf, trailers, until_close, done };
  State state_ = State::done;
  std::uint64_t remaining_ = 0;
  std::string trailer_block_;
};

// After decoding: drops `in` when all of it was decoded, else keeps only the undecoded bytes
// (compacting in place, or copying them out while messages handed on still share the storage).
void keep_undecoded(ByteBuf& in);

}  // namespace weft::http::detail
