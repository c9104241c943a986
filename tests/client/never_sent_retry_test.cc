// The retry rule for a request that may not be sent twice (POST), on every transport: sent again
// only when none of its bytes reached the socket before its connection closed (the write
// completion of its first byte says so). The other side of the rule -- a POST the server read,
// then dropped unanswered, is not sent again -- is Http1ClientTest.NonIdempotentRequestDroppedIsNotRetried.

#include <gtest/gtest.h>

#include <mutex>

#include "client/origin_servers.h"
#include "support/blocking_client.h"

namespace weft {
namespace {

using client::ClientOptions;
using client::HttpClient;

// The server's side: its first connection, held for the test to drop; the POSTs answered later.
struct StallState {
  std::mutex mutex;
  ChannelPtr first;
  int connections = 0;
  std::atomic<int> later_posts{0};
};

// On the first connection: answers the first request at its head, without its body, and then
// reads nothing more (the client's next request waits behind the upload's unread bytes). On the
// others: answers every request head with "ok".
class StallAfterFirstAnswer final : public InboundHandler<ByteBuf> {
 public:
  StallAfterFirstAnswer(std::shared_ptr<StallState> state, bool stall) : state_(std::move(state)), stall_(stall) {}
  void channel_read(Context& ctx, ByteBuf&& bytes) override {
    if (done_) return;
    seen_ += std::string(bytes.view());
    if (seen_.find("\r\n\r\n") == std::string::npos) return;
    seen_.clear();
    if (stall_) {
      done_ = true;
      ctx.channel().set_auto_read(false);
    } else {
      state_->later_posts.fetch_add(1);
    }
    ctx.write_and_flush(ByteBuf::copy_of("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"));
  }

 private:
  std::shared_ptr<StallState> state_;
  bool stall_;
  bool done_ = false;
  std::string seen_;
};

// Completes `to` with what `from` ends with (the response moved: it is move-only).
void settle_into(const Future<http::HttpClientResponse>& from, Promise<http::HttpClientResponse> to) {
  from.add_listener([to](const Future<http::HttpClientResponse>& f) mutable {
    if (f.error()) {
      to.set_error(f.error());
    } else {
      to.set_value(f.take());
    }
  });
}

class NeverSentRetryTest : public test::ClientTest {};

TEST_P(NeverSentRetryTest, PostWhoseBytesNeverLeftIsSentAgainOnAFreshConnection) {
  // A blocking send holds its loop until the upload is written: no answer can be read, and no
  // request handed out, while a request's bytes wait in the queue (a closed channel is the only
  // way never to send there, and it is refused at write time).
  if (is_blocking()) GTEST_SKIP() << "a request never waits behind unwritten bytes on the blocking transport";
  auto state = std::make_shared<StallState>();
  ChannelPtr server = ServerBootstrap()
                          .group(servers_)
                          .child_option(option::receive_buffer_size, 4096)
                          .child_handler([state](Channel& ch) {
                            bool first = false;
                            {
                              std::lock_guard lock(state->mutex);
                              first = state->connections++ == 0;
                              if (first) state->first = ch.shared_from_this();
                            }
                            ch.pipeline().add_last("stall", std::make_shared<StallAfterFirstAnswer>(state, first));
                          })
                          .bind(SocketAddress::loopback(0))
                          .get();
  ClientOptions options;
  options.max_connections_per_origin = 1;
  HttpClient client(clients_, options);
  const std::string url = test::url_of(server, "http", "/x");
  // More than the kernel's buffers hold (a 4 KiB receive buffer, the send buffer's autotuning
  // bound): most of it stays in the client's write queue once the server stops reading.
  const std::size_t upload = std::size_t{16} << 20;
  // From one loop, so that both share its pool: the second waits for the one connection.
  Promise<http::HttpClientResponse> first;
  Promise<http::HttpClientResponse> second;
  clients_.at(0).execute([&] {
    settle_into(client.request("POST", url, ByteBuf::copy_of(std::string(upload, 'u'))), first);
    settle_into(client.request("POST", url, ByteBuf::copy_of("two")), second);
  });
  EXPECT_EQ(test::answer_of(first.future()).body_view(), "ok");
  // The second is handed the connection once the first is answered, and queued behind its upload.
  ASSERT_TRUE(test::eventually([&] { return client.stats().connections_reused == 1; }, std::chrono::seconds(60)));
  ChannelPtr stalled;
  {
    std::lock_guard lock(state->mutex);
    stalled = state->first;
  }
  stalled->close();
  const http::HttpClientResponse& r = test::answer_of(second.future());
  EXPECT_EQ(r.body_view(), "ok");
  EXPECT_EQ(state->later_posts.load(), 1);  // the fresh connection's, the only one the server saw
  EXPECT_EQ(client.stats().retries, 1u);
  EXPECT_EQ(client.stats().connections_opened, 2u);
}

WEFT_ON_EVERY_TRANSPORT(NeverSentRetryTest);

}  // namespace
}  // namespace weft
