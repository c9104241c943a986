// What readers that never read cost an HTTP/2 server, over real sockets on every transport, h2c and
// TLS (the RSS of this process, the server's):
// - A client that opens its flow-control windows as wide as HTTP/2 allows, asks for 100 answers of
//   1 MiB and never reads costs a bounded queue, not the 100 MiB the windows allow. The epoll and
//   io_uring channels stop at the write high-water mark; a blocking send holds the connection's
//   writer. The server serves others meanwhile.
// - Stream channels that never read hold about their flow-control windows of request body, not a
//   64 KiB read buffer per DATA frame they were sent (issue 28, item 8).

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <memory>
#include <string>

#include "support/blocking_client.h"
#include "support/h2_frames.h"
#include "support/h2_matrix.h"
#include "support/resident_memory.h"
#include "support/sanitizers.h"
#include "weft/weft.h"

using namespace std::chrono_literals;

namespace weft::http2 {
namespace {

using http::HttpRequest;
using http::HttpResponse;
using test::frame;
using test::request_block;
using test::ServerFrames;

// What the server queued for its first connection (at the socket's end: ciphertext over TLS).
class NeverReadQueueWatch final : public DuplexHandler<ByteBuf, ByteBuf, ByteBuf, ByteBuf> {
 public:
  void channel_read(Context& ctx, ByteBuf&& bytes) override { ctx.fire_read(std::move(bytes)); }
  void write(Context& ctx, ByteBuf&& bytes) override {
    written += bytes.readable_bytes();
    ctx.write(std::move(bytes));
    max_pending = std::max<std::size_t>(max_pending, ctx.channel().pending_write_bytes());
  }
  void writability_changed(Context& ctx) override {
    if (!ctx.channel().is_writable()) unwritable_seen = true;
    ctx.fire_writability_changed();
  }
  std::atomic<std::size_t> written{0};
  std::atomic<std::size_t> max_pending{0};
  std::atomic<bool> unwritable_seen{false};
};

class Http2NeverReadingClientTest : public test::H2MatrixTest {};

TEST_P(Http2NeverReadingClientTest, HundredStreamsOfAnswersNeverReadCostABoundedQueue) {
  // The answers share one body (slices of one block): what the server holds beyond it is its queue.
  auto mebibyte = std::make_shared<const ByteBuf>(ByteBuf::copy_of(std::string(std::size_t{1} << 20, 'm')));
  auto router = std::make_shared<http::Router>();
  router->get("/big", [mebibyte](Context& ctx, HttpRequest&) { ctx.write(HttpResponse(200).body(mebibyte->slice())); });
  router->get("/plaintext", [](Context& ctx, HttpRequest&) { ctx.write(HttpResponse(200).body_view("Hello, World!")); });
  auto watch = std::make_shared<NeverReadQueueWatch>();
  auto watched = std::make_shared<std::atomic<bool>>(false);  // the first connection only
  serve(router, Settings{}, [watch, watched](Channel& ch) {
    if (!watched->exchange(true)) ch.pipeline().add_last("watch", watch);
  });
  const std::size_t rss_before = test::resident_bytes();

  test::RawH2Connection greedy(port(), tls(), 32 * 1024);
  ASSERT_TRUE(greedy.is_open());
  std::string out = test::raw_preface() + frame(NGHTTP2_SETTINGS, NGHTTP2_FLAG_ACK, 0, "") +
                    frame(NGHTTP2_SETTINGS, 0, 0, test::setting(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 0x7fffffff)) +
                    frame(NGHTTP2_WINDOW_UPDATE, 0, 0, test::u32(0x7fffffff - 65535));
  for (std::uint32_t id = 1; id <= 199; id += 2) {
    out += frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS | NGHTTP2_FLAG_END_STREAM, id, request_block("GET", "/big"));
  }
  ASSERT_TRUE(greedy.send(out));
  // The server has stalled on this client: its channel turned unwritable, or (blocking) its writer
  // waits in a send past what the kernel's buffers take.
  const bool blocking = transport().name() == "blocking";
  ASSERT_TRUE(test::eventually(
      [&] { return blocking ? watch->written.load() >= (std::size_t{1} << 20) : watch->unwritable_seen.load(); }, 20000ms))
      << "the server never stalled; written " << watch->written.load();

  // Others are served meanwhile.
  test::RawH2Connection other(port(), tls());
  ASSERT_TRUE(other.is_open());
  ASSERT_TRUE(other.send(test::raw_preface() + frame(NGHTTP2_SETTINGS, NGHTTP2_FLAG_ACK, 0, "") +
                         frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS | NGHTTP2_FLAG_END_STREAM, 1,
                               request_block("GET", "/plaintext"))));
  ServerFrames f;
  ASSERT_TRUE(other.read_until(f, [](const ServerFrames& fr) { return fr.ended.count(1) || fr.goaway; }));
  EXPECT_EQ(f.status[1], 200);

  const std::size_t rss_after = test::resident_bytes();
  std::printf("client that never reads (%s, %s): %zu bytes written, largest queue %zu, RSS %+ld KiB\n",
              std::string(transport().name()).c_str(), tls() ? "tls" : "h2c", watch->written.load(),
              watch->max_pending.load(), (static_cast<long>(rss_after) - static_cast<long>(rss_before)) / 1024);
  // What the codec queues stops at the high-water mark, plus one serialisation step (the output it
  // spills past 64 KiB, a DATA frame's payload, TLS records' overhead).
  constexpr std::size_t kHigh = ChannelConfig{}.write_buffer_high_water_mark;
  EXPECT_LE(watch->max_pending.load(), kHigh + 256 * 1024);
  // What left is what the kernel's buffers took: far less than the 100 MiB the windows allow.
  EXPECT_LT(watch->written.load(), std::size_t{16} << 20) << "of 100 MiB asked for";
#if !defined(WEFT_TEST_SANITIZED)
  EXPECT_LE(rss_after, rss_before + (std::size_t{16} << 20)) << "the server's memory must stay bounded";
#endif
}

// 99 stream channels that never read are each sent 7 DATA frames of 8 KiB (within their windows),
// one frame per read of the server: the client waits for the answer to a PING sent after each, so
// every frame arrives in a read buffer of its own, the worst case for payloads kept as slices of
// the input. What the children hold is about their windows (5.5 MiB in all); a slice per frame
// would pin 693 read buffers of 64 KiB (43 MiB).
TEST_P(Http2NeverReadingClientTest, StreamChannelsThatNeverReadHoldAboutTheirWindows) {
  constexpr std::uint32_t kStreams = 99, kFrames = 7, kFrame = 8192;
  auto children = std::make_shared<std::atomic<std::uint32_t>>(0);
  Settings settings;
  settings.max_glitches = 100000;  // the PINGs that pace this client are not an attack here
  settings.stream_initializer = [children](const http::RequestHead&) -> StreamInitializer {
    return [children](StreamChannel& ch) {
      ch.config().auto_read = false;  // and no handler ever asks for a read
      children->fetch_add(1);
    };
  };
  serve(std::make_shared<http::Router>(), settings);
  test::RawH2Connection conn(port(), tls());
  ASSERT_TRUE(conn.is_open());
  std::string open = test::raw_preface() + frame(NGHTTP2_SETTINGS, NGHTTP2_FLAG_ACK, 0, "");
  for (std::uint32_t i = 0; i < kStreams; ++i) {
    open += frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS, 1 + 2 * i, request_block("POST", "/upload"));
  }
  ASSERT_TRUE(conn.send(open));
  ASSERT_TRUE(test::eventually([&] { return children->load() == kStreams; }, 20000ms)) << children->load();
  const std::size_t rss_before = test::resident_bytes();

  const std::string payload(kFrame, 'd');
  ServerFrames f;
  std::size_t pinged = 0;
  for (std::uint32_t k = 0; k < kFrames; ++k) {
    for (std::uint32_t i = 0; i < kStreams; ++i) {
      ASSERT_TRUE(conn.send(frame(NGHTTP2_DATA, 0, 1 + 2 * i, payload) + frame(NGHTTP2_PING, 0, 0, std::string(8, 'p'))));
      ++pinged;
      ASSERT_TRUE(conn.read_until(f, [pinged](const ServerFrames& fr) {
        return fr.count(NGHTTP2_PING) - static_cast<std::size_t>(fr.pings) >= pinged || fr.goaway;
      })) << "no PING ACK for frame " << pinged;
      ASSERT_FALSE(f.goaway.has_value()) << "GOAWAY " << *f.goaway << " " << f.goaway_debug;
    }
  }
  const std::size_t rss_after = test::resident_bytes();
  const long grown_kib = (static_cast<long>(rss_after) - static_cast<long>(rss_before)) / 1024;
  std::printf("%u stream channels that never read (%s, %s), %u bytes sent each: RSS %+ld KiB\n", kStreams,
              std::string(transport().name()).c_str(), tls() ? "tls" : "h2c", kFrames * kFrame, grown_kib);
  EXPECT_TRUE(f.resets.empty()) << "within their windows, no stream is reset";
#if !defined(WEFT_TEST_SANITIZED)
  // Their windows (65,535 bytes each) and as much again for the read buffers and the allocator's
  // rounding: 12.4 MiB.
  EXPECT_LE(rss_after, rss_before + kStreams * (Settings{}.initial_window_size + 64 * 1024))
      << "the children pin more than their windows";
#endif
}

WEFT_H2_ON_EVERY_TRANSPORT(Http2NeverReadingClientTest);

}  // namespace
}  // namespace weft::http2
