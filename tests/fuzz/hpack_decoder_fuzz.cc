// libFuzzer target: weft's HPACK Decoder (src/codec/http2/hpack.h) fed a connection's worth of
// header blocks. Input: byte 0 picks the announced table size; then each block is a length byte
// followed by that many bytes (fewer at the end); a length byte of 0xff instead announces a new
// table size (the next byte times 32).
// Invariants: no crash, no read outside a block (each is an exact-size heap copy, ASan), decode()
// returns 0 or kCompressionError, and a block that decodes is re-encoded by weft's Encoder and
// decoded again to the same fields.

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "../../src/codec/http2/hpack.h"
#include "weft/buffer/byte_buf_allocator.h"

namespace {

using Fields = std::vector<std::pair<std::string, std::string>>;

void check(bool ok) {
  if (!ok) std::abort();
}

int collect(void* context, std::string_view name, std::string_view value) {
  static_cast<Fields*>(context)->emplace_back(std::string(name), std::string(value));
  return 0;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace weft::http2::hpack;
  if (size == 0) return 0;
  Decoder decoder(static_cast<std::uint32_t>(data[0]) * 32);
  Encoder encoder;
  encoder.set_huffman((data[0] & 1) != 0);
  Decoder check_decoder;
  std::size_t i = 1;
  while (i < size) {
    const std::uint8_t len_byte = data[i++];
    if (len_byte == 0xff) {
      if (i < size) decoder.set_max_table_size(static_cast<std::uint32_t>(data[i++]) * 32);
      continue;
    }
    const std::size_t len = std::min<std::size_t>(len_byte, size - i);
    const auto block = std::make_unique<std::uint8_t[]>(len);
    std::copy(data + i, data + i + len, block.get());
    i += len;
    Fields fields;
    const int rc = decoder.decode(block.get(), len, collect, &fields);
    check(rc == 0 || rc == kCompressionError);
    if (rc != 0) break;  // the connection is closed
    weft::ByteBuf out = weft::default_allocator().buffer();
    encoder.begin_block(out);
    for (const auto& [n, v] : fields) encoder.encode(out, n, v);
    Fields again;
    check(check_decoder.decode(out.read_ptr(), out.readable_bytes(), collect, &again) == 0);
    check(again == fields);
  }
  return 0;
}
