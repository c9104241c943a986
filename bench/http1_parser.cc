// The HTTP/1 request parser on the batch that wrk sends with pipeline.lua at depth 16
// (wrk.format(nil): "GET <path> HTTP/1.1\r\nHost: <host>:<port>\r\n\r\n"), and on a browser-like
// request with several headers. Reports time per request.

#include <benchmark/benchmark.h>

#include <string>

#include "weft/buffer/byte_buf.h"
#include "weft/channel/embedded_channel.h"
#include "weft/codec/http1/request_parser.h"
#include "weft/codec/http1/server_codec.h"

namespace {

const std::string kWrk = "GET /plaintext HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n";
const std::string kBrowser =
    "GET /index.html?lang=en HTTP/1.1\r\n"
    "Host: example.com\r\n"
    "User-Agent: Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0\r\n"
    "Accept: text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,*/*;q=0.8\r\n"
    "Accept-Language: en-US,en;q=0.5\r\n"
    "Accept-Encoding: gzip, deflate, br\r\n"
    "Cookie: session=0123456789abcdef; theme=dark\r\n"
    "Connection: keep-alive\r\n"
    "\r\n";

std::string batch_of(const std::string& one, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += one;
  return out;
}

void parse_batch(benchmark::State& state, const std::string& one) {
  const std::string batch = batch_of(one, 16);
  weft::http::RequestHead head;
  weft::http::Limits limits;
  for (auto _ : state) {
    std::string_view rest = batch;
    while (!rest.empty()) {
      auto r = weft::http::parse_request_head(rest, head, limits);
      benchmark::DoNotOptimize(head);
      rest.remove_prefix(r.consumed);
    }
  }
  state.SetItemsProcessed(state.iterations() * 16);
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(batch.size()));
}

void BM_ParseWrkBatchOf16(benchmark::State& state) { parse_batch(state, kWrk); }
void BM_ParseBrowserBatchOf16(benchmark::State& state) { parse_batch(state, kBrowser); }

// The whole server codec on an EmbeddedChannel: decode 16 pipelined requests, answer each, one
// output buffer for the batch.
const weft::http::HeaderBlock kHeaders = weft::http::HeaderBlock().add("Server", "weft").add("Content-Type", "text/plain");

class Answer final : public weft::InboundHandler<weft::http::HttpRequest, weft::http::HttpRequest> {
 public:
  void channel_read(weft::Context& ctx, weft::http::HttpRequest&&) override {
    ctx.write(weft::http::HttpResponse(200).headers(kHeaders).body_view("Hello, World!"));
  }
  void channel_read_complete(weft::Context& ctx) override { ctx.flush(); }
};

void BM_ServerCodecWrkBatchOf16(benchmark::State& state) {
  const std::string batch = batch_of(kWrk, 16);
  weft::EmbeddedChannel ch;
  ch.pipeline().add_last("http", std::make_shared<weft::http::ServerCodec>());
  ch.pipeline().add_last("app", std::make_shared<Answer>());
  for (auto _ : state) {
    ch.pipeline().fire_read(weft::ByteBuf::copy_of(batch));
    ch.pipeline().fire_read_complete();
    auto out = ch.read_outbound<weft::ByteBuf>();
    benchmark::DoNotOptimize(out);
  }
  state.SetItemsProcessed(state.iterations() * 16);
}

BENCHMARK(BM_ParseWrkBatchOf16);
BENCHMARK(BM_ParseBrowserBatchOf16);
BENCHMARK(BM_ServerCodecWrkBatchOf16);

}  // namespace
