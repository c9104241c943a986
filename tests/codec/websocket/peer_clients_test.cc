// Other implementations as clients of weft's WebSocket server, on every transport: node's ws
// (Debian node-ws), with and without permessage-deflate, and libwebsockets' test client (Debian
// libwebsockets-test-server), which offers permessage-deflate and compresses what it sends.

#include <gtest/gtest.h>

#include <atomic>
#include <csignal>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <optional>
#include <regex>
#include <string>
#include <thread>

#include "autobahn_cases.h"
#include "support/blocking_client.h"
#include "support/shell.h"
#include "support/tls_certs.h"
#include "support/transports.h"
#include "weft/channel/bootstrap.h"
#include "weft/codec/http1/router.h"
#include "weft/codec/http1/server_codec.h"
#include "weft/codec/websocket/upgrade.h"

using namespace std::chrono_literals;

namespace weft::websocket_peer_clients_test {
namespace {

using websocket_cases::echo_coroutine;

bool installed(const std::string& probe) {
  int status = -1;
  test::run_shell(probe + " >/dev/null 2>&1", status);
  return status == 0;
}

// A WebSocket client in node's ws: each path's echoes are checked byte-exact (text with multi-byte
// characters, an empty binary, 70,000 random bytes, 160,000 compressible bytes, just under 1 MiB of
// random bytes, a message in three fragments), a ping is answered, then a close 1000 is echoed.
// Prints "PATH SUBPROTOCOL EXTENSIONS CLOSE-CODE" per path; anything else is a failure.
constexpr const char* kNodeClient = R"JS(
const WebSocket = require('ws');
const crypto = require('crypto');
function open(url, deflate) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, ['chat'], {perMessageDeflate: deflate ? {threshold: 0} : false, maxPayload: 2 << 20});
    ws.binaryType = 'nodebuffer';
    const queue = [], waiters = [];
    ws.on('message', (data, isBinary) => { const m = {data, isBinary}; waiters.length ? waiters.shift()(m) : queue.push(m); });
    ws.recv = () => new Promise(r => queue.length ? r(queue.shift()) : waiters.push(r));
    ws.on('open', () => resolve(ws));
    ws.on('error', e => { console.log('FAILED', e.message); process.exit(1); });
    ws.on('unexpected-response', (req, res) => reject(new Error('status ' + res.statusCode)));
  });
}
async function check(ws, payload, binary) {
  ws.send(payload, {binary});
  const m = await ws.recv();
  if (m.isBinary !== binary || !Buffer.from(payload).equals(m.data)) throw new Error(`echo differs: ${payload.length} bytes`);
}
async function main(port, path, deflate) {
  const ws = await open(`ws://127.0.0.1:${port}${path}`, deflate);
  await check(ws, 'h\u00e9llo \u263a', false);
  await check(ws, Buffer.alloc(0), true);
  await check(ws, crypto.randomBytes(70000), true);
  await check(ws, 'deflate '.repeat(20000), false);
  await check(ws, crypto.randomBytes((1 << 20) - 16), true);
  ws.send('frag', {fin: false}); ws.send('men', {fin: false}); ws.send('ted', {fin: true});
  const f = await ws.recv();
  if (f.isBinary || f.data.toString() !== 'fragmented') throw new Error('fragments');
  await new Promise((resolve, reject) => { ws.once('pong', d => d.toString() === 'p' ? resolve() : reject(new Error('pong'))); ws.ping('p'); });
  const ext = Object.keys(ws._extensions).join(',') || 'none';
  const closed = new Promise(r => ws.on('close', code => r(code)));
  ws.close(1000, 'bye');
  console.log(`${path} ${ws.protocol || '-'} ${ext} ${await closed}`);
}
const [port, ...paths] = process.argv.slice(2);
(async () => { for (const p of paths) { const [path, d] = p.split(':'); await main(port, path, d === 'deflate'); } })()
  .catch(e => { console.log('FAILED', e.message); process.exit(1); });
)JS";

class WebSocketPeerClientsTest : public test::TransportTest {
 protected:
  void SetUp() override {
    group_.emplace(transport(), loops(1, 6));
    auto router = std::make_shared<http::Router>();
    const ws::Callbacks echo{.on_message = [](Context& ctx, ws::Message& m) { ctx.write_and_flush(std::move(m)); }};
    ws::UpgradeOptions chat;
    chat.subprotocols = {"chat"};
    ws::websocket(*router, "/echo", echo, chat);
    ws::UpgradeOptions deflate = chat;
    deflate.deflate.enabled = true;
    ws::websocket(*router, "/co", echo_coroutine, deflate);
    ws::websocket(*router, "/deflate", echo, deflate);
    // libwebsockets' test client opens the path twice: lws-mirror-protocol, which sends drawing
    // commands ("c #RRGGBB X Y R;") as fast as it can, and dumb-increment-protocol, which only
    // listens. The mirror connection's messages are checked; after kMirrorMessages the server closes
    // it (1000) and records how the client answered. "/lws" echoes them, without compression;
    // "/lws-deflate" agrees permessage-deflate and only reads (the client compresses what it
    // sends). It does not echo because libwebsockets 4.1's client spins on an uncompressed message
    // under permessage-deflate (warmcat/libwebsockets#2794), and a short message leaves weft
    // uncompressed, as RFC 7692 allows, when compressing would not shrink it.
    ws::UpgradeOptions lws;
    lws.subprotocols = {"lws-mirror-protocol", "dumb-increment-protocol"};
    ws::websocket(*router, "/lws", lws_callbacks(true), lws);
    lws.deflate.enabled = true;
    ws::websocket(*router, "/lws-deflate", lws_callbacks(false), lws);
    server_ = ServerBootstrap()
                  .group(*group_)
                  .child_handler([router](Channel& ch) {
                    ch.pipeline().add_last("http", std::make_shared<http::ServerCodec>());
                    ch.pipeline().add_last("router", router);
                  })
                  .bind(SocketAddress::loopback(0))
                  .get();
    port_ = server_->local_address().port();
  }
  void TearDown() override {
    server_->close().wait();
    group_->shutdown_gracefully(0ms, 5s).wait();
  }

  static constexpr int kMirrorMessages = 50;

  ws::Callbacks lws_callbacks(bool echo) {
    return ws::Callbacks{.on_open = [this](Context&, const ws::Handshake& h) { on_lws_open(h); },
                         .on_message = [this, echo](Context& ctx, ws::Message& m) { on_lws_message(ctx, m, echo); },
                         .on_close = [this](Context&, const ws::Message& m) { on_lws_close(m); }};
  }
  void on_lws_open(const ws::Handshake& h) {
    std::lock_guard lock(mutex_);
    if (h.subprotocol == "lws-mirror-protocol" && h.deflate) ++mirrors_deflated_;
  }
  // Connections are told apart by their context: each WebSocket has its own pipeline.
  void on_lws_message(Context& ctx, ws::Message& m, bool echo) {
    static const std::regex kDraw("c #[0-9A-Fa-f]{6} [0-9]+ [0-9]+ [0-9]+;");
    std::lock_guard lock(mutex_);
    if (!m.is_text() || !std::regex_match(std::string(m.view()), kDraw)) {
      if (bad_messages_++ == 0) first_bad_ = std::string(m.view());
      return;
    }
    const int seen = ++mirror_counts_[&ctx];
    if (echo) ctx.write_and_flush(std::move(m));
    if (seen == kMirrorMessages) ctx.write_and_flush(ws::Message::close(1000, "enough"));
  }
  void on_lws_close(const ws::Message& m) {
    std::lock_guard lock(mutex_);
    if (m.close_code() == 1000) ++clean_closes_;
  }
  // Runs libwebsockets' test client against `path` until the server has closed a mirror connection
  // cleanly; returns the client's log. The client reconnects forever, so it runs in the background
  // and is stopped then (`timeout` bounds it should the test fail first).
  std::string run_lws_client(const std::string& path) {
    const std::string pid_file = test::write_temp_file("", ".pid");
    const std::string log_file = test::write_temp_file("", ".log");
    std::thread client([&] {
      int status = -1;
      test::run_shell("timeout 60 libwebsockets-test-client 127.0.0.1" + path + " --port=" + std::to_string(port_) +
                          " >" + log_file + " 2>&1 & echo $! >" + pid_file + "; wait",
                      status);
    });
    const bool closed = test::eventually(
        [&] {
          std::lock_guard lock(mutex_);
          return clean_closes_ >= 1;
        },
        60000ms);
    int status = -1;
    test::run_shell("kill $(cat " + pid_file + ") 2>/dev/null", status);
    client.join();
    std::ifstream log(log_file);
    std::string client_log((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
    std::lock_guard lock(mutex_);
    std::string counts;
    for (const auto& [ctx, n] : mirror_counts_) counts += " " + std::to_string(n);
    EXPECT_TRUE(closed) << "mirror messages per connection:" << counts << "\n" << client_log;
    EXPECT_EQ(bad_messages_, 0) << first_bad_;
    return client_log;
  }

  std::optional<EventLoopGroup> group_;
  ChannelPtr server_;
  int port_ = 0;
  std::mutex mutex_;
  int mirrors_deflated_ = 0;
  int bad_messages_ = 0;
  std::string first_bad_;
  int clean_closes_ = 0;
  std::map<Context*, int> mirror_counts_;
};

TEST_P(WebSocketPeerClientsTest, NodeWsEchoesByteExactWithAndWithoutDeflate) {
  if (!installed("NODE_PATH=/usr/share/nodejs node -e \"require('ws')\""))
    GTEST_SKIP() << "node with node-ws is not installed (scripts/install-deps.sh)";
  const std::string script = test::write_temp_file(kNodeClient, ".js");
  int status = -1;
  const std::string out =
      test::run_shell("NODE_PATH=/usr/share/nodejs timeout 60 node " + script + " " + std::to_string(port_) +
                          " /echo /echo:deflate /deflate:deflate /co:deflate 2>&1",
                      status);
  EXPECT_EQ(status, 0) << out;
  // Deflate is agreed only where the route enables it and the client offers it.
  EXPECT_EQ(out,
            "/echo chat none 1000\n"
            "/echo chat none 1000\n"
            "/deflate chat permessage-deflate 1000\n"
            "/co chat permessage-deflate 1000\n");
}

TEST_P(WebSocketPeerClientsTest, LibwebsocketsTestClientIsEchoedAndClosedCleanly) {
  if (!installed("command -v libwebsockets-test-client"))
    GTEST_SKIP() << "libwebsockets-test-client is not installed (scripts/install-deps.sh)";
  run_lws_client("/lws");
  std::lock_guard lock(mutex_);
  EXPECT_EQ(mirrors_deflated_, 0);
}

TEST_P(WebSocketPeerClientsTest, LibwebsocketsTestClientsCompressedMessagesInflateAndItClosesCleanly) {
  if (!installed("command -v libwebsockets-test-client"))
    GTEST_SKIP() << "libwebsockets-test-client is not installed (scripts/install-deps.sh)";
  const std::string log = run_lws_client("/lws-deflate");
  std::lock_guard lock(mutex_);
  EXPECT_GE(mirrors_deflated_, 1) << "permessage-deflate agreed with libwebsockets\n" << log;
}

WEFT_ON_EVERY_TRANSPORT(WebSocketPeerClientsTest);

}  // namespace
}  // namespace weft::websocket_peer_clients_test
