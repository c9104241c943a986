#include "stream_load.h"

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <latch>
#include <memory>
#include <system_error>
#include <thread>
#include <vector>

#include "weft/buffer/byte_buf.h"
#include "weft/channel/bootstrap.h"
#include "weft/channel/context.h"
#include "weft/channel/handler.h"
#include "weft/codec/codec_error.h"
#include "weft/codec/length_field_based_frame_decoder.h"
#include "weft/core/error.h"
#include "weft/core/event_loop_group.h"
#include "weft/transport/epoll.h"

namespace weft::load {

namespace {

constexpr std::size_t kBatchBytes = 64 * 1024;
constexpr std::size_t kMaxSize = 16 << 20;

// Per event loop; loop thread only except the progress atomic.
struct Tally {
  std::uint64_t sent = 0;
  std::uint64_t received = 0;
  Errors errors;
  bool stopping = false;
  std::vector<Channel*> channels;
  std::atomic<std::uint64_t> progress_sent{0};
  std::atomic<std::uint64_t> progress_received{0};
};

class Streamer final : public InboundHandler<ByteBuf> {
 public:
  Streamer(Tally& tally, std::size_t size) : tally_(tally) {
    per_batch_ = std::max<std::size_t>(1, kBatchBytes / (size + 4));
    batch_ = ByteBuf::copy_of(std::string(per_batch_ * (size + 4), 'x'));
    for (std::size_t i = 0; i < per_batch_; ++i) {
      const std::size_t at = i * (size + 4);
      const auto n = static_cast<std::uint32_t>(size);
      const char prefix[4] = {static_cast<char>(n >> 24), static_cast<char>(n >> 16), static_cast<char>(n >> 8),
                              static_cast<char>(n)};
      batch_.set_bytes(at, std::string_view(prefix, 4));
    }
  }

  void channel_active(Context& ctx) override {
    if (tally_.stopping) {
      ctx.close();
      return;
    }
    tally_.channels.push_back(&ctx.channel());
    ctx_ = &ctx;
    pump();
    ctx.fire_channel_active();
  }
  void channel_inactive(Context& ctx) override {
    std::erase(tally_.channels, &ctx.channel());
    if (!tally_.stopping && !closing_on_error_) ++tally_.errors.read;  // the server closed during the run
    ctx_ = nullptr;
    ctx.fire_channel_inactive();
  }
  void channel_read(Context&, ByteBuf&&) override {
    if (tally_.stopping) return;
    ++tally_.received;
    if ((tally_.received & 1023) == 0) tally_.progress_received.store(tally_.received, std::memory_order_relaxed);
  }
  void writability_changed(Context& ctx) override {
    if (ctx.channel().is_writable()) pump();
    ctx.fire_writability_changed();
  }
  void exception_caught(Context& ctx, std::exception_ptr error) override {
    if (!tally_.stopping) {
      try {
        std::rethrow_exception(error);
      } catch (const DecoderError&) {
        ++tally_.errors.parse;
      } catch (const std::system_error& e) {
        ++(e.code().value() == EPIPE ? tally_.errors.write : tally_.errors.read);
      } catch (...) {
        ++tally_.errors.read;
      }
      closing_on_error_ = true;  // counted here; the close that follows is not a second error
    }
    ctx.close();
  }

 private:
  void pump() {
    if (ctx_ == nullptr || tally_.stopping) return;
    Channel& ch = ctx_->channel();
    std::uint64_t sent = 0;
    while (ch.is_writable() && sent < 16 * per_batch_) {
      ctx_->write(batch_.slice());
      sent += per_batch_;
    }
    tally_.sent += sent;
    tally_.progress_sent.store(tally_.sent, std::memory_order_relaxed);
    ctx_->flush();
    // Still writable (the flush drained at once): yield to the loop's other channels, then go on.
    if (ch.is_writable()) {
      ctx_->loop().execute([this, keep = ch.shared_from_this()] {
        if (keep->is_open()) pump();
      });
    }
  }

  Tally& tally_;
  Context* ctx_ = nullptr;
  ByteBuf batch_;
  std::size_t per_batch_ = 1;
  bool closing_on_error_ = false;
};

}  // namespace

StreamResult run_stream(const StreamOptions& options, const ProgressFn& progress) {
  if (options.connections < 1 || options.threads < 1 || options.size < 0 || options.duration_s <= 0) {
    throw LoadError("connections, threads and duration must be positive");
  }
  if (static_cast<std::size_t>(options.size) > kMaxSize) throw LoadError("size must be at most 16 MiB");
  SocketAddress address;
  try {
    address = SocketAddress::parse(options.target);
  } catch (const std::exception& e) {
    throw LoadError(fmt::format("bad target '{}': {}", options.target, e.what()));
  }
  const auto size = static_cast<std::size_t>(options.size);

  EventLoopGroup loops(epoll(), static_cast<std::size_t>(options.threads), "weft-load");
  std::vector<std::unique_ptr<Tally>> tallies;
  for (std::size_t i = 0; i < loops.size(); ++i) tallies.push_back(std::make_unique<Tally>());
  auto tally_of = [&](EventLoop& loop) -> Tally& {
    for (std::size_t i = 0; i < loops.size(); ++i) {
      if (&loops.at(i) == &loop) return *tallies[i];
    }
    return *tallies.front();
  };

  Bootstrap bootstrap;
  bootstrap.group(loops)
      .option(option::tcp_nodelay, true)
      .option(option::read_buffer_max, 256 * 1024)
      .handler([&tally_of, size](Channel& ch) {
        ch.pipeline()
            .add_last("frames", std::make_shared<LengthFieldBasedFrameDecoder>(LengthFieldBasedFrameDecoder::Options{
                                    .max_frame_length = kMaxSize + 4, .length_field_length = 4}))
            .add_last("stream", std::make_shared<Streamer>(tally_of(ch.loop()), size));
      });

  auto stop_all = [&] {
    std::latch stopped(static_cast<std::ptrdiff_t>(loops.size()));
    for (std::size_t i = 0; i < loops.size(); ++i) {
      loops.at(i).execute([&, i] {
        Tally& t = *tallies[i];
        t.stopping = true;
        for (Channel* ch : std::vector<Channel*>(t.channels)) ch->close();
        stopped.count_down();
      });
    }
    stopped.wait();
  };

  const auto t0 = Clock::now();
  std::vector<Future<ChannelPtr>> connects;
  for (int i = 0; i < options.connections; ++i) connects.push_back(bootstrap.connect(address));
  std::uint64_t failures = 0;
  std::string first_failure;
  for (auto& f : connects) {
    f.wait();
    if (auto error = f.error()) {
      ++failures;
      if (first_failure.empty()) {
        try {
          std::rethrow_exception(error);
        } catch (const std::system_error& e) {
          first_failure = e.code().message();
        } catch (const std::exception& e) {
          first_failure = e.what();
        }
      }
    }
  }
  if (failures == connects.size()) {
    stop_all();
    loops.shutdown_gracefully(std::chrono::milliseconds(0), std::chrono::seconds(2)).wait();
    throw LoadError(fmt::format("cannot connect to {}: {}", address.to_string(), first_failure));
  }

  const auto end = t0 + std::chrono::nanoseconds(static_cast<std::int64_t>(options.duration_s * 1e9));
  for (auto tick = t0 + std::chrono::seconds(1); Clock::now() < end; tick += std::chrono::seconds(1)) {
    std::this_thread::sleep_until(std::min(tick, end));
    if (progress && Clock::now() < end) {
      std::uint64_t sent = 0, received = 0;
      for (auto& t : tallies) {
        sent += t->progress_sent.load(std::memory_order_relaxed);
        received += t->progress_received.load(std::memory_order_relaxed);
      }
      progress(std::chrono::duration<double>(Clock::now() - t0).count(), sent, received);
    }
  }
  stop_all();
  const double elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
  loops.shutdown_gracefully(std::chrono::milliseconds(0), std::chrono::seconds(2)).wait();

  StreamResult result;
  result.duration_s = elapsed;
  for (auto& t : tallies) {
    result.sent_messages += t->sent;
    result.received_messages += t->received;
    result.errors.add(t->errors);
  }
  result.errors.connect += failures;
  result.sent_bytes = result.sent_messages * (size + 4);
  result.received_bytes = result.received_messages * (size + 4);
  return result;
}

}  // namespace weft::load
