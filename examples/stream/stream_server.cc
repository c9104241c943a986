// weft-stream-server: receives length-prefixed messages ([u32 length][payload]) and reports how
// many arrive per second -- the streaming-throughput scenario of the benchmarks.
//
//   weft-stream-server [port=9200] [loops=1] [seconds=0 (run until SIGINT)] [transport=epoll]
//
// Prints one line per second and, at the end, the average.

#include <weft/weft.h>

#include <weft/codec/length_field_based_frame_decoder.h>
#include <weft/transport/transport_named.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <thread>

namespace {

std::atomic<std::uint64_t> g_messages{0};
std::atomic<std::uint64_t> g_bytes{0};
std::atomic<bool> g_stop{false};

// Counts frames; batches the counter updates per read batch (one atomic add per batch).
class Counter final : public weft::InboundHandler<weft::ByteBuf> {
 public:
  void channel_read(weft::Context&, weft::ByteBuf&& frame) override {
    ++messages_;
    bytes_ += frame.readable_bytes();
  }
  void channel_read_complete(weft::Context& ctx) override {
    g_messages.fetch_add(messages_, std::memory_order_relaxed);
    g_bytes.fetch_add(bytes_, std::memory_order_relaxed);
    messages_ = bytes_ = 0;
    ctx.fire_read_complete();
  }

 private:
  std::uint64_t messages_ = 0;
  std::uint64_t bytes_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  const auto port = static_cast<std::uint16_t>(argc > 1 ? std::atoi(argv[1]) : 9200);
  const std::size_t loop_count = argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 1;
  const int seconds = argc > 3 ? std::atoi(argv[3]) : 0;
  weft::Transport* transport = nullptr;
  try {
    transport = &weft::transport_named(argc > 4 ? argv[4] : "epoll");
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "weft-stream-server: %s\n", e.what());
    return 1;
  }
  std::signal(SIGINT, [](int) { g_stop.store(true); });
  std::signal(SIGTERM, [](int) { g_stop.store(true); });

  weft::EventLoopGroup loops(*transport, loop_count);
  weft::ChannelPtr server;
  try {
    server = weft::ServerBootstrap()
                 .group(loops)
                 .child_option(weft::option::read_buffer_max, 256 * 1024)
                 .child_handler([](weft::Channel& ch) {
                   ch.pipeline()
                       .add_last("frames", std::make_shared<weft::LengthFieldBasedFrameDecoder>(
                                               weft::LengthFieldBasedFrameDecoder::Options{
                                                   .max_frame_length = 16 << 20,
                                                   .length_field_length = 4,
                                                   .initial_bytes_to_strip = 4}))
                       .add_last("count", std::make_shared<Counter>());
                 })
                 .bind(weft::SocketAddress::any(port))
                 .get();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "weft-stream-server: %s\n", e.what());
    return 1;
  }
  std::printf("stream server on %s, %zu loop(s)\n", server->local_address().to_string().c_str(), loops.size());
  std::fflush(stdout);

  std::uint64_t last_messages = 0, last_bytes = 0, active_seconds = 0, active_messages = 0;
  for (int t = 0; !g_stop.load() && (seconds == 0 || t < seconds); ++t) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    const std::uint64_t m = g_messages.load(), b = g_bytes.load();
    const std::uint64_t dm = m - last_messages, db = b - last_bytes;
    last_messages = m;
    last_bytes = b;
    if (dm > 0) {
      ++active_seconds;
      active_messages += dm;
    }
    std::printf("%llu msg/s  %.1f MB/s\n", static_cast<unsigned long long>(dm), static_cast<double>(db) / 1e6);
    std::fflush(stdout);
  }
  if (active_seconds > 0) {
    std::printf("average over %llu active seconds: %.0f msg/s\n", static_cast<unsigned long long>(active_seconds),
                static_cast<double>(active_messages) / static_cast<double>(active_seconds));
  }
  server->close().wait();
  return 0;
}
