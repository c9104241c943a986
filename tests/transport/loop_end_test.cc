// A socket channel that outlives its event loop, on every transport: a manual-clock loop shut down
// while a handler ends the channel itself (so that it stays open), then the channel closed. Its
// handlers are freed by the close -- no later turn of the loop would -- so that a handler holding
// its channel (as a Connection<> does) does not keep channel, socket and handler alive for ever.

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <any>
#include <cerrno>
#include <memory>
#include <string>
#include <vector>

#include "support/blocking_client.h"
#include "support/holds_its_channel.h"
#include "support/transports.h"
#include "weft/channel/channel.h"
#include "weft/channel/events.h"
#include "weft/core/event_loop.h"

using namespace std::chrono_literals;

namespace weft {
namespace {

class SocketLoopEndTest : public test::TransportTest {};
WEFT_ON_EVERY_TRANSPORT(SocketLoopEndTest);

using test::HoldsItsChannel;

// A connected descriptor, as a server channel would accept it (from a listener of the test's own).
AcceptedSocket accept_one(test::BlockingClient& client) {
  const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (listener < 0 || ::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::listen(listener, 1) != 0 || ::getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    ADD_FAILURE() << "no listener: errno " << errno;
    if (listener >= 0) ::close(listener);
    return {};
  }
  client = test::BlockingClient(ntohs(address.sin_port));
  const int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
  ::close(listener);
  EXPECT_GE(fd, 0) << "errno " << errno;
  return AcceptedSocket(fd, SocketAddress::loopback(ntohs(address.sin_port)));
}

TEST_P(SocketLoopEndTest, ASocketChannelClosedAfterItsLoopTerminatedIsFreed) {
  EventLoop::Options options;
  options.manual_clock = true;  // driven by this thread, which stays its loop thread after the end
  options.driver_factory = &transport();
  EventLoop loop(transport().create_driver(), options);
  test::BlockingClient client;
  AcceptedSocket accepted = accept_one(client);
  ASSERT_GE(accepted.fd(), 0);
  ChannelConfig config;
  config.auto_read = false;  // nothing to read: the loop is driven by hand
  ChannelPtr channel = transport().new_accepted_channel(loop, config, std::move(accepted));
  const std::weak_ptr<Channel> watch = channel;
  auto log = std::make_shared<std::vector<std::string>>();
  channel->pipeline().add_last("holder", std::make_shared<HoldsItsChannel>(log));
  ASSERT_TRUE(channel->register_channel().is_done());
  loop.run_pending();
  ASSERT_TRUE(channel->is_active());
  ASSERT_TRUE(loop.shutdown_gracefully(0ms, 0ms).is_done());
  ASSERT_TRUE(loop.is_terminated());
  ASSERT_TRUE(channel->is_open()) << "the holder ended the channel itself: it outlives the loop";
  EXPECT_TRUE(channel->close().is_done());
  EXPECT_EQ(*log, (std::vector<std::string>{"removed", "freed"}));
  channel.reset();
  EXPECT_TRUE(watch.expired()) << "the channel is not kept by the handler that held it";
}

}  // namespace
}  // namespace weft
