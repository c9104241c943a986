#include "http_load.h"

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <memory>
#include <system_error>

#include "response_scanner.h"
#include "weft/buffer/byte_buf.h"
#include "weft/channel/bootstrap.h"
#include "weft/channel/context.h"
#include "weft/channel/handler.h"
#include "weft/codec/tls/tls_context.h"
#include "weft/codec/tls/tls_error.h"
#include "weft/codec/tls/tls_handler.h"
#include "weft/core/error.h"

namespace weft::load {

namespace {

// What every connection of a run shares; read-only once the run starts.
struct RunConfig {
  std::string request;  // one encoded request
  std::size_t pipeline = 1;
  bool open_loop = false;  // --rate given
  bool reconnect = false;  // one batch per connection (closed loop only)
  Nanos timeout_ns = 0;
  // -n: the requests still to send, shared by every loop (null: the run is timed). Thread-safe.
  std::atomic<std::uint64_t>* budget = nullptr;
};

class Connection;

// One event loop's share of the run: the core's Worker plus the open loop's schedule.
class HttpWorker final : public Worker {
 public:
  HttpWorker(Run& run, EventLoop& loop, const RunConfig& config, double rate)
      : Worker(run, loop, config.timeout_ns), config_(config) {
    pump_.schedule.set_rate(rate);
  }

  const RunConfig& config() const noexcept { return config_; }

  void attach(Connection* c);
  void detach(Connection* c, std::size_t in_flight);
  void begin();
  // Open loop: hands the requests that are due by `now` to connections with room.
  void pump(Nanos now);
  // Takes up to `want` requests to send: fewer (or none) once -n's count is spent, none once the
  // run stops sending.
  std::size_t take(std::size_t want) noexcept;
  // -n: every request of the count has been sent and none is outstanding here: this loop is done.
  void finish_if_spent();

  std::function<void()> reconnect;  // set by the runner
  std::string handshake_failure;    // the first TLS handshake's failure, if any

 private:
  Connection& connection(std::size_t index) const noexcept;

  const RunConfig& config_;
  std::vector<Connection*> touched_;
  OpenLoopPump pump_;
};

// One HTTP connection: writes pre-encoded request batches, counts the responses.
class Connection final : public InboundHandler<ByteBuf>, public Session {
 public:
  explicit Connection(HttpWorker& worker) : worker_(worker), intended_(worker.config().pipeline) {
    const RunConfig& config = worker.config();
    std::string batch;
    batch.reserve(config.request.size() * config.pipeline);
    for (std::size_t i = 0; i < config.pipeline; ++i) batch += config.request;
    batch_ = ByteBuf::copy_of(batch);
  }

  void channel_active(Context& ctx) override {
    ctx_ = &ctx;
    worker_.attach(this);
    ctx.fire_channel_active();
  }

  void channel_read(Context& ctx, ByteBuf&& bytes) override {
    if (!worker_.sending()) return;
    const Nanos now = now_ns();
    worker_.stats.bytes_read += bytes.readable_bytes();
    ResponseScanner::Counts counts = scanner_.scan(bytes.view());
    for (std::uint32_t i = 0; i < counts.responses; ++i) {
      if (in_flight_ == 0) {  // a response nobody asked for
        counts.error = true;
        break;
      }
      worker_.stats.latency.record(static_cast<std::uint64_t>(std::max<Nanos>(0, now - pop_intended())));
      ++worker_.stats.responses;
    }
    worker_.stats.errors.status += counts.non_2xx;
    if (counts.responses > 0) last_progress_ = now;
    if (counts.error) {
      ++worker_.stats.errors.parse;
      in_flight_ = 0;  // counted as a parse error, not again as a read error when it closes
      ctx.close();
    } else if (!worker_.config().open_loop) {
      if (in_flight_ == 0) {
        if (worker_.config().reconnect) {
          ctx.close();  // its replacement is connected when it has closed (HttpWorker::detach)
        } else {
          send_batch(now);
        }
      }
    } else {
      worker_.pump(now);
    }
    worker_.publish();
    if (in_flight_ == 0) worker_.finish_if_spent();
  }

  void channel_inactive(Context& ctx) override {
    ctx_ = nullptr;
    worker_.detach(this, in_flight_);
    ctx.fire_channel_inactive();
  }

  void exception_caught(Context& ctx, std::exception_ptr error) override {
    if (worker_.sending() && in_flight_ > 0) {
      bool write_side = false;
      bool handshake = false;
      try {
        std::rethrow_exception(error);
      } catch (const std::system_error& e) {
        write_side = e.code().value() == EPIPE;
      } catch (const TlsHandshakeError& e) {
        handshake = true;  // no connection to the server was made: a refused certificate, say
        if (worker_.handshake_failure.empty()) worker_.handshake_failure = e.what();
      } catch (...) {
      }
      ++(handshake    ? worker_.stats.errors.connect
         : write_side ? worker_.stats.errors.write
                      : worker_.stats.errors.read);
      in_flight_ = 0;
    }
    ctx.close();
  }

  std::size_t room() const noexcept { return intended_.size() - in_flight_ - unsent_; }
  std::size_t unsent() const noexcept { return unsent_; }
  std::size_t in_flight() const noexcept override { return in_flight_; }
  Nanos last_progress() const noexcept override { return last_progress_; }

  // Closed loop: the whole pipeline at once, all intended now.
  void send_batch(Nanos now) {
    const std::size_t n = worker_.take(intended_.size());
    for (std::size_t i = 0; i < n; ++i) queue(now);
    flush_queued(now);
    if (n == 0) worker_.finish_if_spent();
  }
  // Adds one request (intended at `intended`) to the next write.
  void queue(Nanos intended) noexcept {
    intended_[(head_ + in_flight_ + unsent_) % intended_.size()] = intended;
    ++unsent_;
  }
  // Writes the queued requests as one slice of the pre-encoded batch.
  void flush_queued(Nanos now) {
    if (unsent_ == 0 || ctx_ == nullptr) return;
    if (in_flight_ == 0) last_progress_ = now;
    const std::size_t n = unsent_;
    in_flight_ += n;
    unsent_ = 0;
    worker_.stats.requests += n;
    ctx_->write(n == intended_.size() ? batch_.slice() : batch_.slice(0, n * worker_.config().request.size()));
    ctx_->flush();
  }
  // Gives up on the outstanding requests (timeout) and closes.
  void abandon() override {
    in_flight_ = 0;
    unsent_ = 0;
    if (ctx_ != nullptr) ctx_->close();
  }
  void close_connection() override {
    if (ctx_ != nullptr) ctx_->close();
  }

 private:
  Nanos pop_intended() noexcept {
    const Nanos t = intended_[head_];
    head_ = (head_ + 1) % intended_.size();
    --in_flight_;
    return t;
  }

  HttpWorker& worker_;
  Context* ctx_ = nullptr;
  ByteBuf batch_;
  ResponseScanner scanner_;
  std::vector<Nanos> intended_;  // ring: in-flight requests from head_, then the unsent ones
  std::size_t head_ = 0;
  std::size_t in_flight_ = 0;
  std::size_t unsent_ = 0;
  Nanos last_progress_ = 0;
};

Connection& HttpWorker::connection(std::size_t index) const noexcept {
  return static_cast<Connection&>(*sessions()[index]);
}

void HttpWorker::attach(Connection* c) {
  if (stopping()) {
    c->close_connection();
    return;
  }
  add_session(c);
  if (!began()) return;
  const Nanos now = now_ns();
  if (config_.open_loop) {
    pump(now);
  } else {
    c->send_batch(now);
  }
}

void HttpWorker::detach(Connection* c, std::size_t in_flight) {
  remove_session(c);
  pump_.connections_now(sessions().size());
  if (stopping()) return;
  if (in_flight > 0) ++stats.errors.read;  // the server closed with requests outstanding
  publish();
  if (config_.budget != nullptr && config_.budget->load(std::memory_order_relaxed) == 0) {
    finish_if_spent();  // nothing left to send: no replacement
    return;
  }
  if (reconnect) reconnect();
}

std::size_t HttpWorker::take(std::size_t want) noexcept {
  if (!sending()) return 0;
  if (config_.budget == nullptr) return want;
  std::uint64_t left = config_.budget->load(std::memory_order_relaxed);
  while (left > 0) {
    const std::uint64_t n = std::min<std::uint64_t>(left, want);
    if (config_.budget->compare_exchange_weak(left, left - n, std::memory_order_relaxed)) return n;
  }
  return 0;
}

void HttpWorker::finish_if_spent() {
  if (config_.budget == nullptr || config_.budget->load(std::memory_order_relaxed) > 0) return;
  for (Session* s : sessions()) {
    if (s->in_flight() > 0) return;
  }
  finish();
}

void HttpWorker::begin() {
  const Nanos start = now_ns();
  pump_.schedule.start(start);
  Worker::begin();
  if (config_.budget != nullptr && sessions().empty()) {
    finish();  // -n: no connection here to send on (its connects failed); the others send the count
    return;
  }
  if (config_.open_loop) {
    pump(start);
  } else {
    for (Session* c : std::vector<Session*>(sessions())) static_cast<Connection*>(c)->send_batch(start);
  }
}

void HttpWorker::pump(Nanos now) {
  if (!sending()) return;
  touched_.clear();
  const bool spent = pump_.give_due(
      now, sessions().size(), [this](std::size_t i) -> Connection& { return connection(i); },
      [this](Connection& c, Nanos intended) {
        if (take(1) == 0) return OpenLoopPump::Given::spent;
        if (c.unsent() == 0) touched_.push_back(&c);
        c.queue(intended);
        return OpenLoopPump::Given::sent;
      });
  for (Connection* c : touched_) c->flush_queued(now);
  if (spent) {
    finish_if_spent();
  } else if (pump_.caught_up()) {
    pump_.wake_at_next(loop(), now, [this] { pump(now_ns()); });
  }
}

}  // namespace

HttpTarget parse_http_url(const std::string& url) {
  HttpTarget target;
  std::string_view scheme;
  for (std::string_view s : {"http://", "https://"}) {
    if (std::string_view(url).starts_with(s)) scheme = s;
  }
  if (scheme.empty()) {
    throw LoadError(fmt::format("bad URL '{}': only http[s]://HOST[:PORT][/PATH] is supported", url));
  }
  target.tls = scheme == "https://";
  std::string rest = url.substr(scheme.size());
  const std::size_t slash = rest.find('/');
  target.host_header = rest.substr(0, slash);
  target.path = slash == std::string::npos ? "/" : rest.substr(slash);
  std::string authority = target.host_header;
  const bool bracketed = authority.starts_with('[');  // an IPv6 literal: [::1]:8443
  const std::size_t host_end = bracketed ? authority.find(']') : std::string::npos;
  std::size_t port_colon = authority.find(':', bracketed && host_end != std::string::npos ? host_end : 0);
  if (bracketed && port_colon != host_end + 1) port_colon = std::string::npos;
  const bool has_port = port_colon != std::string::npos;
  target.host = authority.substr(0, port_colon);
  if (bracketed && target.host.size() >= 2) target.host = target.host.substr(1, target.host.size() - 2);
  if (!has_port) authority += target.tls ? ":443" : ":80";
  try {
    target.address = SocketAddress::parse(authority);
  } catch (const std::exception& e) {
    throw LoadError(fmt::format("bad URL '{}': {}", url, e.what()));
  }
  for (char c : target.path) {
    if (c == ' ' || c == '\r' || c == '\n' || c == '\0') throw LoadError(fmt::format("bad URL '{}': bad path", url));
  }
  return target;
}

std::string encode_request(const HttpTarget& target, const std::vector<std::string>& headers) {
  std::string request = fmt::format("GET {} HTTP/1.1\r\nHost: {}\r\n", target.path, target.host_header);
  for (const std::string& h : headers) {
    const std::size_t colon = h.find(':');
    if (colon == 0 || colon == std::string::npos || h.find_first_of("\r\n") != std::string::npos) {
      throw LoadError(fmt::format("bad header '{}': expected \"Name: value\" on one line", h));
    }
    request += h;
    request += "\r\n";
  }
  request += "\r\n";
  return request;
}

HttpResult http_result(Stats stats, double duration_s) {
  HttpResult result;
  result.requests = stats.requests;
  result.responses = stats.responses;
  result.bytes_read = stats.bytes_read;
  result.duration_s = duration_s;
  result.latency = std::move(stats.latency);
  result.errors = stats.errors;
  return result;
}

HttpResult run_http(const HttpOptions& options, const ProgressFn& progress) {
  if (options.connections < 1 || options.threads < 1 || options.pipeline < 1 || options.duration_s < 0 ||
      (options.duration_s == 0 && options.requests == 0) || options.rate < 0 || options.timeout_s <= 0) {
    throw LoadError(
        "connections, threads, pipeline and timeout must be positive, and a duration or a request count given");
  }
  if (options.threads > options.connections) throw LoadError("threads must not exceed connections");
  if (options.reconnect && options.rate > 0) throw LoadError("--reconnect runs the closed loop only: drop --rate");
  const HttpTarget target = parse_http_url(options.url);
  RunConfig config;
  config.request = encode_request(target, options.headers);
  config.pipeline = static_cast<std::size_t>(options.pipeline);
  config.open_loop = options.rate > 0;
  config.reconnect = options.reconnect;
  config.timeout_ns = static_cast<Nanos>(options.timeout_s * 1e9);
  std::atomic<std::uint64_t> budget{options.requests};
  if (options.requests > 0) config.budget = &budget;
  TlsContextPtr tls;
  TlsHandlerOptions tls_options;
  if (target.tls) {
    ClientTls client = client_tls("http/1.1", target.host, options.insecure, options.ca_file, options.timeout_s);
    tls = std::move(client.context);
    tls_options = client.options;
  }

  LoopRun run(options.threads);
  run.add_workers([&](EventLoop& loop) {
    return std::make_unique<HttpWorker>(run, loop, config, options.rate / static_cast<double>(run.loops().size()));
  });

  Bootstrap bootstrap;
  bootstrap.group(run.loops())
      .option(option::tcp_nodelay, true)
      .option(option::connect_timeout, std::chrono::milliseconds(static_cast<std::int64_t>(options.timeout_s * 1000)))
      .handler([&run, &tls, &tls_options](Channel& ch) {
        if (tls) ch.pipeline().add_last("tls", std::make_shared<TlsHandler>(tls, tls_options));
        ch.pipeline().add_last("load", std::make_shared<Connection>(run.worker_of<HttpWorker>(ch.loop())));
      });

  std::atomic<bool> stopping{false};
  std::function<void()> reconnect = [&] {
    if (stopping.load()) return;
    bootstrap.connect(target.address).add_listener([&](const Future<ChannelPtr>& f) {
      if (f.is_success() || stopping.load()) return;
      run.connect_failures().add(connect_failure_reason(f.error()));
      run.loops().next().try_execute([&] {  // back off a little before the next attempt
        if (!stopping.load()) EventLoop::current()->schedule(std::chrono::milliseconds(50), [&] { reconnect(); });
      });
    });
  };
  for (std::size_t i = 0; i < run.size(); ++i) run.worker<HttpWorker>(i).reconnect = reconnect;

  auto stop = [&] {
    stopping.store(true);
    run.stop();
  };

  // Connect everything first; the clock starts when all are up.
  std::vector<Future<ChannelPtr>> connects;
  ConnectTimes connect_times(static_cast<std::size_t>(options.connections));
  for (int i = 0; i < options.connections; ++i) {
    connects.push_back(bootstrap.connect(target.address));
    connect_times.watch(static_cast<std::size_t>(i), connects.back());
  }
  const bool none = await_connects(connects, run.connect_failures(), connect_failure_reason).empty();
  Histogram connect_ns = connect_times.histogram();
  if (none) {
    stop();
    run.shutdown();
    throw LoadError(
        fmt::format("cannot connect to {}: {}", target.address.to_string(), run.connect_failures().first_reason()));
  }

  auto t0 = Clock::now();
  for (std::size_t i = 0; i < run.size(); ++i) {
    HttpWorker& w = run.worker<HttpWorker>(i);
    w.loop().execute([&w] { w.begin(); });
  }
  t0 = run.warm_up(t0, options.warmup_s);
  run.wait(t0, deadline_after(t0, options.duration_s), progress);
  stop();
  const double elapsed = seconds_since(t0);
  run.shutdown();

  HttpResult result = http_result(run.merge(), elapsed);
  result.connect = std::move(connect_ns);
  result.errors.connect += run.connect_failures().count();
  if (result.responses == 0) {
    for (std::size_t i = 0; i < run.size(); ++i) {
      const std::string& failure = run.worker<HttpWorker>(i).handshake_failure;
      if (!failure.empty()) {
        throw LoadError(fmt::format("TLS handshake with {} failed: {}", target.address.to_string(), failure));
      }
    }
  }
  return result;
}

}  // namespace weft::load
