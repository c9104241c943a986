// A channel whose reading is off takes a bounded number of bytes from its socket, on every
// transport, while its peer keeps sending: each requested read batch delivers at most about one
// batch of read buffers, so nothing piles up in the channel between two requests. (On io_uring a
// multishot receive kept filling buffers after reading stopped, and a request then delivered
// megabytes at once: the memory a relay's backpressure was meant to bound.)

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "support/transports.h"
#include "weft/channel/bootstrap.h"

namespace weft {
namespace {

using namespace std::chrono_literals;

class SuspendedReadBoundTest : public test::TransportTest {};
WEFT_ON_EVERY_TRANSPORT(SuspendedReadBoundTest);

constexpr int kMessagesPerRead = 4;
constexpr std::size_t kReadBufferMax = 64 * 1024;
// What one read batch may take: epoll's and blocking's batch of reads, one io_uring buffer or so.
constexpr std::size_t kBatchBound = kMessagesPerRead * kReadBufferMax;

// Sizes of the read batches of the accepted channel, handed to the test thread.
struct Batches {
  std::mutex mutex;
  std::condition_variable changed;
  ChannelPtr channel;
  std::vector<std::size_t> sizes;
  bool inactive = false;
};

class BatchCounter final : public InboundHandler<ByteBuf> {
 public:
  explicit BatchCounter(std::shared_ptr<Batches> batches) : batches_(std::move(batches)) {}
  void channel_active(Context& ctx) override {
    {
      std::lock_guard lock(batches_->mutex);
      batches_->channel = ctx.channel().shared_from_this();
    }
    batches_->changed.notify_all();
    ctx.fire_channel_active();
  }
  void channel_read(Context&, ByteBuf&& bytes) override { batch_ += bytes.readable_bytes(); }
  void channel_read_complete(Context&) override {
    {
      std::lock_guard lock(batches_->mutex);
      batches_->sizes.push_back(std::exchange(batch_, 0));
    }
    batches_->changed.notify_all();
  }
  void channel_inactive(Context& ctx) override {
    {
      std::lock_guard lock(batches_->mutex);
      batches_->inactive = true;
    }
    batches_->changed.notify_all();
    ctx.fire_channel_inactive();
  }

 private:
  std::shared_ptr<Batches> batches_;
  std::size_t batch_ = 0;
};

TEST_P(SuspendedReadBoundTest, EachRequestedReadTakesABoundedBatchWhileThePeerKeepsSending) {
  EventLoopGroup group(transport(), loops(1, 2));
  auto batches = std::make_shared<Batches>();
  ServerBootstrap b;
  b.group(group)
      .child_option(option::auto_read, false)
      .child_option(option::max_messages_per_read, kMessagesPerRead)
      .child_option(option::read_buffer_max, kReadBufferMax)
      .child_handler(
          [batches](Channel& ch) { ch.pipeline().add_last("count", std::make_shared<BatchCounter>(batches)); });
  ChannelPtr server = b.bind(SocketAddress::loopback(0)).get();

  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  const int send_buffer = 4 << 20;  // the peer runs far ahead of the reader
  ::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &send_buffer, sizeof send_buffer);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(server->local_address().port());
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  // Sends until the test shuts the socket down (or the server's end goes away).
  std::thread sender([fd] {
    std::vector<char> block(256 << 10, 'x');
    while (::send(fd, block.data(), block.size(), MSG_NOSIGNAL) > 0) {
    }
  });

  ChannelPtr channel;
  {
    std::unique_lock lock(batches->mutex);
    batches->changed.wait(lock, [&] { return batches->channel != nullptr; });
    channel = batches->channel;
  }
  constexpr std::size_t kReads = 64;
  std::size_t total = 0;
  for (std::size_t i = 0; i < kReads; ++i) {
    channel->read();
    std::unique_lock lock(batches->mutex);
    batches->changed.wait(lock, [&] { return batches->sizes.size() > i || batches->inactive; });
    ASSERT_FALSE(batches->inactive) << "the channel closed after " << i << " reads";
    EXPECT_LE(batches->sizes[i], kBatchBound) << "read " << i << " delivered what the channel took while not reading";
    total += batches->sizes[i];
  }
  EXPECT_GT(total, 0u);
  EXPECT_LE(total, kReads * kBatchBound);

  ::shutdown(fd, SHUT_RDWR);  // ends the sender's blocked send
  sender.join();
  ::close(fd);
  channel->close().wait();
  server->close().wait();
  group.shutdown_gracefully(0ms, 5s).wait();
}

}  // namespace
}  // namespace weft
