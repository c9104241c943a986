// libFuzzer target: the HTTP/1 response parser and the client codec. Invariants checked: the parser
// never reads past its input and its views stay inside it; the client codec, answering one request
// with the input cut in two reads where the input's first byte says, never crashes, gives at most
// one response per request sent with a status of three digits, and a body no larger than the input.

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "weft/buffer/byte_buf.h"
#include "weft/channel/embedded_channel.h"
#include "weft/codec/http1/client_codec.h"

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

bool inside(std::string_view part, std::string_view whole) {
  return part.empty() || (part.data() >= whole.data() && part.data() + part.size() <= whole.data() + whole.size());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);

  weft::http::Limits limits;
  limits.max_body = 4096;
  weft::http::ResponseHead head;
  const auto r = weft::http::parse_response_head(input, head, limits);
  if (r.kind == weft::http::ParseResult::Kind::complete) {
    check(r.consumed <= size);
    check(head.status >= 100 && head.status <= 999);
    check(inside(head.reason, input));
    for (std::size_t i = 0; i < head.header_count; ++i) {
      check(inside(head.inline_headers[i].name, input) && inside(head.inline_headers[i].value, input));
    }
  }

  weft::EmbeddedChannel ch;
  ch.pipeline().add_last("http", std::make_shared<weft::http::ClientCodec>(limits, "fuzz.example"));
  const bool head_request = size > 0 && (data[0] & 1) != 0;  // a HEAD's answer has no body
  ch.write_outbound(weft::http::HttpClientRequest(head_request ? "HEAD" : "GET", "/"));
  while (ch.read_outbound<weft::ByteBuf>()) {
  }
  const std::size_t cut = size == 0 ? 0 : data[0] % (size + 1);
  ch.write_inbound(weft::ByteBuf::copy_of(input.substr(0, cut)));
  if (ch.is_open()) ch.write_inbound(weft::ByteBuf::copy_of(input.substr(cut)));
  std::size_t responses = 0;
  while (auto response = ch.read_inbound<weft::http::HttpClientResponse>()) {
    ++responses;
    check(response->status() >= 100 && response->status() <= 999);
    check(response->body().readable_bytes() <= size);
  }
  check(responses <= 1);
  ch.finish();
  return 0;
}
