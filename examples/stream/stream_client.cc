// weft-stream-client: streams length-prefixed messages ([u32 length][payload]) to a
// weft-stream-server as fast as the connection takes them, and reports messages sent per second.
//
//   weft-stream-client [host:port=127.0.0.1:9200] [connections=1] [payload_bytes=64] [seconds=10]
//
// Writes stop while a channel is not writable (write-queue water marks) and resume on
// writability_changed, so the client's memory stays bounded whatever the server's speed.

#include <weft/weft.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace {

std::atomic<std::uint64_t> g_sent{0};
std::atomic<bool> g_stop{false};

class Streamer final : public weft::InboundHandler<weft::ByteBuf> {
 public:
  explicit Streamer(std::size_t payload) : payload_(payload) {
    // Frames are batched into buffers of about 64 KiB: one write per batch.
    per_batch_ = std::max<std::size_t>(1, (64 * 1024) / (payload + 4));
  }
  void channel_active(weft::Context& ctx) override {
    pump(ctx);
    ctx.fire_channel_active();
  }
  void channel_read(weft::Context&, weft::ByteBuf&&) override {}
  void writability_changed(weft::Context& ctx) override {
    if (ctx.channel().is_writable()) pump(ctx);
    ctx.fire_writability_changed();
  }

 private:
  void pump(weft::Context& ctx) {
    weft::Channel& ch = ctx.channel();
    if (g_stop.load(std::memory_order_relaxed)) {
      ch.close();
      return;
    }
    std::uint64_t sent = 0;
    while (ch.is_writable()) {
      weft::ByteBuf buf = ctx.allocator().buffer(per_batch_ * (payload_ + 4));
      for (std::size_t i = 0; i < per_batch_; ++i) {
        buf.write_u32(static_cast<std::uint32_t>(payload_));
        buf.write_zero(payload_);
      }
      ctx.write(std::move(buf));
      sent += per_batch_;
    }
    g_sent.fetch_add(sent, std::memory_order_relaxed);
    ctx.flush();
    // The flush may have drained the queue at once: yield to the loop, then continue.
    if (ch.is_writable()) {
      ctx.loop().execute([this, &ctx, keep = ch.shared_from_this()] {
        if (keep->is_open()) pump(ctx);
      });
    }
  }

  std::size_t payload_;
  std::size_t per_batch_;
};

}  // namespace

int main(int argc, char** argv) {
  const std::string target = argc > 1 ? argv[1] : "127.0.0.1:9200";
  const int connections = argc > 2 ? std::atoi(argv[2]) : 1;
  const std::size_t payload = argc > 3 ? std::strtoul(argv[3], nullptr, 10) : 64;
  const int seconds = argc > 4 ? std::atoi(argv[4]) : 10;

  weft::EventLoopGroup loops(weft::epoll(), 1);
  std::vector<weft::ChannelPtr> channels;
  try {
    weft::Bootstrap bootstrap;
    bootstrap.group(loops).handler(
        [payload](weft::Channel& ch) { ch.pipeline().add_last("stream", std::make_shared<Streamer>(payload)); });
    for (int i = 0; i < connections; ++i) channels.push_back(bootstrap.connect(weft::SocketAddress::parse(target)).get());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "weft-stream-client: %s\n", e.what());
    return 1;
  }
  std::printf("streaming %zu-byte messages over %d connection(s) to %s for %d s\n", payload, connections,
              target.c_str(), seconds);
  std::uint64_t last = 0, total = 0;
  for (int t = 0; t < seconds; ++t) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    const std::uint64_t now = g_sent.load();
    std::printf("%llu msg/s sent\n", static_cast<unsigned long long>(now - last));
    std::fflush(stdout);
    total += now - last;
    last = now;
  }
  g_stop.store(true);
  std::printf("average: %.0f msg/s sent\n", static_cast<double>(total) / std::max(1, seconds));
  for (auto& ch : channels) ch->close().wait();
  return 0;
}
