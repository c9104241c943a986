// libFuzzer target: LengthFieldBasedFrameDecoder with fuzzed options on arbitrary bytes, split
// into arbitrary reads.
//
// Input: bytes 0-3 choose the options (field length 1/2/3/4/8, offset 0..3, adjustment -8..7,
// bytes to strip 0..7, byte order, fail_fast, max_frame_length 1..256), byte 4 seeds the read
// sizes, the rest is the stream. Checks: no frame is longer than max_frame_length, and the decoder
// never buffers more than max_frame_length bytes plus one read.

#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "weft/channel/embedded_channel.h"
#include "weft/codec/length_field_based_frame_decoder.h"

namespace {

class Sink final : public weft::Handler {
 public:
  void exception_caught(weft::Context&, std::exception_ptr) override {}
};

void check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 5) return 0;
  static constexpr std::size_t kFieldLengths[] = {1, 2, 3, 4, 8, 4, 2, 1};
  weft::LengthFieldBasedFrameDecoder::Options o;
  o.length_field_length = kFieldLengths[data[0] & 7];
  o.length_field_offset = (data[0] >> 3) & 3;
  o.byte_order = (data[0] & 32) ? weft::ByteOrder::little_endian : weft::ByteOrder::big_endian;
  o.fail_fast = (data[0] & 64) != 0;
  o.length_adjustment = static_cast<std::int64_t>(data[1] & 15) - 8;
  o.initial_bytes_to_strip = (data[1] >> 4) & 7;
  o.max_frame_length = 1 + data[2];
  if (o.max_frame_length < o.length_field_offset + o.length_field_length) return 0;
  std::uint32_t seed = (static_cast<std::uint32_t>(data[3]) << 8 | data[4]) | 1u;
  data += 5;
  size -= 5;

  weft::EmbeddedChannel ch;
  auto decoder = std::make_shared<weft::LengthFieldBasedFrameDecoder>(o);
  ch.pipeline().add_last("decoder", decoder);
  ch.pipeline().add_last("sink", std::make_shared<Sink>());
  std::size_t pos = 0;
  while (pos < size) {
    seed = seed * 1103515245u + 12345u;
    const std::size_t n = std::min<std::size_t>(size - pos, 1 + (seed >> 16) % 33);
    ch.write_inbound(weft::ByteBuf::copy_of(data + pos, n));
    pos += n;
    check(decoder->buffered_bytes() <= o.max_frame_length + n);
    while (auto frame = ch.read_inbound<weft::ByteBuf>()) check(frame->readable_bytes() <= o.max_frame_length);
  }
  ch.finish();
  return 0;
}
