// Reading suspended by source, on every transport: a source that resumes undoes only its own
// suspension, and the application's auto-read switch undoes none. (Before, every source toggled one
// auto_read flag and the last writer won: an executor queue draining turned reading back on while
// the HTTP codec still needed it off.)

#include <gtest/gtest.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "support/blocking_client.h"
#include "support/transports.h"
#include "weft/channel/bootstrap.h"

namespace weft {
namespace {

using namespace std::chrono_literals;

class ReadSuspensionTest : public test::TransportTest {};
WEFT_ON_EVERY_TRANSPORT(ReadSuspensionTest);

struct Events {
  std::mutex mutex;
  std::vector<std::string> list;
  void add(std::string e) {
    std::lock_guard lock(mutex);
    list.push_back(std::move(e));
  }
  std::vector<std::string> get() {
    std::lock_guard lock(mutex);
    return list;
  }
};

// Two sources suspend reading when the channel turns active; the second resumes at once, the
// application toggles auto-read off and on, and the first resumes a while later, from a timer.
class TwoSources final : public InboundHandler<ByteBuf> {
 public:
  explicit TwoSources(std::shared_ptr<Events> events) : events_(std::move(events)) {}
  void channel_active(Context& ctx) override {
    Channel& ch = ctx.channel();
    first_.hold(ch);
    second_.hold(ch);
    second_.hold(ch);  // idempotent: one suspension per source
    EXPECT_EQ(ch.read_suspensions(), 2u);
    second_.release(ch);
    second_.release(ch);
    ch.set_auto_read(false);
    ch.set_auto_read(true);
    EXPECT_EQ(ch.read_suspensions(), 1u);
    ChannelPtr keep = ch.shared_from_this();
    ctx.loop().schedule(200ms, [this, keep] {
      events_->add("first source resumed");
      first_.release(*keep);
    });
    ctx.fire_channel_active();
  }
  void channel_read(Context& ctx, ByteBuf&& bytes) override {
    events_->add("read " + bytes.to_string());
    ctx.write_and_flush(std::move(bytes));
  }

 private:
  std::shared_ptr<Events> events_;
  ReadSuspension first_, second_;
};

TEST_P(ReadSuspensionTest, OnlyTheLastSourceToResumeStartsReadingAgain) {
  EventLoopGroup group(transport(), loops(1, 3));
  auto events = std::make_shared<Events>();
  ServerBootstrap b;
  b.group(group).child_handler(
      [events](Channel& ch) { ch.pipeline().add_last("sources", std::make_shared<TwoSources>(events)); });
  ChannelPtr server = b.bind(SocketAddress::loopback(0)).get();

  test::BlockingClient client(server->local_address().port());
  ASSERT_TRUE(client.is_open());
  ASSERT_TRUE(client.send_all("x"));  // sent at once; read only once the first source resumes
  EXPECT_EQ(client.recv_exact(1, 20000ms), std::optional<std::string>("x"));
  EXPECT_EQ(events->get(), (std::vector<std::string>{"first source resumed", "read x"}));
  client.close();
  server->close().wait();
  group.shutdown_gracefully(0ms, 5s).wait();
}

}  // namespace
}  // namespace weft
