#include "weft/codec/http1/body_decoder.h"

#include <algorithm>
#include <array>
#include <limits>

#include "field_section.h"

namespace weft::http::detail {
namespace {

// qdtext (RFC 9110 5.6.4): HTAB, SP, VCHAR but '"' and '\\', obs-text.
constexpr std::array<bool, 256> make_qdtext() {
  std::array<bool, 256> t{};
  t['\t'] = t[' '] = true;
  for (int c = 0x21; c <= 0xff; ++c) t[c] = c != '"' && c != '\\' && c != 0x7f;
  return t;
}
constexpr std::array<bool, 256> kQdtext = make_qdtext();

struct ChunkSizeLine {
  enum class Kind : std::uint8_t { complete, incomplete, malformed } kind;
  std::uint64_t size = 0;
  std::size_t length = 0;  // complete: of the line, CRLF included
};

// chunk-size [ chunk-ext ] CRLF (RFC 9112 7.1) at the start of `s`, where
// chunk-ext = *( BWS ";" BWS ext-name [ BWS "=" BWS ext-value ] ), ext-name = token,
// ext-value = token / quoted-string. Extensions are checked and ignored. Malformed as soon as the
// bytes seen cannot begin such a line, incomplete when they are all of one's beginning.
ChunkSizeLine parse_chunk_size_line(std::string_view s) noexcept {
  using Kind = ChunkSizeLine::Kind;
  const std::size_t n = s.size();
  std::size_t i = 0;
  std::uint64_t size = 0;
  for (int digit; i < n && (digit = hex_value(s[i])) >= 0; ++i) {
    if (i == 15) return {Kind::malformed};  // would not fit in 60 bits
    size = size << 4 | static_cast<std::uint64_t>(digit);
  }
  if (i == 0) return {n == 0 ? Kind::incomplete : Kind::malformed};
  auto skip_bws = [&] {
    while (i < n && (s[i] == ' ' || s[i] == '\t')) ++i;
  };
  auto skip_token = [&] {  // false when there is none
    const std::size_t first = i;
    while (i < n && kTchar[static_cast<unsigned char>(s[i])]) ++i;
    return i > first;
  };
  for (;;) {
    const std::size_t before_bws = i;
    skip_bws();
    if (i == n) return {Kind::incomplete};
    if (s[i] == '\r' && i == before_bws) {  // BWS comes only before ';' or '='
      if (i + 1 == n) return {Kind::incomplete};
      if (s[i + 1] != '\n') return {Kind::malformed};
      return {Kind::complete, size, i + 2};
    }
    if (s[i] != ';') return {Kind::malformed};
    ++i;
    skip_bws();
    if (!skip_token()) return {i == n ? Kind::incomplete : Kind::malformed};
    const std::size_t after_name = i;
    skip_bws();
    if (i == n) return {Kind::incomplete};
    if (s[i] != '=') {
      i = after_name;  // the BWS belongs to the next extension
      continue;
    }
    ++i;
    skip_bws();
    if (i == n) return {Kind::incomplete};
    if (s[i] != '"') {
      if (!skip_token()) return {Kind::malformed};
      continue;
    }
    for (++i;; ++i) {  // quoted-string = DQUOTE *( qdtext / quoted-pair ) DQUOTE
      if (i == n) return {Kind::incomplete};
      if (s[i] == '"') break;
      if (s[i] == '\\') {  // quoted-pair = "\\" ( HTAB / SP / VCHAR / obs-text )
        if (++i == n) return {Kind::incomplete};
        if (!kQdtext[static_cast<unsigned char>(s[i])] && s[i] != '"' && s[i] != '\\') return {Kind::malformed};
      } else if (!kQdtext[static_cast<unsigned char>(s[i])]) {
        return {Kind::malformed};
      }
    }
    ++i;
  }
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

void BodyDecoder::start_chunked() noexcept {
  state_ = State::chunk_size;
  trailer_block_.clear();
}

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
      case State::chunk_data: {
        remaining_ -= move_bytes(in, body, remaining_, allocator, limits.max_body);
        if (remaining_ > 0) return {Status::need_more, 0, {}};
        state_ = State::chunk_crlf;
        break;
      }
      default: {
        Result stopped{Status::need_more, 0, {}};
        if (!framing_step(in, limits, limits.max_body - body.readable_bytes(), stopped, nullptr)) return stopped;
        break;
      }
    }
  }
}

bool BodyDecoder::framing_step(ByteBuf& in, const Limits& limits, std::uint64_t room, Result& stopped,
                               std::string* keep_trailers) {
  switch (state_) {
    case State::chunk_size: {
      const std::string_view avail = in.view().substr(0, limits.max_chunk_line + 2);
      const ChunkSizeLine line = parse_chunk_size_line(avail);
      if (line.kind == ChunkSizeLine::Kind::malformed) {
        stopped = {Status::error, 400, "malformed chunk-size line"};
        return false;
      }
      if (line.kind == ChunkSizeLine::Kind::incomplete) {
        if (avail.size() == limits.max_chunk_line + 2) stopped = {Status::error, 400, "chunk-size line too long"};
        return false;
      }
      const std::uint64_t size = line.size;
      in.skip_bytes(line.length);
      if (size == 0) {
        state_ = State::trailers;
        return true;
      }
      if (size > room) {
        stopped = {Status::error, 413, "chunked body too large"};
        return false;
      }
      remaining_ = size;
      state_ = State::chunk_data;
      return true;
    }
    case State::chunk_crlf: {
      if (in.readable_bytes() < 2) return false;
      if (in.get_u8(in.reader_index()) != '\r' || in.get_u8(in.reader_index() + 1) != '\n') {
        stopped = {Status::error, 400, "chunk data not followed by CRLF"};
        return false;
      }
      in.skip_bytes(2);
      state_ = State::chunk_size;
      return true;
    }
    case State::trailers: {
      TrailerSection trailers;
      const ParseResult r = parse_field_section_inline(in.view(), 0, trailers, limits);
      if (r.kind == ParseResult::Kind::incomplete) return false;
      if (r.kind == ParseResult::Kind::error) {
        stopped = {Status::error, r.status, r.reason};
        return false;
      }
      if (keep_trailers != nullptr) keep_trailers->assign(in.view().substr(0, r.consumed - 2));  // less the empty line
      in.skip_bytes(r.consumed);
      state_ = State::done;
      return true;
    }
    default: stopped = {Status::done, 0, {}}; return false;
  }
}

BodyDecoder::Result BodyDecoder::decode_piece(ByteBuf& in, ByteBuf& piece, const Limits& limits) {
  auto take = [&](std::uint64_t most) {
    const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(most, in.readable_bytes()));
    piece = in.read_slice(n);
    return n;
  };
  for (;;) {
    switch (state_) {
      case State::done: return {Status::done, 0, {}};
      case State::fixed:
        if (!in.is_readable()) return {Status::need_more, 0, {}};
        remaining_ -= take(remaining_);
        if (remaining_ == 0) state_ = State::done;
        return {Status::piece, 0, {}};
      case State::chunk_data:
        if (!in.is_readable()) return {Status::need_more, 0, {}};
        remaining_ -= take(remaining_);
        if (remaining_ == 0) state_ = State::chunk_crlf;
        return {Status::piece, 0, {}};
      case State::until_close:
        if (!in.is_readable()) return {Status::need_more, 0, {}};
        take(in.readable_bytes());
        return {Status::piece, 0, {}};
      default: {
        Result stopped{Status::need_more, 0, {}};
        if (!framing_step(in, limits, std::numeric_limits<std::uint64_t>::max(), stopped, &trailer_block_)) {
          return stopped;
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
