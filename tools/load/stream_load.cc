#include "stream_load.h"

#include <fmt/format.h>

#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include "weft/buffer/byte_buf.h"
#include "weft/channel/bootstrap.h"
#include "weft/channel/context.h"
#include "weft/channel/handler.h"
#include "weft/channel/socket_address.h"
#include "weft/codec/codec_error.h"
#include "weft/codec/length_field_based_frame_decoder.h"

namespace weft::load {

namespace {

constexpr std::size_t kBatchBytes = 64 * 1024;
constexpr std::size_t kMaxSize = 16 << 20;

// One event loop's share of the run: the core's Worker (messages sent are its requests, messages
// received its responses), with the loop's connections as sessions.
class StreamWorker final : public Worker {
 public:
  StreamWorker(Run& run, EventLoop& loop) : Worker(run, loop, 0) {}

  void attach(Session* s) { add_session(s); }
  void detach(Session* s) { remove_session(s); }
};

class Streamer final : public InboundHandler<ByteBuf>, public Session {
 public:
  Streamer(StreamWorker& worker, std::size_t size) : worker_(worker) {
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

  // Session. A stream has no request that waits for its answer (a counting server answers none):
  // nothing is outstanding, so no timeout applies.
  std::size_t in_flight() const noexcept override { return 0; }
  Nanos last_progress() const noexcept override { return 0; }
  void abandon() override { close_connection(); }
  void close_connection() override {
    if (ctx_ != nullptr) ctx_->channel().close();
  }

  void channel_active(Context& ctx) override {
    if (worker_.stopping()) {
      ctx.close();
      return;
    }
    worker_.attach(this);
    ctx_ = &ctx;
    pump();
    ctx.fire_channel_active();
  }
  void channel_inactive(Context& ctx) override {
    worker_.detach(this);
    if (!worker_.stopping() && !closing_on_error_) ++worker_.stats.errors.read;  // the server closed during the run
    ctx_ = nullptr;
    ctx.fire_channel_inactive();
  }
  void channel_read(Context&, ByteBuf&&) override {
    if (worker_.stopping()) return;
    if ((++worker_.stats.responses & 1023) == 0) worker_.publish();
  }
  void writability_changed(Context& ctx) override {
    if (ctx.channel().is_writable()) pump();
    ctx.fire_writability_changed();
  }
  void exception_caught(Context& ctx, std::exception_ptr error) override {
    if (!worker_.stopping()) {
      Errors& errors = worker_.stats.errors;
      try {
        std::rethrow_exception(error);
      } catch (const DecoderError&) {
        ++errors.parse;
      } catch (const std::system_error& e) {
        ++(e.code().value() == EPIPE ? errors.write : errors.read);
      } catch (...) {
        ++errors.read;
      }
      closing_on_error_ = true;  // counted here; the close that follows is not a second error
    }
    ctx.close();
  }

 private:
  void pump() {
    if (ctx_ == nullptr || worker_.stopping()) return;
    Channel& ch = ctx_->channel();
    std::uint64_t sent = 0;
    while (ch.is_writable() && sent < 16 * per_batch_) {
      ctx_->write(batch_.slice());
      sent += per_batch_;
    }
    worker_.stats.requests += sent;
    worker_.publish();
    ctx_->flush();
    // Still writable (the flush drained at once): yield to the loop's other channels, then go on.
    if (ch.is_writable()) {
      ctx_->loop().execute([this, keep = ch.shared_from_this()] {
        if (keep->is_open()) pump();
      });
    }
  }

  StreamWorker& worker_;
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

  LoopRun run(options.threads);
  run.add_workers([&run](EventLoop& loop) { return std::make_unique<StreamWorker>(run, loop); });

  Bootstrap bootstrap;
  bootstrap.group(run.loops())
      .option(option::tcp_nodelay, true)
      .option(option::read_buffer_max, 256 * 1024)
      .handler([&run, size](Channel& ch) {
        ch.pipeline()
            .add_last("frames", std::make_shared<LengthFieldBasedFrameDecoder>(LengthFieldBasedFrameDecoder::Options{
                                    .max_frame_length = kMaxSize + 4, .length_field_length = 4}))
            .add_last("stream", std::make_shared<Streamer>(run.worker_of<StreamWorker>(ch.loop()), size));
      });

  auto t0 = Clock::now();
  {
    std::vector<Future<ChannelPtr>> connects;
    for (int i = 0; i < options.connections; ++i) connects.push_back(bootstrap.connect(address));
    if (await_connects(connects, run.connect_failures(), connect_failure_reason).empty()) {
      run.stop();
      run.shutdown();
      throw LoadError(
          fmt::format("cannot connect to {}: {}", address.to_string(), run.connect_failures().first_reason()));
    }
  }

  t0 = run.warm_up(t0, options.warmup_s);
  run.wait(t0, deadline_after(t0, options.duration_s), progress, ProgressCounts::requests_responses);
  run.stop();
  const double elapsed = seconds_since(t0);
  run.shutdown();

  const Stats all = run.merge();
  StreamResult result;
  result.duration_s = elapsed;
  result.sent_messages = all.requests;
  result.received_messages = all.responses;
  result.errors = all.errors;
  result.errors.connect += run.connect_failures().count();
  result.sent_bytes = result.sent_messages * (size + 4);
  result.received_bytes = result.received_messages * (size + 4);
  return result;
}

}  // namespace weft::load
