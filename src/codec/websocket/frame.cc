#include "weft/codec/websocket/frame.h"

#include <openssl/rand.h>

#include <cstring>
#include <stdexcept>

namespace weft::ws {

bool is_valid_close_code(std::uint16_t code) noexcept {
  if (code >= 1000 && code <= 1003) return true;
  if (code >= 1007 && code <= 1011) return true;
  return code >= 3000 && code <= 4999;
}

FrameDecoder::Status FrameDecoder::fail(std::uint16_t code, std::string_view reason) noexcept {
  error_code_ = code;
  error_reason_ = reason;
  return Status::error;
}

FrameDecoder::Status FrameDecoder::next(ByteBuf& in, ByteBuf& out) {
  if (error_code_ != 0) return Status::error;
  if (in_payload_) {
    const std::size_t available = in.readable_bytes();
    const auto whole = static_cast<std::size_t>(remaining_);
    const std::size_t upto = std::min(available, whole);
    fresh_ = {};
    if (upto > unmasked_) {
      std::uint8_t* at = in.data() + in.reader_index() + unmasked_;
      if (header_.masked) apply_mask(at, upto - unmasked_, header_.mask_key, unmasked_);
      fresh_ = std::string_view(reinterpret_cast<const char*>(at), upto - unmasked_);
      unmasked_ = upto;
    }
    if (available < whole) return fresh_.empty() ? Status::need_more : Status::partial;
    out = whole == 0 ? ByteBuf() : in.read_slice(whole);
    in_payload_ = false;
    return Status::payload;
  }
  const std::size_t available = in.readable_bytes();
  if (available < 2) return Status::need_more;
  const std::uint8_t* p = in.read_ptr();
  const std::uint8_t b0 = p[0];
  const std::uint8_t b1 = p[1];
  // Checked from the first two bytes, before the rest of the header has arrived: fail fast.
  if ((b0 & 0x30) != 0) return fail(close_code::protocol_error, "reserved bits set");
  const std::uint8_t op = b0 & 0x0F;
  const bool rsv1 = (b0 & 0x40) != 0;
  if (rsv1 && !compressed_allowed_) return fail(close_code::protocol_error, "reserved bits set");
  if ((op > 0x2 && op < 0x8) || op > 0xA) return fail(close_code::protocol_error, "reserved opcode");
  const auto opcode = static_cast<Opcode>(op);
  // RFC 7692 section 6.1: RSV1 marks a compressed message on its first frame only.
  if (rsv1 && is_control(opcode)) return fail(close_code::protocol_error, "RSV1 set on a control frame");
  if (rsv1 && opcode == Opcode::continuation) return fail(close_code::protocol_error, "RSV1 set on a continuation");
  const bool fin = (b0 & 0x80) != 0;
  const bool masked = (b1 & 0x80) != 0;
  if (is_control(opcode) && !fin) return fail(close_code::protocol_error, "fragmented control frame");
  const std::uint8_t len7 = b1 & 0x7F;
  if (is_control(opcode) && len7 > 125) return fail(close_code::protocol_error, "control frame over 125 bytes");
  if (role_ == Role::server && !masked) return fail(close_code::protocol_error, "unmasked client frame");
  if (role_ == Role::client && masked) return fail(close_code::protocol_error, "masked server frame");
  const std::size_t length_bytes = len7 == 126 ? 2 : len7 == 127 ? 8 : 0;
  const std::size_t header_size = 2 + length_bytes + (masked ? 4 : 0);
  if (available < header_size) return Status::need_more;
  std::uint64_t length = len7;
  if (length_bytes == 2) {
    length = (std::uint64_t{p[2]} << 8) | p[3];
    if (length < 126) return fail(close_code::protocol_error, "length not in its shortest form");
  } else if (length_bytes == 8) {
    length = 0;
    for (int i = 0; i < 8; ++i) length = (length << 8) | p[2 + i];
    if (length >> 63) return fail(close_code::protocol_error, "64-bit length with its top bit set");
    if (length <= 0xFFFF) return fail(close_code::protocol_error, "length not in its shortest form");
  }
  if (length > max_frame_length_) return fail(close_code::too_big, "frame over the message size limit");
  header_.opcode = opcode;
  header_.fin = fin;
  header_.rsv1 = rsv1;
  header_.masked = masked;
  if (masked) std::memcpy(header_.mask_key, p + 2 + length_bytes, 4);
  header_.length = length;
  remaining_ = length;
  unmasked_ = 0;
  in_payload_ = true;
  in.skip_bytes(header_size);
  return Status::header;
}

FrameEncoder::FrameEncoder(bool masked) noexcept : masked_(masked) {}

void FrameEncoder::next_key(std::uint8_t key[4]) {
  if (std::size_t{used_} + 4 > sizeof(keys_)) {
    if (RAND_bytes(keys_, sizeof(keys_)) != 1) throw std::runtime_error("websocket: RAND_bytes failed");
    used_ = 0;
  }
  std::memcpy(key, keys_ + used_, 4);
  used_ = static_cast<std::uint8_t>(used_ + 4);
}

std::size_t FrameEncoder::write_header(std::uint8_t* out, std::uint8_t first_byte,
                                       std::uint64_t length) const noexcept {
  std::size_t n = 0;
  out[n++] = first_byte;
  const std::uint8_t mask_bit = masked_ ? 0x80 : 0;
  if (length < 126) {
    out[n++] = static_cast<std::uint8_t>(mask_bit | length);
  } else if (length <= 0xFFFF) {
    out[n++] = static_cast<std::uint8_t>(mask_bit | 126);
    out[n++] = static_cast<std::uint8_t>(length >> 8);
    out[n++] = static_cast<std::uint8_t>(length);
  } else {
    out[n++] = static_cast<std::uint8_t>(mask_bit | 127);
    for (int shift = 56; shift >= 0; shift -= 8) out[n++] = static_cast<std::uint8_t>(length >> shift);
  }
  return n;
}

void FrameEncoder::encode_header(ByteBuf& out, Opcode opcode, bool fin, std::uint64_t length) {
  std::uint8_t header[14];
  const std::size_t n =
      write_header(header, static_cast<std::uint8_t>((fin ? 0x80 : 0) | static_cast<std::uint8_t>(opcode)), length);
  out.write_bytes(header, n);
}

void FrameEncoder::prepend_header(ByteBuf& payload, Opcode opcode, bool fin, bool compressed) {
  std::uint8_t header[14];
  const auto first =
      static_cast<std::uint8_t>((fin ? 0x80 : 0) | (compressed ? 0x40 : 0) | static_cast<std::uint8_t>(opcode));
  std::size_t n = write_header(header, first, payload.readable_bytes());
  if (masked_) {
    next_key(header + n);
    apply_mask(payload.data() + payload.reader_index(), payload.readable_bytes(), header + n, 0);
    n += 4;
  }
  if (payload.reader_index() < n) throw std::logic_error("ws::FrameEncoder::prepend_header: no room for the header");
  const std::size_t at = payload.reader_index() - n;
  payload.set_bytes(at, header, n);
  payload.set_reader_index(at);
}

void FrameEncoder::encode(ByteBuf& out, Opcode opcode, bool fin, std::string_view payload) {
  encode_header(out, opcode, fin, payload.size());
  if (!masked_) {
    out.write_bytes(payload);
    return;
  }
  std::uint8_t key[4];
  next_key(key);
  out.write_bytes(key, 4);
  out.ensure_writable(payload.size());
  copy_masked(out.write_ptr(), reinterpret_cast<const std::uint8_t*>(payload.data()), payload.size(), key);
  out.advance_writer(payload.size());
}

}  // namespace weft::ws
