// Unix domain sockets (SocketAddress::unix_socket, unix_abstract) on every transport: a server bound to
// one echoes what a client channel connected to it sends; the addresses read back as they were
// given; a path in use refuses a second bind. And SocketAddress's AF_UNIX forms themselves.

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <mutex>
#include <random>
#include <string>

#include "support/transports.h"
#include "weft/channel/bootstrap.h"
#include "weft/core/error.h"

using namespace std::chrono_literals;

namespace weft {
namespace {

class Echo final : public InboundHandler<ByteBuf> {
 public:
  void channel_read(Context& ctx, ByteBuf&& bytes) override { ctx.write_and_flush(std::move(bytes)); }
};

// Collects what its channel reads; `all` completes once `expected` bytes came.
class Collect final : public InboundHandler<ByteBuf> {
 public:
  explicit Collect(std::size_t expected) : expected_(expected) {}
  void channel_read(Context&, ByteBuf&& bytes) override {
    received_.append(bytes.view());
    if (received_.size() >= expected_) all.set_value(received_);
  }
  Promise<std::string> all;

 private:
  std::size_t expected_;
  std::string received_;
};

std::string random_name() {
  std::mt19937_64 random(std::random_device{}());
  return "weft-test-" + std::to_string(random());
}

class UnixSocketTest : public test::TransportTest {
 protected:
  // Binds an echo server to `address`, connects to it, sends a message and returns what came back.
  std::string echo_over(const SocketAddress& address) {
    EventLoopGroup group(transport(), loops(1, 3));
    ChannelPtr server =
        ServerBootstrap()
            .group(group)
            .child_handler([](Channel& ch) { ch.pipeline().add_last("echo", std::make_shared<Echo>()); })
            .bind(address)
            .get();
    EXPECT_EQ(server->local_address().to_string(), address.to_string());
    const std::string message = "hello over AF_UNIX";
    auto collect = std::make_shared<Collect>(message.size());
    ChannelPtr client = Bootstrap()
                            .group(group)
                            .option(option::tcp_nodelay, true)  // a TCP option: skipped on a Unix socket
                            .handler([collect](Channel& ch) { ch.pipeline().add_last("collect", collect); })
                            .connect(address)
                            .get();
    EXPECT_TRUE(client->remote_address().is_unix());
    EXPECT_EQ(client->remote_address().to_string(), address.to_string());
    client->write_and_flush(ByteBuf::copy_of(message));
    Future<std::string> echoed = collect->all.future();
    const bool came = echoed.wait_for(30s);
    EXPECT_TRUE(came) << "no echo";
    std::string out = came ? echoed.get() : std::string();
    client->close().wait();
    server->close().wait();
    return out;
  }
};

TEST_P(UnixSocketTest, AServerOnAnAbstractSocketEchoes) {
  EXPECT_EQ(echo_over(SocketAddress::unix_abstract(random_name())), "hello over AF_UNIX");
}

TEST_P(UnixSocketTest, AServerOnASocketFileEchoesAndTheFileRefusesASecondBind) {
  char dir[] = "/tmp/weft-unix-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/socket";
  const SocketAddress address = SocketAddress::unix_socket(path);
  EXPECT_EQ(echo_over(address), "hello over AF_UNIX");
  // The file stays after the server closed (as with grpc++'s and Netty's): a new bind is refused.
  EventLoopGroup group(transport(), loops(1, 2));
  EXPECT_THROW(ServerBootstrap().group(group).child_handler([](Channel&) {}).bind(address).get(), IoError);
  ::unlink(path.c_str());
  ::rmdir(dir);
}

WEFT_ON_EVERY_TRANSPORT(UnixSocketTest);

TEST(SocketAddressUnixTest, UnixAddressesReadBackAsGiven) {
  const SocketAddress file = SocketAddress::unix_socket("/run/app.sock");
  EXPECT_TRUE(file.is_unix());
  EXPECT_EQ(file.family(), AF_UNIX);
  EXPECT_EQ(file.host(), "/run/app.sock");
  EXPECT_EQ(file.port(), 0);
  EXPECT_EQ(file.to_string(), "unix:/run/app.sock");
  EXPECT_EQ(SocketAddress::parse("unix:/run/app.sock").to_string(), "unix:/run/app.sock");

  const SocketAddress abstract = SocketAddress::parse("unix-abstract:app");
  EXPECT_TRUE(abstract.is_unix());
  EXPECT_EQ(abstract.host(), "@app");
  EXPECT_EQ(abstract.to_string(), "unix-abstract:app");
  EXPECT_FALSE(SocketAddress::loopback(80).is_unix());

  EXPECT_THROW(SocketAddress::unix_socket(""), std::invalid_argument);
  EXPECT_THROW(SocketAddress::unix_socket(std::string(108, 'p')), std::invalid_argument);
  EXPECT_NO_THROW(SocketAddress::unix_socket(std::string(107, 'p')));
  EXPECT_THROW(SocketAddress::unix_abstract(""), std::invalid_argument);
  EXPECT_THROW(SocketAddress::parse("unix:"), std::invalid_argument);
}

}  // namespace
}  // namespace weft
