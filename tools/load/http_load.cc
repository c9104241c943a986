#include "http_load.h"

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <latch>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>

#include "response_scanner.h"
#include "weft/buffer/byte_buf.h"
#include "weft/channel/bootstrap.h"
#include "weft/channel/context.h"
#include "weft/channel/handler.h"
#include "weft/codec/tls/tls_context.h"
#include "weft/codec/tls/tls_error.h"
#include "weft/codec/tls/tls_handler.h"
#include "weft/core/error.h"
#include "weft/core/event_loop_group.h"
#include "weft/transport/epoll.h"

namespace weft::load {

namespace {

using Nanos = std::int64_t;

Nanos now_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

// What every connection of a run shares; read-only once the run starts.
struct RunConfig {
  std::string request;  // one encoded request
  std::size_t pipeline = 1;
  bool open_loop = false;  // --rate given
  bool reconnect = false;  // one batch per connection (closed loop only)
  Nanos timeout_ns = 0;
};

class Connection;

// One event loop's share of the run. Loop thread only, except the progress atomics.
class Worker {
 public:
  Worker(EventLoop& loop, const RunConfig& config, double rate) : loop_(loop), config_(config) {
    interval_ns_ = rate > 0 ? 1e9 / rate : 0;
  }

  EventLoop& loop() const noexcept { return loop_; }
  const RunConfig& config() const noexcept { return config_; }
  bool sending() const noexcept { return began_ && !stopping_; }
  bool stopping() const noexcept { return stopping_; }

  void attach(Connection* c);
  void detach(Connection* c, std::size_t in_flight);
  void begin();
  void stop();
  // Open loop: hands the requests that are due by `now` to connections with room.
  void pump(Nanos now);
  void publish() noexcept {
    progress_responses.store(responses, std::memory_order_relaxed);
    progress_errors.store(errors.total(), std::memory_order_relaxed);
  }

  std::function<void()> reconnect;  // set by the runner

  Histogram latency;
  Errors errors;
  std::uint64_t requests = 0;
  std::uint64_t responses = 0;
  std::uint64_t bytes_read = 0;
  std::string handshake_failure;  // the first TLS handshake's failure, if any
  std::atomic<std::uint64_t> progress_responses{0};
  std::atomic<std::uint64_t> progress_errors{0};

 private:
  void check_timeouts();
  void schedule_pump(Nanos now);

  EventLoop& loop_;
  const RunConfig& config_;
  std::vector<Connection*> connections_;
  std::vector<Connection*> touched_;
  bool began_ = false;
  bool stopping_ = false;
  bool pump_scheduled_ = false;
  TimerId timeout_timer_ = 0;
  Nanos start_ = 0;
  double interval_ns_ = 0;
  std::uint64_t next_index_ = 0;  // the next request to schedule: intended at start_ + index * interval
  std::size_t cursor_ = 0;
};

// One HTTP connection: writes pre-encoded request batches, counts the responses.
class Connection final : public InboundHandler<ByteBuf> {
 public:
  explicit Connection(Worker& worker) : worker_(worker), intended_(worker.config().pipeline) {
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
    worker_.bytes_read += bytes.readable_bytes();
    ResponseScanner::Counts counts = scanner_.scan(bytes.view());
    for (std::uint32_t i = 0; i < counts.responses; ++i) {
      if (in_flight_ == 0) {  // a response nobody asked for
        counts.error = true;
        break;
      }
      worker_.latency.record(static_cast<std::uint64_t>(std::max<Nanos>(0, now - pop_intended())));
      ++worker_.responses;
    }
    worker_.errors.status += counts.non_2xx;
    if (counts.responses > 0) last_progress_ = now;
    if (counts.error) {
      ++worker_.errors.parse;
      in_flight_ = 0;  // counted as a parse error, not again as a read error when it closes
      ctx.close();
    } else if (!worker_.config().open_loop) {
      if (in_flight_ == 0) {
        if (worker_.config().reconnect) {
          ctx.close();  // its replacement is connected when it has closed (Worker::detach)
        } else {
          send_batch(now);
        }
      }
    } else {
      worker_.pump(now);
    }
    worker_.publish();
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
      ++(handshake ? worker_.errors.connect : write_side ? worker_.errors.write : worker_.errors.read);
      in_flight_ = 0;
    }
    ctx.close();
  }

  std::size_t room() const noexcept { return intended_.size() - in_flight_ - unsent_; }
  std::size_t unsent() const noexcept { return unsent_; }
  std::size_t in_flight() const noexcept { return in_flight_; }
  Nanos last_progress() const noexcept { return last_progress_; }

  // Closed loop: the whole pipeline at once, all intended now.
  void send_batch(Nanos now) {
    for (std::size_t i = 0; i < intended_.size(); ++i) queue(now);
    flush_queued(now);
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
    worker_.requests += n;
    ctx_->write(n == intended_.size() ? batch_.slice() : batch_.slice(0, n * worker_.config().request.size()));
    ctx_->flush();
  }
  // Gives up on the outstanding requests (timeout) and closes.
  void abandon() {
    in_flight_ = 0;
    unsent_ = 0;
    if (ctx_ != nullptr) ctx_->close();
  }
  void close_connection() {
    if (ctx_ != nullptr) ctx_->close();
  }

 private:
  Nanos pop_intended() noexcept {
    const Nanos t = intended_[head_];
    head_ = (head_ + 1) % intended_.size();
    --in_flight_;
    return t;
  }

  Worker& worker_;
  Context* ctx_ = nullptr;
  ByteBuf batch_;
  ResponseScanner scanner_;
  std::vector<Nanos> intended_;  // ring: in-flight requests from head_, then the unsent ones
  std::size_t head_ = 0;
  std::size_t in_flight_ = 0;
  std::size_t unsent_ = 0;
  Nanos last_progress_ = 0;
};

void Worker::attach(Connection* c) {
  if (stopping_) {
    c->close_connection();
    return;
  }
  connections_.push_back(c);
  if (!began_) return;
  const Nanos now = now_ns();
  if (config_.open_loop) {
    pump(now);
  } else {
    c->send_batch(now);
  }
}

void Worker::detach(Connection* c, std::size_t in_flight) {
  std::erase(connections_, c);
  if (cursor_ >= connections_.size()) cursor_ = 0;
  if (stopping_) return;
  if (in_flight > 0) ++errors.read;  // the server closed with requests outstanding
  publish();
  if (reconnect) reconnect();
}

void Worker::begin() {
  began_ = true;
  start_ = now_ns();
  timeout_timer_ = loop_.schedule_at_fixed_rate(std::chrono::milliseconds(100), std::chrono::milliseconds(100),
                                                [this] { check_timeouts(); });
  if (config_.open_loop) {
    pump(start_);
  } else {
    for (Connection* c : std::vector<Connection*>(connections_)) c->send_batch(start_);
  }
}

void Worker::stop() {
  stopping_ = true;
  if (timeout_timer_ != 0) loop_.cancel(timeout_timer_);
  publish();
  for (Connection* c : std::vector<Connection*>(connections_)) c->close_connection();
}

void Worker::pump(Nanos now) {
  if (!sending()) return;
  const auto due = static_cast<std::uint64_t>(static_cast<double>(now - start_) / interval_ns_) + 1;
  touched_.clear();
  const std::size_t n = connections_.size();
  std::size_t full_in_a_row = 0;
  while (next_index_ < due && n > 0 && full_in_a_row < n) {
    Connection* c = connections_[cursor_];
    cursor_ = (cursor_ + 1) % n;
    if (c->room() == 0) {
      ++full_in_a_row;
      continue;
    }
    full_in_a_row = 0;
    if (c->unsent() == 0) touched_.push_back(c);
    c->queue(start_ + static_cast<Nanos>(static_cast<double>(next_index_) * interval_ns_));
    ++next_index_;
  }
  for (Connection* c : touched_) c->flush_queued(now);
  // Requests still due wait for a response to free room (each response pumps again); they keep
  // their intended times, so the wait counts in their latency.
  if (next_index_ >= due) schedule_pump(now);
}

void Worker::schedule_pump(Nanos now) {
  if (pump_scheduled_) return;
  pump_scheduled_ = true;
  const Nanos next = start_ + static_cast<Nanos>(static_cast<double>(next_index_) * interval_ns_);
  loop_.schedule(std::chrono::nanoseconds(std::max<Nanos>(0, next - now)), [this] {
    pump_scheduled_ = false;
    pump(now_ns());
  });
}

void Worker::check_timeouts() {
  if (!sending()) return;
  const Nanos now = now_ns();
  for (Connection* c : std::vector<Connection*>(connections_)) {
    if (c->in_flight() > 0 && now - c->last_progress() > config_.timeout_ns) {
      errors.timeout += c->in_flight();
      c->abandon();
    }
  }
  publish();
}

std::string connect_failure_reason(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::system_error& e) {
    return e.code().message();
  } catch (const ConnectTimeoutError&) {
    return "connect timed out";
  } catch (const std::exception& e) {
    return e.what();
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

HttpResult run_http(const HttpOptions& options, const ProgressFn& progress) {
  if (options.connections < 1 || options.threads < 1 || options.pipeline < 1 || options.duration_s <= 0 ||
      options.rate < 0 || options.timeout_s <= 0) {
    throw LoadError("connections, threads, pipeline, duration and timeout must be positive");
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
  TlsContextPtr tls;
  TlsHandlerOptions tls_options;
  if (target.tls) {
    TlsContextBuilder builder = TlsContext::client();
    builder.application_protocols({"http/1.1"});
    if (options.insecure) builder.verify(TlsVerify::none);
    if (!options.ca_file.empty()) builder.trust_file(options.ca_file);
    try {
      tls = builder.build();
    } catch (const std::exception& e) {
      throw LoadError(fmt::format("TLS: {}", e.what()));
    }
    tls_options.server_name = target.host;
    tls_options.verify_hostname = !options.insecure;
    tls_options.handshake_timeout = std::chrono::milliseconds(static_cast<std::int64_t>(options.timeout_s * 1000));
  }

  EventLoopGroup loops(epoll(), static_cast<std::size_t>(options.threads), "weft-load");
  std::vector<std::unique_ptr<Worker>> workers;
  for (std::size_t i = 0; i < loops.size(); ++i) {
    workers.push_back(std::make_unique<Worker>(loops.at(i), config, options.rate / static_cast<double>(loops.size())));
  }
  auto worker_of = [&workers](EventLoop& loop) -> Worker& {
    for (auto& w : workers) {
      if (&w->loop() == &loop) return *w;
    }
    return *workers.front();  // not reached: every channel runs on one of the group's loops
  };

  Bootstrap bootstrap;
  bootstrap.group(loops)
      .option(option::tcp_nodelay, true)
      .option(option::connect_timeout, std::chrono::milliseconds(static_cast<std::int64_t>(options.timeout_s * 1000)))
      .handler([&worker_of, &tls, &tls_options](Channel& ch) {
        if (tls) ch.pipeline().add_last("tls", std::make_shared<TlsHandler>(tls, tls_options));
        ch.pipeline().add_last("load", std::make_shared<Connection>(worker_of(ch.loop())));
      });

  std::atomic<bool> stopping{false};
  std::atomic<std::uint64_t> reconnect_failures{0};
  std::function<void()> reconnect = [&] {
    if (stopping.load()) return;
    bootstrap.connect(target.address).add_listener([&](const Future<ChannelPtr>& f) {
      if (f.is_success() || stopping.load()) return;
      reconnect_failures.fetch_add(1, std::memory_order_relaxed);
      loops.next().try_execute([&] {  // back off a little before the next attempt
        if (!stopping.load()) EventLoop::current()->schedule(std::chrono::milliseconds(50), [&] { reconnect(); });
      });
    });
  };
  for (auto& w : workers) w->reconnect = reconnect;

  auto shutdown = [&] {
    stopping.store(true);
    std::latch stopped(static_cast<std::ptrdiff_t>(workers.size()));
    for (auto& w : workers) {
      w->loop().execute([&w, &stopped] {
        w->stop();
        stopped.count_down();
      });
    }
    stopped.wait();
  };

  // Connect everything first; the clock starts when all are up.
  std::vector<Future<ChannelPtr>> connects;
  for (int i = 0; i < options.connections; ++i) connects.push_back(bootstrap.connect(target.address));
  std::uint64_t initial_failures = 0;
  std::string first_failure;
  for (auto& f : connects) {
    f.wait();
    if (auto error = f.error()) {
      ++initial_failures;
      if (first_failure.empty()) first_failure = connect_failure_reason(error);
    }
  }
  if (initial_failures == connects.size()) {
    shutdown();
    loops.shutdown_gracefully(std::chrono::milliseconds(0), std::chrono::seconds(2)).wait();
    throw LoadError(fmt::format("cannot connect to {}: {}", target.address.to_string(), first_failure));
  }

  const auto t0 = Clock::now();
  for (auto& w : workers) w->loop().execute([&w] { w->begin(); });
  const auto end = t0 + std::chrono::nanoseconds(static_cast<Nanos>(options.duration_s * 1e9));
  for (auto tick = t0 + std::chrono::seconds(1); Clock::now() < end; tick += std::chrono::seconds(1)) {
    std::this_thread::sleep_until(std::min(tick, end));
    if (progress && Clock::now() < end) {
      std::uint64_t responses = 0, errors = 0;
      for (auto& w : workers) {
        responses += w->progress_responses.load(std::memory_order_relaxed);
        errors += w->progress_errors.load(std::memory_order_relaxed);
      }
      progress(std::chrono::duration<double>(Clock::now() - t0).count(), responses, errors);
    }
  }
  shutdown();
  const double elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
  loops.shutdown_gracefully(std::chrono::milliseconds(0), std::chrono::seconds(2)).wait();

  HttpResult result;
  result.duration_s = elapsed;
  for (auto& w : workers) {
    result.requests += w->requests;
    result.responses += w->responses;
    result.bytes_read += w->bytes_read;
    result.latency.merge(w->latency);
    result.errors.add(w->errors);
  }
  result.errors.connect += initial_failures + reconnect_failures.load();
  if (result.responses == 0) {
    for (auto& w : workers) {
      if (!w->handshake_failure.empty()) {
        throw LoadError(fmt::format("TLS handshake with {} failed: {}", target.address.to_string(), w->handshake_failure));
      }
    }
  }
  return result;
}

}  // namespace weft::load
