// The control for the compile-fail checks: what their messages ask for compiles, from weft.h alone.
#include <weft/weft.h>

struct Hello final : weft::InboundHandler<weft::ByteBuf> {
  void channel_read(weft::Context& ctx, weft::ByteBuf&&) override {
    ctx.write(weft::ByteBuf::copy_of("hello"));
    ctx.write_and_flush(std::string("hello"));
  }
};

void start(weft::Channel& ch, std::shared_ptr<weft::http::Router> router) {
  ch.write(weft::http::HttpResponse(200).body_view("hello"));
  weft::serve<weft::http::HttpRequest>(ch, [router](weft::Connection<weft::http::HttpRequest>& c) -> weft::Task<> {
    weft::http::HttpRequest request = co_await c.read();
    weft::http::RouteMatch m = router->match(request.method(), request.path());
    auto query = weft::http::QueryParams::parse(request.query());
    if (m && query) m.run(*c.channel().pipeline().context("connection"), request);
  });
}

// docs/http2.md's client call: a Future of a move-only response is awaited.
weft::Task<int> fetch(std::shared_ptr<weft::client::Http2Connection> client) {
  weft::http::HttpClientResponse r = co_await client->request(weft::http::HttpClientRequest("GET", "/json"));
  co_return r.status();
}
