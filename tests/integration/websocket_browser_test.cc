// A browser as the WebSocket client: headless Chromium loads a page from a weft server over TLS,
// where ALPN chooses h2 and the server advertises SETTINGS_ENABLE_CONNECT_PROTOCOL; the page opens
// two `wss://` WebSockets to the same origin (one with permessage-deflate), which Chromium carries
// as extended CONNECTs (RFC 8441) on that HTTP/2 connection, and checks echoes byte-exact, text
// and a 1 MiB binary. The handlers see which HTTP version carried each handshake. On every transport.

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "support/shell.h"
#include "support/tls_certs.h"
#include "support/transports.h"
#include "weft/codec/http1/router.h"
#include "weft/codec/http1/server_codec.h"
#include "weft/codec/http2/server_codec.h"
#include "weft/codec/tls/application_protocol_negotiation_handler.h"
#include "weft/codec/tls/tls_handler.h"
#include "weft/codec/websocket/upgrade.h"
#include "weft/weft.h"

using namespace std::chrono_literals;

namespace weft {
namespace {

using test::test_pki;
using test::test_server_context;

// The page: for each of /ws and /ws-deflate, the server's first message (the HTTP version that
// carried the handshake and whether deflate was agreed), then a text and a 1 MiB binary echoed back
// byte-exact; the outcome is POSTed to /result (a DOM dump would not wait for the WebSockets).
constexpr std::string_view kPage = R"(<!doctype html>
<html><body><div id="out">pending</div><script>
function check(path) {
  return new Promise((resolve) => {
    const ws = new WebSocket('wss://' + location.host + path);
    ws.binaryType = 'arraybuffer';
    const big = new Uint8Array(1 << 20);
    for (let i = 0; i < big.length; i++) big[i] = (i * 31 + (i >> 11)) & 0xff;
    const text = 'hello \u00e9\u4e16 ' + 'x'.repeat(300);
    let hello = null, step = 0;
    ws.onmessage = (e) => {
      if (hello === null) { hello = e.data; ws.send(text); return; }
      if (step === 0) {
        step = 1;
        if (e.data !== text) return resolve(path + ' text-mismatch');
        ws.send(big);
        return;
      }
      const got = new Uint8Array(e.data);
      let same = got.length === big.length;
      for (let i = 0; same && i < got.length; i++) same = got[i] === big[i];
      ws.close(1000, 'done');
      resolve(path + ' ' + hello + (same ? ' echoed' : ' binary-mismatch ' + got.length));
    };
    ws.onerror = () => resolve(path + ' error');
  });
}
Promise.all([check('/ws'), check('/ws-deflate')]).then(r => {
  const page = performance.getEntriesByType('navigation')[0].nextHopProtocol;
  fetch('/result', {method: 'POST', body: 'page ' + page + ' | ' + r.join(' | ')});
});
</script></body></html>
)";

class WebSocketBrowserTest : public test::TransportTest {};

TEST_P(WebSocketBrowserTest, ChromiumOpensWebSocketsOverH2AndEchoesByteExact) {
  EventLoopGroup group(transport(), loops(1, 12));
  auto router = std::make_shared<http::Router>();
  router->get("/", [](Context& ctx, http::HttpRequest&) {
    ctx.write(http::HttpResponse(200).content_type("text/html; charset=utf-8").body_view(kPage));
  });
  std::atomic<int> over_h2{0};
  // The page's outcome, POSTed when it is done.
  struct Outcome {
    std::mutex mutex;
    std::condition_variable posted;
    std::optional<std::string> text;
  };
  auto outcome = std::make_shared<Outcome>();
  router->post("/result", [outcome](Context& ctx, http::HttpRequest& request) {
    {
      std::lock_guard lock(outcome->mutex);
      outcome->text = std::string(request.body().view());
    }
    outcome->posted.notify_all();
    ctx.write(http::HttpResponse(204));
  });
  auto echo = ws::Callbacks{.on_open =
                                [&over_h2](Context& ctx, const ws::Handshake& h) {
                                  if (h.version == http::Version::http2) over_h2.fetch_add(1);
                                  const std::string version = h.version == http::Version::http2 ? "h2" : "http/1.1";
                                  ctx.write_and_flush(ws::Message::text(version + (h.deflate ? " deflate" : " plain")));
                                },
                            .on_message = [](Context& ctx, ws::Message& m) { ctx.write_and_flush(std::move(m)); }};
  ws::UpgradeOptions plain;
  plain.connection.max_message_size = 2 << 20;
  ws::websocket(*router, "/ws", echo, plain);
  ws::UpgradeOptions deflate = plain;
  deflate.deflate.enabled = true;
  ws::websocket(*router, "/ws-deflate", echo, deflate);
  http2::Settings settings;
  settings.enable_connect_protocol = true;
  auto tls = test_server_context(test_pki().localhost, {"h2", "http/1.1"});
  ChannelPtr server =
      ServerBootstrap()
          .group(group)
          .child_handler([router, tls, settings](Channel& ch) {
            ch.pipeline().add_last("tls", std::make_shared<TlsHandler>(tls));
            ch.pipeline().add_last(
                "alpn", std::make_shared<ApplicationProtocolNegotiationHandler>(
                            "http/1.1", [settings](Context& ctx, std::string_view protocol) {
                              if (protocol == "h2") {
                                ctx.pipeline().add_after(ctx.name(), "http2",
                                                         std::make_shared<http2::ServerCodec>(settings));
                              } else {
                                ctx.pipeline().add_after(ctx.name(), "http", std::make_shared<http::ServerCodec>());
                              }
                            }));
            ch.pipeline().add_last("router", router);
          })
          .bind(SocketAddress::loopback(0))
          .get();
  const std::string profile = test::write_temp_file("", ".chromium");
  ::unlink(profile.c_str());
  int status = -1;
  // The test CA is not Chromium's: --ignore-certificate-errors. Chromium runs in the background, in
  // a process group of its own, until the page has POSTed its outcome (bounded: a failure guard).
  const std::string pid = test::run_shell(
      "(setsid timeout 90 chromium --headless --no-sandbox --disable-gpu --ignore-certificate-errors --user-data-dir=" +
          profile + " https://localhost:" + std::to_string(server->local_address().port()) +
          "/ >/dev/null 2>&1 & echo $!)",
      status);
  std::string result = "(no outcome posted)";
  {
    std::unique_lock lock(outcome->mutex);
    if (outcome->posted.wait_for(lock, 90s, [&] { return outcome->text.has_value(); })) result = *outcome->text;
  }
  // Its session (setsid: Chromium's processes with it) is stopped, and waited for until only
  // zombies are left (nobody here may reap them); then the profile is removed.
  test::run_shell("kill -- -" + pid + " 2>/dev/null; timeout 20 sh -c 'while ps -o stat= -s " + pid +
                      " | grep -qv Z; do sleep 0.05; done'; rm -rf " + profile,
                  status);
  EXPECT_EQ(result, "page h2 | /ws h2 plain echoed | /ws-deflate h2 deflate echoed");
  EXPECT_EQ(over_h2.load(), 2) << "both handshakes were extended CONNECTs";
  server->close().wait_for(5s);
}

WEFT_ON_EVERY_TRANSPORT(WebSocketBrowserTest);

}  // namespace
}  // namespace weft
