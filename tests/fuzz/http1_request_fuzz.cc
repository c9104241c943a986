// libFuzzer target: the HTTP/1 request parser and the server codec.
// Invariants checked: the parser never reads past its input, views stay inside it, and the codec
// answers every input with well-formed status lines (or nothing), whatever the split into reads.

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "weft/buffer/byte_buf.h"
#include "weft/channel/embedded_channel.h"
#include "weft/codec/http1/request_parser.h"
#include "weft/codec/http1/server_codec.h"

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

bool inside(std::string_view part, std::string_view whole) {
  return part.empty() || (part.data() >= whole.data() && part.data() + part.size() <= whole.data() + whole.size());
}

class Answer final : public weft::InboundHandler<weft::http::HttpRequest, weft::http::HttpRequest> {
 public:
  void channel_read(weft::Context& ctx, weft::http::HttpRequest&& request) override {
    ctx.write(weft::http::HttpResponse(200).body(weft::ByteBuf::copy_of(request.body_view())));
  }
  void channel_read_complete(weft::Context& ctx) override { ctx.flush(); }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);

  weft::http::Limits limits;
  limits.max_body = 4096;
  weft::http::RequestHead head;
  auto r = weft::http::parse_request_head(input, head, limits);
  if (r.kind == weft::http::ParseResult::Kind::complete) {
    check(r.consumed <= size);
    check(inside(head.method, input) && inside(head.target, input));
    for (const auto& h : head) check(inside(h.name, input) && inside(h.value, input));
  } else if (r.kind == weft::http::ParseResult::Kind::error) {
    check(r.status >= 400 && r.status < 600);
  }

  weft::EmbeddedChannel ch;
  ch.pipeline().add_last("http", std::make_shared<weft::http::ServerCodec>(limits));
  ch.pipeline().add_last("app", std::make_shared<Answer>());
  std::size_t cut = size == 0 ? 0 : data[0] % (size + 1);
  ch.write_inbound(weft::ByteBuf::copy_of(input.substr(0, cut)));
  if (ch.is_open()) ch.write_inbound(weft::ByteBuf::copy_of(input.substr(cut)));
  std::string out;
  while (auto b = ch.read_outbound<weft::ByteBuf>()) out += b->to_string();
  check(out.empty() || out.rfind("HTTP/1.1 ", 0) == 0);
  ch.finish();
  return 0;
}
