// The HTTP/2 client's keepalive (ClientSettings::keepalive_time, keepalive_timeout,
// keepalive_without_calls) over sockets, on every transport: PINGs answered keep the connection;
// a server that stops answering (it reads and drops everything) gets its connection closed and the
// requests on it failed; weft's own server, with grpc-core's ping policy, ends a client that pings
// too often with GOAWAY(ENHANCE_YOUR_CALM); and without calls no PING leaves by default.

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>

#include "support/transports.h"
#include "weft/client/http2_connection.h"
#include "weft/codec/http2/client_codec.h"
#include "weft/codec/http2/server_codec.h"
#include "weft/weft.h"

using namespace std::chrono_literals;

namespace weft::http2 {
namespace {

using client::Http2Connection;

// A server that speaks just enough HTTP/2: its SETTINGS on connect, then it reads the client's
// frames, counts the PINGs, and ACKs them only while `answer` holds. It never answers a request.
class PingCounter final : public InboundHandler<ByteBuf> {
 public:
  struct Seen {
    std::atomic<int> pings{0};
    std::atomic<bool> answer{true};
    Promise<void> enough;  // `wanted` PINGs arrived
    int wanted = 1;
  };
  explicit PingCounter(std::shared_ptr<Seen> seen) : seen_(std::move(seen)) {}

  void channel_active(Context& ctx) override {
    static constexpr std::uint8_t kSettings[9] = {0, 0, 0, 4, 0, 0, 0, 0, 0};  // empty SETTINGS
    ByteBuf out = ctx.allocator().buffer(sizeof kSettings);
    out.write_bytes(kSettings, sizeof kSettings);
    ctx.write_and_flush(std::move(out));
    ctx.fire_channel_active();
  }
  void channel_read(Context& ctx, ByteBuf&& bytes) override {
    pending_.append(reinterpret_cast<const char*>(bytes.read_ptr()), bytes.readable_bytes());
    std::size_t at = 0;
    if (!preface_done_) {
      if (pending_.size() < 24) return;
      at = 24;
      preface_done_ = true;
    }
    while (pending_.size() - at >= 9) {
      const auto* h = reinterpret_cast<const std::uint8_t*>(pending_.data() + at);
      const std::size_t length = (std::size_t{h[0]} << 16) | (std::size_t{h[1]} << 8) | h[2];
      if (pending_.size() - at < 9 + length) break;
      if (h[3] == 0x6 && (h[4] & 0x1) == 0 && length == 8) {  // a PING, not an ACK
        if (seen_->answer.load()) {
          ByteBuf ack = ctx.allocator().buffer(17);
          const std::uint8_t head[9] = {0, 0, 8, 6, 1, 0, 0, 0, 0};
          ack.write_bytes(head, 9);
          ack.write_bytes(h + 9, 8);
          ctx.write_and_flush(std::move(ack));
        }
        if (seen_->pings.fetch_add(1) + 1 == seen_->wanted) seen_->enough.set_value();
      }
      at += 9 + length;
    }
    pending_.erase(0, at);
  }

 private:
  std::shared_ptr<Seen> seen_;
  std::string pending_;
  bool preface_done_ = false;
};

class Http2ClientKeepaliveTest : public test::TransportTest {
 protected:
  ChannelPtr raw_server(std::shared_ptr<PingCounter::Seen> seen) {
    return ServerBootstrap()
        .group(loops_)
        .child_handler([seen](Channel& ch) { ch.pipeline().add_last("pings", std::make_shared<PingCounter>(seen)); })
        .bind(SocketAddress::loopback(0))
        .get();
  }
  static Http2Connection::Options keepalive(Duration time, Duration timeout, bool without_calls) {
    Http2Connection::Options options;
    options.settings.keepalive_time = time;
    options.settings.keepalive_timeout = timeout;
    options.settings.keepalive_without_calls = without_calls;
    return options;
  }

  EventLoopGroup loops_{transport(), loops(2, 4)};
};

TEST_P(Http2ClientKeepaliveTest, AnsweredPingsKeepTheConnectionOpen) {
  auto seen = std::make_shared<PingCounter::Seen>();
  seen->wanted = 5;
  ChannelPtr server = raw_server(seen);
  std::shared_ptr<Http2Connection> client =
      Http2Connection::connect(loops_, server->local_address(), keepalive(5ms, 30s, /*without_calls=*/true)).get();
  ASSERT_TRUE(seen->enough.future().wait_for(60s)) << "the client sent " << seen->pings.load() << " PINGs";
  EXPECT_TRUE(client->channel().is_open()) << "every PING was answered";
  client->close().wait();
  server->close().wait();
}

TEST_P(Http2ClientKeepaliveTest, APingNotAnsweredClosesTheConnectionAndFailsItsRequests) {
  auto seen = std::make_shared<PingCounter::Seen>();
  seen->answer = false;
  ChannelPtr server = raw_server(seen);
  std::shared_ptr<Http2Connection> client =
      Http2Connection::connect(loops_, server->local_address(), keepalive(5ms, 50ms, /*without_calls=*/false)).get();
  // A request the server never answers: with it outstanding, PINGs leave.
  Future<http::HttpClientResponse> response = client->request(http::HttpClientRequest("GET", "/never"));
  ASSERT_TRUE(response.wait_for(60s)) << "the request did not fail";
  EXPECT_THROW(response.get(), ChannelClosedError);
  EXPECT_TRUE(client->channel().close_future().wait_for(60s));
  EXPECT_GE(seen->pings.load(), 1);
  server->close().wait();
}

TEST_P(Http2ClientKeepaliveTest, WithoutCallsNoPingLeavesByDefault) {
  auto seen = std::make_shared<PingCounter::Seen>();
  ChannelPtr server = raw_server(seen);
  std::shared_ptr<Http2Connection> client =
      Http2Connection::connect(loops_, server->local_address(), keepalive(1ms, 30s, /*without_calls=*/false)).get();
  // Many keepalive periods pass on the client's loop (timers, not sleeps: the loop runs them all).
  Promise<void> waited;
  const int periods = 50;
  auto count = std::make_shared<int>(0);
  auto tick = std::make_shared<std::function<void()>>();
  *tick = [&, count, tick] {
    if (++*count == periods) {
      waited.set_value();
    } else {
      client->loop().schedule(2ms, [tick] { (*tick)(); });
    }
  };
  client->loop().execute([tick] { (*tick)(); });
  ASSERT_TRUE(waited.future().wait_for(60s));
  // Not one PING in those fifty periods.
  EXPECT_EQ(seen->pings.load(), 0) << "a PING before the request";
  // Then one request: the PINGs start while it is outstanding. (Counted before it, not after the
  // first PING: at 1 ms a loaded machine lets several arrive before this thread looks.)
  seen->wanted = 1;
  Future<http::HttpClientResponse> response = client->request(http::HttpClientRequest("GET", "/never"));
  ASSERT_TRUE(seen->enough.future().wait_for(60s));
  EXPECT_GE(seen->pings.load(), 1);
  *tick = nullptr;
  client->close().wait();
  server->close().wait();
}

TEST_P(Http2ClientKeepaliveTest, PingingAWeftServerTooOftenEndsWithGoawayTooManyPings) {
  Settings settings;
  settings.min_ping_interval = std::chrono::hours(1);
  settings.max_ping_strikes = 2;
  settings.permit_keepalive_without_calls = true;
  ChannelPtr server = ServerBootstrap()
                          .group(loops_)
                          .child_handler([settings](Channel& ch) {
                            ch.pipeline().add_last("http2", std::make_shared<ServerCodec>(settings));
                          })
                          .bind(SocketAddress::loopback(0))
                          .get();
  std::shared_ptr<Http2Connection> client =
      Http2Connection::connect(loops_, server->local_address(), keepalive(2ms, 30s, /*without_calls=*/true)).get();
  ASSERT_TRUE(client->channel().close_future().wait_for(60s)) << "the server did not end the connection";
  Promise<bool> goaway;
  client->loop().execute([&] { goaway.set_value(client->codec().goaway_received()); });
  ASSERT_TRUE(goaway.future().wait_for(60s));
  EXPECT_TRUE(goaway.future().get()) << "closed by GOAWAY";
  server->close().wait();
}

WEFT_ON_EVERY_TRANSPORT(Http2ClientKeepaliveTest);

}  // namespace
}  // namespace weft::http2
