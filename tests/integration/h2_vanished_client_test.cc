// An HTTP/2 client that half-closes and then vanishes (FIN, then a RST) while one of its streams is
// still open: the server's connection closes at once, on every transport, over h2c and TLS. The
// open stream keeps the session wanting to read, and after the FIN nothing read the socket: on
// io_uring and blocking the RST went unseen and the connection stayed (a gRPC client of a server
// stream that exited; Settings::half_closed_timeout, off here, was the only bound).

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "support/channel_probe.h"
#include "support/h2_matrix.h"

using namespace std::chrono_literals;

namespace weft::http2 {
namespace {

using test::frame;
using test::ServerFrames;

class Http2VanishedClientTest : public test::H2MatrixTest {};
WEFT_H2_ON_EVERY_TRANSPORT(Http2VanishedClientTest);

TEST_P(Http2VanishedClientTest, AStreamStillOpenDoesNotKeepTheConnectionOfAClientThatReset) {
  auto dispatched = std::make_shared<Promise<void>>();
  auto router = std::make_shared<http::Router>();
  router->get("/never", [dispatched](Context&, http::HttpRequest&) { dispatched->set_value(); });  // no answer
  Settings settings;
  settings.half_closed_timeout = Duration::zero();
  auto probes = std::make_shared<test::ProbeRegistry>();
  serve(router, settings, [probes](Channel& ch) {
    ch.pipeline().add_last("probe", std::make_shared<test::ChannelProbe>(probes->add()));
  });

  test::RawH2Connection conn(port(), tls());
  ASSERT_TRUE(conn.is_open());
  ASSERT_TRUE(conn.send(test::raw_preface() + frame(NGHTTP2_SETTINGS, NGHTTP2_FLAG_ACK, 0, "") +
                        frame(NGHTTP2_HEADERS, test::kEndHeadersAndStream, 1, test::request_block("GET", "/never"))));
  ASSERT_TRUE(dispatched->future().wait_for(20s));
  std::shared_ptr<test::ProbeState> probe = probes->wait(0);
  ASSERT_NE(probe, nullptr);

  conn.shutdown_write();
  ServerFrames f;
  ASSERT_TRUE(conn.read_until(f, [](const ServerFrames& fr) {
    for (const auto& frame : fr.frames) {
      if (frame.type == NGHTTP2_GOAWAY) return true;
    }
    return false;
  })) << "no GOAWAY after the client's half-close";
  EXPECT_EQ(f.ended.count(1), 0u) << "the stream ended: the test no longer keeps the connection open";
  conn.reset();
  // (Bounded only so that a hang fails: the reset arrives at once on loopback.)
  EXPECT_TRUE(probe->inactive.future().wait_for(20s)) << "the connection outlived its client";
}

}  // namespace
}  // namespace weft::http2
