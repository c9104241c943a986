#include "weft/codec/http1/body_decoder.h"

#include <algorithm>
#include <charconv>

namespace weft::http::detail {
namespace {

// Hex chunk size of a chunk-size line (extensions after ';' ignored). False when malformed.
bool parse_chunk_size(std::string_view line, std::uint64_t& size) {
  std::string_view digits = line.substr(0, line.find(';'));
  while (!digits.empty() && (digits.back() == ' ' || digits.back() == '\t')) digits.remove_suffix(1);
  if (digits.empty() || digits.size() > 15) return false;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), size, 16);
  return ec == std::errc() && end == digits.data() + digits.size();
}

// Appends up to `n` bytes of `in` to `body`, allocating it on first use. Returns the count moved.
std::size_t move_bytes(ByteBuf& in, ByteBuf& body, std::uint64_t n, ByteBufAllocator& allocator, std::size_t max) {
  std::size_t count = static_cast<std::size_t>(std::min<std::uint64_t>(n, in.readable_bytes()));
  if (count == 0) return 0;
  if (!body.has_storage()) body = allocator.buffer(std::min<std::size_t>(std::max<std::size_t>(count, 256), max), max);
  body.write_bytes(in.read_ptr(), count);
  in.skip_bytes(count);
  return count;
}

}  // namespace

void BodyDecoder::start_fixed(std::uint64_t length) noexcept {
  state_ = length == 0 ? State::done : State::fixed;
  remaining_ = length;
}

void BodyDecoder::start_chunked() noexcept { state_ = State::chunk_size; }

void BodyDecoder::start_until_close() noexcept { state_ = State::until_close; }

BodyDecoder::Result BodyDecoder::decode(ByteBuf& in, ByteBuf& body, ByteBufAllocator& allocator, const Limits& limits) {
  for (;;) {
    switch (state_) {
      case State::done:
        return {Status::done, 0, {}};
      case State::fixed: {
        remaining_ -= move_bytes(in, body, remaining_, allocator, limits.max_body);
        if (remaining_ > 0) return {Status::need_more, 0, {}};
        state_ = State::done;
        break;
      }
      case State::until_close: {
        if (in.readable_bytes() > limits.max_body - body.readable_bytes()) return {Status::error, 413, "body too large"};
        move_bytes(in, body, in.readable_bytes(), allocator, limits.max_body);
        return {Status::need_more, 0, {}};
      }
      case State::chunk_size: {
        std::string_view avail = in.view().substr(0, limits.max_chunk_line + 2);
        auto crlf = avail.find("\r\n");
        if (crlf == std::string_view::npos) {
          if (in.readable_bytes() > limits.max_chunk_line + 1) return {Status::error, 400, "chunk-size line too long"};
          return {Status::need_more, 0, {}};
        }
        std::uint64_t size = 0;
        if (!parse_chunk_size(avail.substr(0, crlf), size)) return {Status::error, 400, "malformed chunk size"};
        in.skip_bytes(crlf + 2);
        if (size == 0) {
          state_ = State::trailers;
          break;
        }
        if (size > limits.max_body - body.readable_bytes()) return {Status::error, 413, "chunked body too large"};
        remaining_ = size;
        state_ = State::chunk_data;
        break;
      }
      case State::chunk_data: {
        remaining_ -= move_bytes(in, body, remaining_, allocator, limits.max_body);
        if (remaining_ > 0) return {Status::need_more, 0, {}};
        state_ = State::chunk_crlf;
        break;
      }
      case State::chunk_crlf: {
        if (in.readable_bytes() < 2) return {Status::need_more, 0, {}};
        if (in.get_u8(in.reader_index()) != '\r' || in.get_u8(in.reader_index() + 1) != '\n') {
          return {Status::error, 400, "chunk data not followed by CRLF"};
        }
        in.skip_bytes(2);
        state_ = State::chunk_size;
        break;
      }
      case State::trailers: {
        // Trailer fields are checked for framing and dropped.
        std::string_view avail = in.view();
        std::size_t pos = 0;
        for (;;) {
          auto crlf = avail.find("\r\n", pos);
          if (crlf == std::string_view::npos || crlf > limits.max_header_section) {
            if (avail.size() > limits.max_header_section) return {Status::error, 431, "trailer section too large"};
            return {Status::need_more, 0, {}};
          }
          if (avail.substr(pos, crlf - pos).find('\n') != std::string_view::npos) {
            return {Status::error, 400, "bare LF in trailer"};
          }
          if (crlf == pos) {
            in.skip_bytes(crlf + 2);
            state_ = State::done;
            break;
          }
          pos = crlf + 2;
        }
        break;
      }
    }
  }
}

void keep_undecoded(ByteBuf& in) {
  if (!in.is_readable()) {
    in.release();
  } else if (in.reader_index() > 0) {
    if (in.ref_count() == 1) {
      in.discard_read_bytes();
    } else {
      in = in.copy();
    }
  }
}

}  // namespace weft::http::detail
