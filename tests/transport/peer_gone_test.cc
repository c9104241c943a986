// A connection whose peer has gone (a reset) ends on every transport even while nothing reads its
// socket: reading suspended by backpressure, or the input already ended (half-closure allowed).
// Before, io_uring armed no operation then and the blocking transport left the socket out of its
// poll: the reset went unseen and the channel stayed open for good (a gRPC client that exited while
// the server's stream waited for a window that its FIN meant could never open).

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "support/blocking_client.h"
#include "support/channel_probe.h"
#include "support/transports.h"
#include "weft/channel/bootstrap.h"

using namespace std::chrono_literals;

namespace weft {
namespace {

class PeerGoneTest : public test::TransportTest {
 protected:
  // A server whose accepted channels carry a probe, then `handler`.
  ChannelPtr start_server(std::shared_ptr<Handler> handler, bool half_closure) {
    ServerBootstrap b;
    b.group(group_).child_option(option::allow_half_closure, half_closure).child_handler([this, handler](Channel& ch) {
      ch.pipeline().add_last("probe", std::make_shared<test::ChannelProbe>(probes_.add()));
      if (handler) ch.pipeline().add_last("handler", handler);
    });
    return b.bind(SocketAddress::loopback(0)).get();
  }

  test::ProbeRegistry probes_;  // outlives the group: the child initializer refers to it
  EventLoopGroup group_{transport(), loops(1, 3)};
};
WEFT_ON_EVERY_TRANSPORT(PeerGoneTest);

// Echoes the first read, then suspends reading for good (a consumer that never catches up).
class EchoThenSuspend final : public InboundHandler<ByteBuf> {
 public:
  void channel_read(Context& ctx, ByteBuf&& bytes) override {
    reading_.hold(ctx.channel());
    ctx.write_and_flush(std::move(bytes));
  }

 private:
  ReadSuspension reading_;
};

TEST_P(PeerGoneTest, AChannelNotReadingNoticesItsPeersReset) {
  ChannelPtr server = start_server(std::make_shared<EchoThenSuspend>(), false);
  test::BlockingClient client(server->local_address().port());
  ASSERT_TRUE(client.is_open());
  ASSERT_TRUE(client.send_all("x"));
  ASSERT_EQ(client.recv_exact(1, 20000ms), std::optional<std::string>("x"));  // read, then suspended
  std::shared_ptr<test::ProbeState> probe = probes_.wait(0);
  ASSERT_NE(probe, nullptr);
  ASSERT_TRUE(client.send_all("unread"));
  client.reset();
  // (Bounded only so that a hang fails: the reset arrives at once on loopback.)
  EXPECT_TRUE(probe->inactive.future().wait_for(20s)) << "the reset was not noticed";
  server->close().wait();
  group_.shutdown_gracefully(0ms, 5s).wait();
}

TEST_P(PeerGoneTest, AChannelWhoseInputEndedNoticesItsPeersReset) {
  ChannelPtr server = start_server(nullptr, true);
  test::BlockingClient client(server->local_address().port());
  ASSERT_TRUE(client.is_open());
  std::shared_ptr<test::ProbeState> probe = probes_.wait(0);
  ASSERT_NE(probe, nullptr);
  client.shutdown_write();
  ASSERT_TRUE(probe->input_shutdown.future().wait_for(20s));
  client.reset();
  EXPECT_TRUE(probe->inactive.future().wait_for(20s)) << "the reset after the FIN was not noticed";
  EXPECT_EQ(probe->index_of("inactive"), static_cast<int>(probe->events().size()) - 1);
  server->close().wait();
  group_.shutdown_gracefully(0ms, 5s).wait();
}

}  // namespace
}  // namespace weft
