// libFuzzer target: the HTTP/2 server codec (weft's own session under it) fed arbitrary
// frames after the connection preface, split into two reads where the first byte says.
// Invariants: no crash, no leak, no read or write outside a buffer (ASan), and every output starts
// with the server's SETTINGS frame (a 9-byte header of type 4 on stream 0).

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "weft/buffer/byte_buf.h"
#include "weft/channel/embedded_channel.h"
#include "weft/codec/http2/server_codec.h"

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

class Answer final : public weft::InboundHandler<weft::http::HttpRequest, weft::http::HttpRequest> {
 public:
  void channel_read(weft::Context& ctx, weft::http::HttpRequest&& request) override {
    ctx.write(weft::http::HttpResponse(200).header("X-Path", "p").body(weft::ByteBuf::copy_of(request.body_view())));
  }
  void channel_read_complete(weft::Context& ctx) override { ctx.flush(); }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string input = std::string(weft::http2::kClientPreface) +
                            std::string(reinterpret_cast<const char*>(data + 1), size - 1);
  weft::http2::Settings settings;
  settings.max_body = 4096;
  weft::EmbeddedChannel ch;
  ch.pipeline().add_last("http2", std::make_shared<weft::http2::ServerCodec>(settings));
  ch.pipeline().add_last("app", std::make_shared<Answer>());
  const std::size_t cut = weft::http2::kClientPreface.size() + data[0] % size;
  ch.write_inbound(weft::ByteBuf::copy_of(std::string_view(input).substr(0, cut)));
  if (ch.is_open()) ch.write_inbound(weft::ByteBuf::copy_of(std::string_view(input).substr(cut)));
  std::string out;
  while (auto b = ch.read_outbound<weft::ByteBuf>()) out += b->to_string();
  check(out.empty() || (out.size() >= 9 && out[3] == 4));
  ch.finish();
  return 0;
}
