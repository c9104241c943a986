// A browser as the client: headless Chromium loads a page from a weft server over TLS, where ALPN
// chooses h2, and the page makes 100 fetches at once on that connection; then nghttp (nghttp2's
// client) fetches the same routes with prior knowledge over h2c. On every transport.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <memory>
#include <string>
#include <iterator>
#include <sstream>
#include <string_view>
#include <vector>

#include "support/shell.h"
#include "support/tls_certs.h"
#include "support/transports.h"
#include "weft/codec/http1/router.h"
#include "weft/codec/http1/server_codec.h"
#include "weft/codec/http2/cleartext_detector.h"
#include "weft/codec/http2/server_codec.h"
#include "weft/codec/tls/application_protocol_negotiation_handler.h"
#include "weft/codec/tls/tls_handler.h"
#include "weft/weft.h"

using namespace std::chrono_literals;
using ::testing::HasSubstr;

namespace weft {
namespace {

using test::test_pki;
using test::test_server_context;

// The page: 100 fetches of /json at once; the outcome is written into the DOM, with the protocol
// the browser used for the page and for the fetches.
constexpr std::string_view kPage = R"(<!doctype html>
<html><body><div id="out">pending</div><script>
Promise.all(Array.from({length: 100}, (_, i) => fetch('/json?i=' + i).then(r => r.json())))
  .then(all => {
    const ok = all.filter(j => j.message === 'Hello, World!').length;
    const protocols = new Set(performance.getEntriesByType('resource').map(e => e.nextHopProtocol));
    const page = performance.getEntriesByType('navigation')[0].nextHopProtocol;
    document.getElementById('out').textContent = 'fetched ' + ok + ' page ' + page + ' fetches ' + [...protocols].join(',');
  })
  .catch(e => { document.getElementById('out').textContent = 'failed ' + e; });
</script></body></html>
)";

std::shared_ptr<http::Router> make_router() {
  auto router = std::make_shared<http::Router>();
  router->get("/", [](Context& ctx, http::HttpRequest&) {
    ctx.write(http::HttpResponse(200).content_type("text/html; charset=utf-8").body_view(kPage));
  });
  router->get("/json", [](Context& ctx, http::HttpRequest&) {
    ctx.write(http::HttpResponse(200).content_type("application/json").body_view(R"({"message":"Hello, World!"})"));
  });
  return router;
}

std::string run(const std::string& command, int& status) { return test::run_shell(command, status); }

class Http2BrowserTest : public test::TransportTest {};

TEST_P(Http2BrowserTest, ChromiumLoadsAPageAndMakesAHundredFetchesOverH2) {
  EventLoopGroup group(transport(), loops(1, 12));
  auto router = make_router();
  auto tls = test_server_context(test_pki().localhost, {"h2", "http/1.1"});
  ChannelPtr server =
      ServerBootstrap()
          .group(group)
          .child_handler([router, tls](Channel& ch) {
            ch.pipeline().add_last("tls", std::make_shared<TlsHandler>(tls));
            ch.pipeline().add_last("alpn", std::make_shared<ApplicationProtocolNegotiationHandler>(
                                               "http/1.1", [](Context& ctx, std::string_view protocol) {
                                                 if (protocol == "h2") {
                                                   ctx.pipeline().add_after(ctx.name(), "http2",
                                                                            std::make_shared<http2::ServerCodec>());
                                                 } else {
                                                   ctx.pipeline().add_after(ctx.name(), "http",
                                                                            std::make_shared<http::ServerCodec>());
                                                 }
                                               }));
            ch.pipeline().add_last("router", router);
          })
          .bind(SocketAddress::loopback(0))
          .get();
  const std::string profile = test::write_temp_file("", ".chromium");
  ::unlink(profile.c_str());
  int status = -1;
  // Virtual time lets the page's fetches finish before the DOM is dumped; the certificate is the
  // test CA's, which Chromium does not know: --ignore-certificate-errors.
  const std::string dom =
      run("timeout 120 chromium --headless --no-sandbox --disable-gpu --ignore-certificate-errors "
          "--virtual-time-budget=30000 --user-data-dir=" + profile + " --dump-dom https://localhost:" +
              std::to_string(server->local_address().port()) + "/ 2>/dev/null",
          status);
  run("rm -rf " + profile, status);
  EXPECT_THAT(dom, HasSubstr("fetched 100 page h2 fetches h2"));
  server->close().wait_for(5s);
}

TEST_P(Http2BrowserTest, NghttpFetchesWithPriorKnowledge) {
  EventLoopGroup group(transport(), loops(1, 6));
  auto router = make_router();
  ChannelPtr server = ServerBootstrap()
                          .group(group)
                          .child_handler([router](Channel& ch) {
                            ch.pipeline().add_last("detect", std::make_shared<http2::CleartextDetector>());
                            ch.pipeline().add_last("router", router);
                          })
                          .bind(SocketAddress::loopback(0))
                          .get();
  const std::string base = "http://127.0.0.1:" + std::to_string(server->local_address().port());
  int status = -1;
  // -n: bodies are not written out; -s: statistics per stream (one line each, with its status).
  const std::string out =
      run("timeout 60 nghttp -n -s " + base + "/json " + base + "/json?a " + base + "/ 2>&1", status);
  EXPECT_EQ(status, 0) << out;
  EXPECT_THAT(out, HasSubstr("/json"));
  // The statistics end with a line per stream: id responseEnd requestStart process code size path.
  std::size_t answered = 0;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream fields(line);
    std::vector<std::string> f{std::istream_iterator<std::string>(fields), std::istream_iterator<std::string>()};
    if (f.size() == 7 && f[6].starts_with("/") && f[4] == "200") ++answered;
  }
  EXPECT_EQ(answered, 3u) << out;
  server->close().wait_for(5s);
}

WEFT_ON_EVERY_TRANSPORT(Http2BrowserTest);

}  // namespace
}  // namespace weft
