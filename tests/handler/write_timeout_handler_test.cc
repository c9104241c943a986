// WriteTimeoutHandler over real loopback sockets: it watches the channel's write queue, which an
// EmbeddedChannel does not have. Small socket buffers make a peer that does not read stall writes.

#include <gtest/gtest.h>

#include <atomic>
#include <string>

#include "support/blocking_client.h"
#include "weft/channel/bootstrap.h"
#include "weft/handler/idle_state_handler.h"
#include "weft/transport/epoll.h"

using namespace std::chrono_literals;

namespace weft {
namespace {

using test::BlockingClient;
using test::eventually;

constexpr std::size_t kPayload = 1 << 20;  // far more than the small socket buffers hold

// Writes kPayload bytes when the connection opens; records what reaches it as exceptions.
class Sender final : public InboundHandler<ByteBuf> {
 public:
  void channel_active(Context& ctx) override {
    ctx.write_and_flush(ByteBuf::copy_of(std::string(kPayload, 'w')));
    ctx.fire_channel_active();
  }
  void channel_read(Context&, ByteBuf&&) override {}
  void channel_inactive(Context& ctx) override {
    closed.store(true);
    ctx.fire_channel_inactive();
  }
  void exception_caught(Context&, std::exception_ptr error) override {
    try {
      std::rethrow_exception(error);
    } catch (const WriteTimeoutError&) {
      write_timeouts.fetch_add(1);
    } catch (...) {
      other_errors.fetch_add(1);
    }
  }
  std::atomic<bool> closed{false};
  std::atomic<int> write_timeouts{0};
  std::atomic<int> other_errors{0};
};

struct Server {
  explicit Server(Duration timeout) {
    server = ServerBootstrap()
                 .group(loops)
                 .child_option(option::send_buffer_size, 16 * 1024)
                 .child_handler([this, timeout](Channel& ch) {
                   ch.pipeline()
                       .add_last("timeout", std::make_shared<WriteTimeoutHandler>(timeout))
                       .add_last("sender", sender);
                 })
                 .bind(SocketAddress::loopback(0))
                 .get();
  }
  ~Server() { server->close().wait(); }
  std::uint16_t port() const { return server->local_address().port(); }

  EventLoopGroup loops{epoll(), 1};
  std::shared_ptr<Sender> sender = std::make_shared<Sender>();
  ChannelPtr server;
};

TEST(WriteTimeoutHandlerTest, StalledWriteClosesWithTypedError) {
  Server s(200ms);
  BlockingClient client(s.port(), {.receive_buffer = 16 * 1024});
  ASSERT_TRUE(client.is_open());
  // The client never reads: the write cannot complete, so the handler closes the channel.
  ASSERT_TRUE(eventually([&] { return s.sender->closed.load(); }, 10000ms));
  EXPECT_EQ(s.sender->write_timeouts.load(), 1);
  EXPECT_EQ(s.sender->other_errors.load(), 0);
  std::string got;
  const auto end = client.recv_until_end(&got, 10000ms);
  EXPECT_TRUE(end == test::StreamEnd::eof || end == test::StreamEnd::reset) << to_string(end);
  EXPECT_LT(got.size(), kPayload);
}

TEST(WriteTimeoutHandlerTest, WriteThatCompletesInTimeKeepsTheChannelOpen) {
  Server s(1000ms);
  BlockingClient client(s.port(), {.receive_buffer = 16 * 1024});
  ASSERT_TRUE(client.is_open());
  // Reading drains the payload well inside the timeout (the buffers hold only a fraction of it).
  auto got = client.recv_exact(kPayload, 10000ms);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(*got, std::string(kPayload, 'w'));
  // Past the write's deadline: nothing fired, the connection is still usable.
  std::this_thread::sleep_for(1500ms);
  EXPECT_FALSE(s.sender->closed.load());
  EXPECT_EQ(s.sender->write_timeouts.load(), 0);
  EXPECT_EQ(s.sender->other_errors.load(), 0);
  std::string none = client.recv_some(1, 50ms);
  EXPECT_TRUE(none.empty());
}

}  // namespace
}  // namespace weft
