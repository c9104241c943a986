// Bootstrap::group(EventLoop&) on every transport: the connected channel runs on the loop it was
// given, also when that is the loop of the channel whose handler connects (a proxy's two channels).

#include <gtest/gtest.h>

#include <future>
#include <memory>

#include "support/blocking_client.h"
#include "support/transports.h"
#include "weft/channel/bootstrap.h"
#include "weft/core/error.h"

using namespace std::chrono_literals;

namespace weft {
namespace {

class BootstrapLoopTest : public test::TransportTest {
 protected:
  static ChannelPtr listen(EventLoopGroup& group, ChannelInitializer init = {}) {
    ServerBootstrap b;
    b.group(group).child_handler(init ? std::move(init) : [](Channel&) {});
    return b.bind(SocketAddress::loopback(0)).get();
  }
};

TEST_P(BootstrapLoopTest, TheChannelRunsOnTheLoopItWasGiven) {
  EventLoopGroup servers(transport(), loops(1, 4));
  EventLoopGroup clients(transport(), 3);
  ChannelPtr server = listen(servers);
  for (std::size_t i = 0; i < clients.size(); ++i) {
    ChannelPtr ch = Bootstrap().group(clients.at(i)).connect(server->local_address()).get();
    EXPECT_EQ(&ch->loop(), &clients.at(i));
    EXPECT_TRUE(ch->is_active());
    ch->close().get();
  }
}

// The proxy's pattern: the inbound channel's handler connects its outbound channel on its own loop.
// On the blocking transport that loop already serves the inbound channel: a typed error instead.
TEST_P(BootstrapLoopTest, AHandlerConnectsOnItsOwnChannelsLoop) {
  EventLoopGroup backends(transport(), loops(1, 2));
  ChannelPtr backend = listen(backends);
  EventLoopGroup front(transport(), loops(2, 2));
  std::promise<std::pair<EventLoop*, Future<ChannelPtr>>> outbound;
  const SocketAddress backend_address = backend->local_address();
  ChannelPtr server = listen(front, [&](Channel& inbound) {
    outbound.set_value({&inbound.loop(), Bootstrap().group(inbound.loop()).connect(backend_address)});
  });
  test::BlockingClient client(server->local_address().port());
  ASSERT_TRUE(client.is_open());
  auto ready = outbound.get_future();
  ASSERT_EQ(ready.wait_for(5s), std::future_status::ready);
  auto [inbound_loop, connected] = ready.get();
  ASSERT_TRUE(connected.wait_for(5s));
  if (is_blocking()) {
    ASSERT_NE(connected.error(), nullptr);
    EXPECT_THROW(std::rethrow_exception(connected.error()), ChannelLimitError);
    return;
  }
  ASSERT_EQ(connected.error(), nullptr);
  EXPECT_EQ(&connected.get()->loop(), inbound_loop);
  connected.get()->close().get();
}

TEST(BootstrapLoop, ALoopWithoutATransportIsRefusedAtOnce) {
  EventLoop loop(std::make_unique<BasicDriver>());
  EXPECT_THROW(Bootstrap().group(loop), std::invalid_argument);
}

WEFT_ON_EVERY_TRANSPORT(BootstrapLoopTest);

}  // namespace
}  // namespace weft
