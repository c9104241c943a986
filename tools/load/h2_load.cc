#include "h2_load.h"

#include <fmt/format.h>
#include <nghttp2/nghttp2.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <system_error>

#include "weft/buffer/byte_buf.h"
#include "weft/buffer/byte_buf_allocator.h"
#include "weft/channel/bootstrap.h"
#include "weft/channel/context.h"
#include "weft/channel/handler.h"
#include "weft/codec/tls/tls_context.h"
#include "weft/codec/tls/tls_error.h"
#include "weft/codec/tls/tls_handler.h"
#include "weft/core/error.h"

namespace weft::load {

namespace {

// h2load's default windows (-w 30, -W 30): flow control never holds a response back.
constexpr std::int32_t kWindow = (1 << 30) - 1;

// What every connection of a run shares; read-only once the run starts.
struct H2Config {
  std::vector<std::pair<std::string, std::string>> fields;  // pseudo-header fields first, names lowercase
  std::vector<nghttp2_nv> nva;                              // points into `fields`: encoded by nghttp2, not copied
  std::size_t streams = 1;
  bool counted = false;  // a request count, not a duration, ends the run
  bool open_loop = false;  // --rate: requests leave on a schedule, not as streams end
  bool tls = false;
  Nanos timeout_ns = 0;
  nghttp2_session_callbacks* callbacks = nullptr;
};

// The connections' setup, between the loops and the calling thread. Thread-safe.
struct SetupSync {
  explicit SetupSync(std::size_t workers) : ready_per_worker(workers, 0) {}

  // A connection became HTTP/2 (ok) or could not; `worker` is its loop's index. Ignored once the
  // setup is over (the caller counts the stragglers as failures).
  void report(std::size_t worker, bool ok, const std::string& reason) {
    std::lock_guard lock(mutex);
    if (setup_over) return;
    ++reported;
    if (ok) {
      ++ready_per_worker[worker];
    } else if (first_failure.empty()) {
      first_failure = reason;
    }
    cv.notify_all();
  }
  void connect_failed(const std::string& reason) {
    std::lock_guard lock(mutex);
    ++connect_failures;
    if (!setup_over) {
      ++reported;
      if (first_failure.empty()) first_failure = reason;
      cv.notify_all();
    }
  }
  std::mutex mutex;
  std::condition_variable cv;
  int reported = 0;
  int connect_failures = 0;  // TCP connects that failed
  std::vector<int> ready_per_worker;
  std::string first_failure;
  bool setup_over = false;
};

class H2Connection;

// One event loop's share of the run: the core's Worker plus a counted run's budget.
class H2Worker final : public Worker {
 public:
  H2Worker(Run& run, EventLoop& loop, std::size_t index, const H2Config& config, SetupSync& sync)
      : Worker(run, loop, config.timeout_ns), index_(index), config_(config), sync_(sync) {}

  std::size_t index() const noexcept { return index_; }
  const H2Config& config() const noexcept { return config_; }
  SetupSync& sync() const noexcept { return sync_; }

  // Takes one request to send; false when the run sends no more.
  bool take() noexcept {
    if (!sending()) return false;
    if (!config_.counted) return true;
    if (budget_ == 0) return false;
    --budget_;
    return true;
  }
  void sent() noexcept {
    ++stats.requests;
    ++in_flight_;
  }
  void ended(std::size_t n) {
    in_flight_ -= n;
    if (config_.counted && budget_ == 0 && in_flight_ == 0) finish();
  }
  void attach(H2Connection* c);
  void detach(H2Connection* c, std::size_t in_flight);
  // The run begins: `budget` requests to send (a counted run), at `rate` per second (this loop's
  // share of --rate: its part of the ready connections; 0 for the closed loop).
  void begin(std::uint64_t budget, double rate);
  // Open loop: hands the requests due by `now` to connections with a free stream, each stamped with
  // its intended send time (latency counts from it, so a server's stall is in the figures).
  void pump(Nanos now);

 private:
  H2Connection& connection(std::size_t i) const noexcept;

  std::size_t index_;
  const H2Config& config_;
  SetupSync& sync_;
  std::uint64_t budget_ = 0;     // counted runs: requests still to send
  std::uint64_t in_flight_ = 0;  // over all connections
  OpenLoopPump pump_;            // the open loop's schedule (--rate) and dispatch
  std::vector<H2Connection*> touched_;  // connections given requests by this pump, to write once each
};

// One HTTP/2 connection: an nghttp2 client session fed from the channel; its output leaves in one
// write per read batch. Loop thread only.
class H2Connection final : public InboundHandler<ByteBuf>, public Session {
 public:
  H2Connection(H2Worker& worker, std::shared_ptr<TlsHandler> tls)
      : worker_(worker), tls_(std::move(tls)), slots_(worker.config().streams) {
    free_.reserve(slots_.size());
    for (std::size_t i = slots_.size(); i-- > 0;) free_.push_back(static_cast<std::uint32_t>(i));
  }
  ~H2Connection() override {
    if (session_ != nullptr) nghttp2_session_del(session_);
  }

  void channel_active(Context& ctx) override {
    ctx_ = &ctx;
    if (nghttp2_session_client_new(&session_, worker_.config().callbacks, this) != 0) {
      fail(ctx, "nghttp2_session_client_new failed");
      return;
    }
    const std::array<nghttp2_settings_entry, 2> settings = {{
        {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
        {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, static_cast<std::uint32_t>(kWindow)},
    }};
    nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings.data(), settings.size());
    nghttp2_session_set_local_window_size(session_, NGHTTP2_FLAG_NONE, 0, kWindow);
    send(ctx);  // the preface and SETTINGS (held by TLS until its handshake is done)
    ctx.fire_channel_active();
  }

  void channel_read(Context& ctx, ByteBuf&& bytes) override {
    if (session_ == nullptr || closing_) return;
    const std::size_t n = bytes.readable_bytes();
    if (worker_.sending()) worker_.stats.bytes_read += n;
    if (!ready_ && first_bytes_.size() < 64) {
      first_bytes_.append(reinterpret_cast<const char*>(bytes.read_ptr()), std::min(n, 64 - first_bytes_.size()));
    }
    now_ = now_ns();
    const auto rv = nghttp2_session_mem_recv(session_, bytes.read_ptr(), n);
    if (rv < 0) {
      if (!ready_) {
        fail(ctx, not_h2_reason(nghttp2_strerror(static_cast<int>(rv))));
        return;
      }
      worker_.stats.errors.parse += in_flight_;  // counted here, not again as read errors when it closes
      abandon();
      return;
    }
    if (closing_) return;
    if (worker_.config().open_loop) {
      worker_.pump(now_);  // streams that ended took the due requests' turn
    } else {
      fill(now_);
    }
    send(ctx);
    worker_.publish();
  }

  void channel_inactive(Context& ctx) override {
    if (ctx_ != nullptr && !ready_ && !reported_) report(false, not_h2_reason("the connection closed"));
    ctx_ = nullptr;
    if (attached_) worker_.detach(this, in_flight_);
    in_flight_ = 0;
    ctx.fire_channel_inactive();
  }

  void exception_caught(Context& ctx, std::exception_ptr error) override {
    std::string reason;
    bool write_side = false;
    try {
      std::rethrow_exception(error);
    } catch (const TlsHandshakeError& e) {
      // A server without h2 either picks no protocol (then it answers the preface as HTTP/1.1) or,
      // as OpenSSL servers do, refuses the handshake with this alert.
      reason = e.reason().find("no application protocol") != std::string::npos
                   ? "the server refused h2 by ALPN (alert no_application_protocol)"
                   : std::string(e.what());
    } catch (const std::system_error& e) {
      write_side = e.code().value() == EPIPE;
      reason = e.code().message();
    } catch (const std::exception& e) {
      reason = e.what();
    } catch (...) {
      reason = "unknown error";
    }
    if (!ready_) {
      fail(ctx, reason);
      return;
    }
    if (worker_.sending() && in_flight_ > 0) {
      (write_side ? worker_.stats.errors.write : worker_.stats.errors.read) += in_flight_;
      abandon();
      return;
    }
    ctx.close();
  }

  std::size_t in_flight() const noexcept override { return in_flight_; }
  Nanos last_progress() const noexcept override { return last_progress_; }

  // Opens streams up to the limit (while the run sends) and writes what nghttp2 has to send.
  void start(Nanos now) {
    last_progress_ = now;
    if (!worker_.config().open_loop) fill(now);
    if (ctx_ != nullptr) send(*ctx_);
  }
  // Open loop: streams free for the schedule's requests.
  std::size_t room() const noexcept { return goaway_ || closing_ || ctx_ == nullptr ? 0 : free_.size(); }
  // Open loop: opens one stream for a request due at `intended`; written by write_pending(). False when
  // nghttp2 takes no more streams on this connection.
  bool submit(Nanos intended, Nanos now) {
    if (!open_stream(intended, now)) return false;
    touched = true;
    return true;
  }
  // Writes what nghttp2 has to send.
  void write_pending() {
    touched = false;
    if (ctx_ != nullptr && !closing_) send(*ctx_);
  }
  bool touched = false;  // given a request by the pump since its last write_pending()
  // Gives up on the open streams (they are counted by the caller) and closes.
  void abandon() override {
    worker_.ended(in_flight_);
    in_flight_ = 0;
    close_connection();
  }
  void close_connection() override {
    closing_ = true;
    if (ctx_ != nullptr) ctx_->close();
  }

  static int on_frame_recv(nghttp2_session*, const nghttp2_frame* frame, void* user_data) {
    auto& self = *static_cast<H2Connection*>(user_data);
    if (frame->hd.type == NGHTTP2_SETTINGS && (frame->hd.flags & NGHTTP2_FLAG_ACK) == 0 && !self.ready_) {
      self.became_ready();
    } else if (frame->hd.type == NGHTTP2_GOAWAY) {
      self.goaway_ = true;  // no new streams; the server ends the connection
    }
    return 0;
  }

  static int on_header(nghttp2_session* session, const nghttp2_frame* frame, const std::uint8_t* name,
                       std::size_t name_length, const std::uint8_t* value, std::size_t value_length, std::uint8_t,
                       void*) {
    if (frame->hd.type != NGHTTP2_HEADERS || name_length != 7 || std::memcmp(name, ":status", 7) != 0 ||
        value_length != 3) {
      return 0;
    }
    auto* slot = static_cast<Slot*>(nghttp2_session_get_stream_user_data(session, frame->hd.stream_id));
    if (slot != nullptr) slot->status = (value[0] - '0') * 100 + (value[1] - '0') * 10 + (value[2] - '0');
    return 0;
  }

  static int on_stream_close(nghttp2_session* session, std::int32_t id, std::uint32_t error_code, void* user_data) {
    auto* slot = static_cast<Slot*>(nghttp2_session_get_stream_user_data(session, id));
    if (slot != nullptr) static_cast<H2Connection*>(user_data)->stream_ended(*slot, error_code);
    return 0;
  }

  static ssize_t on_send(nghttp2_session*, const std::uint8_t* data, std::size_t length, int, void* user_data) {
    auto& self = *static_cast<H2Connection*>(user_data);
    if (self.ctx_ == nullptr) return NGHTTP2_ERR_CALLBACK_FAILURE;
    if (!self.out_.has_storage()) self.out_ = self.ctx_->allocator().buffer(std::max<std::size_t>(length, 4096));
    self.out_.ensure_writable(length);
    self.out_.write_bytes(data, length);
    return static_cast<ssize_t>(length);
  }

 private:
  struct Slot {
    Nanos start = 0;
    int status = 0;  // the final :status; 0 until it comes
    std::uint32_t index = 0;
  };

  void became_ready() {
    if (tls_ != nullptr && tls_->application_protocol() != "h2") {
      fail(*ctx_, not_h2_reason("SETTINGS over a connection that is not h2"));
      return;
    }
    ready_ = true;
    if (worker_.began()) {  // later than the run's start: counted as a failed connection
      close_connection();
      return;
    }
    attached_ = true;
    worker_.attach(this);
    report(true, {});
  }

  // Why the connection is not HTTP/2, in words: what TLS chose, or how the server answered.
  std::string not_h2_reason(const char* what) const {
    if (tls_ != nullptr && tls_->is_handshake_done() && tls_->application_protocol() != "h2") {
      const std::string& chosen = tls_->application_protocol();
      return fmt::format("the server did not choose h2 by ALPN (it chose {})", chosen.empty() ? "none" : "'" + chosen + "'");
    }
    if (first_bytes_.starts_with("HTTP/")) {
      return fmt::format("the server does not speak HTTP/2{}: it answered '{}'",
                         tls_ != nullptr ? "" : " with prior knowledge", first_bytes_.substr(0, first_bytes_.find('\r')));
    }
    return fmt::format("no HTTP/2 from the server: {}", what);
  }

  void report(bool ok, const std::string& reason) {
    if (reported_) return;
    reported_ = true;
    worker_.sync().report(worker_.index(), ok, reason);
  }

  void fail(Context& ctx, const std::string& reason) {
    report(false, reason);
    closing_ = true;
    ctx.close();
  }

  void fill(Nanos now) {
    while (!free_.empty() && !goaway_ && worker_.take()) {
      if (!open_stream(now, now)) break;
    }
  }

  // Submits one request (taken from the worker) on a free slot, its latency counted from `start`.
  bool open_stream(Nanos start, Nanos now) {
    Slot& slot = slots_[free_.back()];
    slot.index = free_.back();
    slot.start = start;
    slot.status = 0;
    const H2Config& config = worker_.config();
    const std::int32_t id =
        nghttp2_submit_request(session_, nullptr, config.nva.data(), config.nva.size(), nullptr, &slot);
    if (id < 0) {  // nghttp2 ran out of stream ids: this connection sends no more
      worker_.ended(0);
      goaway_ = true;
      return false;
    }
    free_.pop_back();
    if (in_flight_ == 0) last_progress_ = now;
    ++in_flight_;
    worker_.sent();
    return true;
  }

  void stream_ended(Slot& slot, std::uint32_t error_code) {
    free_.push_back(slot.index);
    if (in_flight_ == 0) return;  // abandoned already
    --in_flight_;
    last_progress_ = now_;
    if (error_code == NGHTTP2_NO_ERROR && slot.status >= 200) {
      worker_.stats.latency.record(static_cast<std::uint64_t>(std::max<Nanos>(0, now_ - slot.start)));
      ++worker_.stats.responses;
      if (slot.status >= 300) ++worker_.stats.errors.status;
    } else {
      ++worker_.stats.errors.read;  // reset by the server (or refused)
    }
    worker_.ended(1);
  }

  void send(Context& ctx) {
    if (nghttp2_session_send(session_) != 0) {
      closing_ = true;
      ctx.close();
      return;
    }
    if (out_.is_readable()) ctx.write_and_flush(std::move(out_));
  }

  H2Worker& worker_;
  std::shared_ptr<TlsHandler> tls_;
  Context* ctx_ = nullptr;
  nghttp2_session* session_ = nullptr;
  ByteBuf out_;
  std::vector<Slot> slots_;
  std::vector<std::uint32_t> free_;  // indexes of the slots not in use
  std::size_t in_flight_ = 0;
  Nanos now_ = 0;  // the current read batch's clock
  Nanos last_progress_ = 0;
  std::string first_bytes_;  // what the server sent first, until it is HTTP/2: for the failure's reason
  bool ready_ = false;
  bool reported_ = false;
  bool attached_ = false;
  bool goaway_ = false;
  bool closing_ = false;
};

void H2Worker::attach(H2Connection* c) { add_session(c); }

H2Connection& H2Worker::connection(std::size_t i) const noexcept { return static_cast<H2Connection&>(*sessions()[i]); }

void H2Worker::detach(H2Connection* c, std::size_t in_flight) {
  remove_session(c);
  std::erase(touched_, c);
  pump_.connections_now(sessions().size());
  if (!sending()) return;
  stats.errors.read += in_flight;  // the connection ended with streams open
  ended(in_flight);
  publish();
  if (sessions().empty()) finish();  // nothing left to send on
}

void H2Worker::begin(std::uint64_t budget, double rate) {
  budget_ = budget;
  pump_.schedule.set_rate(rate);
  Worker::begin();
  const Nanos now = now_ns();
  pump_.schedule.start(now);
  for (Session* c : std::vector<Session*>(sessions())) static_cast<H2Connection*>(c)->start(now);
  if (config_.open_loop && pump_.schedule.active()) pump(now);
  if (sessions().empty() || (config_.counted && in_flight_ == 0 && budget_ == 0)) finish();
}

void H2Worker::pump(Nanos now) {
  if (!sending() || (config_.counted && budget_ == 0)) return;
  const std::size_t n = sessions().size();
  pump_.give_due(
      now, n, [this](std::size_t i) -> H2Connection& { return connection(i); },
      [this, n, now](H2Connection& c, Nanos intended) {
        if (!take()) return OpenLoopPump::Given::spent;
        if (!c.touched) touched_.push_back(&c);
        if (c.submit(intended, now)) return OpenLoopPump::Given::sent;
        if (config_.counted) ++budget_;  // not sent: another connection sends it
        return sessions().size() == n ? OpenLoopPump::Given::not_sent : OpenLoopPump::Given::stop;
      });
  // One write per connection for what this pump gave it (a flush may close it: detach drops it).
  while (!touched_.empty()) {
    H2Connection* c = touched_.back();
    touched_.pop_back();
    c->write_pending();
  }
  if (pump_.caught_up() && !(config_.counted && budget_ == 0)) {
    pump_.wake_at_next(loop(), now, [this] { pump(now_ns()); });
  }
}

// Header fields HTTP/2 forbids (RFC 9113 8.2.2); Host is :authority.
bool connection_specific(std::string_view lower_name) noexcept {
  return lower_name == "connection" || lower_name == "keep-alive" || lower_name == "transfer-encoding" ||
         lower_name == "upgrade" || lower_name == "proxy-connection" || lower_name == "host" || lower_name == "te";
}

void build_fields(H2Config& config, const HttpTarget& target, const std::vector<std::string>& headers) {
  std::string authority = target.host_header;
  std::vector<std::pair<std::string, std::string>> regular;
  for (const std::string& h : headers) {
    const std::size_t colon = h.find(':');
    if (colon == 0 || colon == std::string::npos || h.find_first_of("\r\n") != std::string::npos) {
      throw LoadError(fmt::format("bad header '{}': expected \"Name: value\" on one line", h));
    }
    std::string name = h.substr(0, colon);
    std::transform(name.begin(), name.end(), name.begin(), [](char c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; });
    std::string value = h.substr(colon + 1);
    value.erase(0, value.find_first_not_of(" \t"));
    if (name == "host") authority = value;
    if (connection_specific(name)) continue;
    regular.emplace_back(std::move(name), std::move(value));
  }
  config.fields = {{":method", "GET"}, {":scheme", target.tls ? "https" : "http"}, {":authority", authority},
                   {":path", target.path}};
  config.fields.insert(config.fields.end(), regular.begin(), regular.end());
  for (auto& [name, value] : config.fields) {
    config.nva.push_back({reinterpret_cast<std::uint8_t*>(name.data()), reinterpret_cast<std::uint8_t*>(value.data()),
                          name.size(), value.size(),
                          static_cast<std::uint8_t>(NGHTTP2_NV_FLAG_NO_COPY_NAME | NGHTTP2_NV_FLAG_NO_COPY_VALUE)});
  }
}

struct Callbacks {
  Callbacks() {
    nghttp2_session_callbacks_new(&callbacks);
    nghttp2_session_callbacks_set_send_callback(callbacks, H2Connection::on_send);
    nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, H2Connection::on_frame_recv);
    nghttp2_session_callbacks_set_on_header_callback(callbacks, H2Connection::on_header);
    nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, H2Connection::on_stream_close);
  }
  ~Callbacks() { nghttp2_session_callbacks_del(callbacks); }
  Callbacks(const Callbacks&) = delete;
  Callbacks& operator=(const Callbacks&) = delete;
  nghttp2_session_callbacks* callbacks = nullptr;
};

}  // namespace

HttpResult run_h2(const H2Options& options, const ProgressFn& progress) {
  if (options.connections < 1 || options.threads < 1 || options.streams < 1 || options.timeout_s <= 0 ||
      options.duration_s < 0 || options.rate < 0 || (options.duration_s == 0 && options.requests == 0)) {
    throw LoadError("connections, threads, streams and timeout must be positive, and a duration or a request count given");
  }
  if (options.threads > options.connections) throw LoadError("threads must not exceed connections");
  const HttpTarget target = parse_http_url(options.url);
  Callbacks callbacks;
  H2Config config;
  build_fields(config, target, options.headers);
  config.streams = static_cast<std::size_t>(options.streams);
  config.counted = options.requests > 0;
  config.open_loop = options.rate > 0;
  config.tls = target.tls;
  config.timeout_ns = static_cast<Nanos>(options.timeout_s * 1e9);
  config.callbacks = callbacks.callbacks;
  const auto timeout = std::chrono::milliseconds(static_cast<std::int64_t>(options.timeout_s * 1000));

  TlsContextPtr tls;
  TlsHandlerOptions tls_options;
  if (target.tls) {
    ClientTls client = client_tls("h2", target.host, options.insecure, options.ca_file, options.timeout_s);
    tls = std::move(client.context);
    tls_options = client.options;
  }

  LoopRun run(options.threads);
  SetupSync sync(run.loops().size());
  std::size_t next_index = 0;
  run.add_workers([&](EventLoop& loop) { return std::make_unique<H2Worker>(run, loop, next_index++, config, sync); });

  Bootstrap bootstrap;
  bootstrap.group(run.loops())
      .option(option::tcp_nodelay, true)
      .option(option::connect_timeout, timeout)
      .handler([&run, &tls, &tls_options](Channel& ch) {
        std::shared_ptr<TlsHandler> handler;
        if (tls) {
          handler = std::make_shared<TlsHandler>(tls, tls_options);
          ch.pipeline().add_last("tls", handler);
        }
        ch.pipeline().add_last("load", std::make_shared<H2Connection>(run.worker_of<H2Worker>(ch.loop()), handler));
      });

  // Every connection HTTP/2 (the server's SETTINGS in) or failed before the clock starts.
  for (int i = 0; i < options.connections; ++i) {
    bootstrap.connect(target.address).add_listener([&sync](const Future<ChannelPtr>& f) {
      if (auto error = f.error()) sync.connect_failed(connect_failure_reason(error));
    });
  }
  std::vector<int> ready_per_worker;
  std::string first_failure;
  bool none_connected = false;
  {
    std::unique_lock lock(sync.mutex);
    sync.cv.wait_for(lock, 2 * timeout + std::chrono::seconds(1), [&] { return sync.reported == options.connections; });
    sync.setup_over = true;
    ready_per_worker = sync.ready_per_worker;
    first_failure = sync.first_failure.empty() ? "the server sent no SETTINGS within the timeout" : sync.first_failure;
    none_connected = sync.connect_failures == options.connections;
  }
  int ready = 0;
  for (int n : ready_per_worker) ready += n;
  if (ready == 0) {
    run.stop();
    run.shutdown();
    throw LoadError(fmt::format("{} {}: {}", none_connected ? "cannot connect to" : "no HTTP/2 connection to",
                                target.address.to_string(), first_failure));
  }

  // A request count is shared by the ready connections: each loop gets its connections' part.
  std::vector<std::uint64_t> budgets(run.size(), 0);
  if (config.counted) {
    std::uint64_t given = 0;
    for (std::size_t i = 0; i < run.size(); ++i) {
      budgets[i] = options.requests * static_cast<std::uint64_t>(ready_per_worker[i]) / static_cast<std::uint64_t>(ready);
      given += budgets[i];
    }
    for (std::size_t i = 0; given < options.requests; i = (i + 1) % run.size()) {
      if (ready_per_worker[i] > 0) {
        ++budgets[i];
        ++given;
      }
    }
  }

  auto t0 = Clock::now();
  for (std::size_t i = 0; i < run.size(); ++i) {
    H2Worker& w = run.worker<H2Worker>(i);
    // --rate is shared as the requests are: by the loop's part of the ready connections.
    const double rate = options.rate * ready_per_worker[i] / ready;
    w.loop().execute([&w, budget = budgets[i], rate] { w.begin(budget, rate); });
  }
  t0 = run.warm_up(t0, options.warmup_s);
  run.wait(t0, deadline_after(t0, options.duration_s), progress);
  run.stop();
  const double elapsed = seconds_since(t0);
  run.shutdown();

  HttpResult result = http_result(run.merge(), elapsed);
  result.errors.connect += static_cast<std::uint64_t>(options.connections - ready);
  return result;
}

}  // namespace weft::load
