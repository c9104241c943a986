#include "client_core.h"

#include <algorithm>
#include <charconv>
#include <utility>

#include "body_stream.h"
#include "upload_stream.h"
#include "weft/client/client_errors.h"
#include "weft/codec/tls/tls_context.h"
#include "weft/core/io_driver.h"

namespace weft::client::detail {
namespace {

TlsContextPtr make_tls(const ClientOptions& options) {
  if (options.tls) return options.tls;
  TlsContextBuilder builder = TlsContext::client();
  builder.application_protocols(options.http2 ? std::vector<std::string>{"h2", "http/1.1"}
                                              : std::vector<std::string>{"http/1.1"});
  if (options.insecure) {
    builder.verify(TlsVerify::none);
  } else {
    builder.trust_system_default();
  }
  return builder.build();
}

}  // namespace

// The loop that owns a request's future: the caller's, which runs its listeners and resumes its
// co_await -- unless the caller is an executor thread (a loop without I/O: ExecutorGroup,
// executor_driver_factory(), basic_driver_factory()), whose work is to block: there the future has
// no loop, so that get() blocks until the answer (a future owned by the executor's loop would
// throw BlockingOperationError, though the request runs on another loop), and its listeners run
// on the request's loop.
EventLoop* ClientCore::answer_loop() {
  EventLoop* caller = EventLoop::current();
  if (caller == nullptr) return nullptr;
  const IoDriverFactory* made_by = caller->driver_factory();
  if (made_by == &executor_driver_factory() || made_by == &basic_driver_factory()) return nullptr;
  return caller;
}

namespace {

bool is_redirect(int status) {
  return status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
}

}  // namespace

ClientCore::ClientCore(EventLoopGroup& group, ClientOptions options)
    : group_(group), options_(std::make_shared<const ClientOptions>(std::move(options))), shared_resolver_(*options_) {
  loops_.reserve(group.size());
  for (std::size_t i = 0; i < group.size(); ++i) loops_.push_back(std::make_unique<LoopClient>(*this, group.at(i)));
}

TlsContextPtr ClientCore::tls() {
  std::lock_guard lock(tls_mutex_);
  if (!tls_) tls_ = make_tls(*options_);
  return tls_;
}

Future<StreamedResponse> ClientCore::stream(Url url, std::string method, std::string header_block, ByteBuf body,
                                            std::optional<Duration> timeout) {
  Promise<StreamedResponse> result(answer_loop());
  Future<StreamedResponse> future = result.future();
  auto x = make_exchange(std::move(url), method, std::move(result));
  x->header_block = std::move(header_block);
  x->timeout = timeout;
  x->body = std::move(body);
  launch(std::move(x));
  return future;
}

Upload ClientCore::upload(Url url, std::string method, std::string header_block, std::optional<std::uint64_t> length,
                          std::optional<Duration> timeout) {
  Promise<StreamedResponse> result(answer_loop());
  Future<StreamedResponse> future = result.future();
  auto x = make_exchange(std::move(url), method, std::move(result));
  x->header_block = std::move(header_block);
  x->timeout = timeout;
  x->upload = std::make_shared<UploadStream>(home().loop(), length, x->url.to_string());
  Upload out{RequestBody(x->upload), std::move(future)};
  launch(std::move(x));
  return out;
}

LoopClient& ClientCore::home() const {
  EventLoop* caller = EventLoop::current();
  for (const auto& l : loops_) {
    if (&l->loop() == caller) return *l;
  }
  EventLoop& next = group_.next();
  for (const auto& l : loops_) {
    if (&l->loop() == &next) return *l;
  }
  return *loops_.front();
}

void ClientCore::launch(std::shared_ptr<Exchange> x) {
  if (closing_.load(std::memory_order_acquire)) {
    auto error = std::make_exception_ptr(ClientClosedError());
    if (x->upload) x->upload->stop(error);
    x->result.set_error(error);
    return;
  }
  LoopClient* home = nullptr;
  if (x->upload) {  // its body's loop, chosen when it was made
    for (const auto& l : loops_) {
      if (&l->loop() == &x->upload->loop()) home = l.get();
    }
  } else {
    home = &this->home();
  }
  if (home->loop().in_loop()) {
    home->begin(std::move(x));
  } else if (!home->loop().try_execute([self = shared_from_this(), home, x]() mutable { home->begin(std::move(x)); })) {
    auto error = std::make_exception_ptr(EventLoopTerminatedError("the HTTP client's loop has terminated"));
    if (x->upload) x->upload->stop(error);
    x->result.set_error(error);
  }
}

Future<void> ClientCore::close_pools() {
  std::vector<Future<void>> closed;
  for (auto& l : loops_) {
    Promise<void> done;
    closed.push_back(done.future());
    LoopClient* lc = l.get();
    if (lc->loop().in_loop()) {
      lc->close();
      done.set_value();
    } else if (!lc->loop().try_execute([self = shared_from_this(), lc, done]() mutable {
                 lc->close();
                 done.set_value();
               })) {
      lc->close();  // its thread has ended: nothing else runs there
      done.set_value();
    }
  }
  // Then the blocking transport's resolver, on its own loop, once no loop opens a connection.
  Promise<void> all;
  auto resolver_closed = [self = shared_from_this(), all]() mutable {
    self->shared_resolver_.close().add_listener([all](const Future<void>&) mutable { all.set_value(); });
  };
  auto left = std::make_shared<std::atomic<std::size_t>>(closed.size());
  for (auto& f : closed) {
    f.add_listener([resolver_closed, left](const Future<void>&) mutable {
      if (left->fetch_sub(1) == 1) resolver_closed();
    });
  }
  if (closed.empty()) resolver_closed();
  return all.future();
}

LoopClient::LoopClient(ClientCore& core, EventLoop& loop)
    : core_(core), loop_(loop), connector_(loop, core.group(), core.options(), core.shared_resolver()) {}

void LoopClient::begin(std::shared_ptr<Exchange> x) {
  if (closed_) {
    if (x->upload) x->upload->stop(std::make_exception_ptr(ClientClosedError()));
    x->result.fail(ClientClosedError());
    return;
  }
  StatsCounters::bump(core_.counters().requests);
  const Duration timeout = x->timeout.value_or(core_.options().request_timeout);
  if (timeout > Duration::zero()) {
    deadlines_.insert(*x, loop_.now() + timeout);
    arm_deadline_timer();
  }
  if (x->upload) {
    std::weak_ptr<Exchange> weak = x;
    std::weak_ptr<ClientCore> core = core_.weak_from_this();
    x->upload->on_failure = [this, weak, core](std::exception_ptr error) {
      auto alive = core.lock();  // this LoopClient lives as long as its core
      if (auto strong = weak.lock(); strong && alive) upload_failed(strong, error);
    };
  }
  route(std::move(x));
}

void LoopClient::arm_deadline_timer() {
  Exchange* first = deadlines_.front();
  if (first == nullptr) return;
  if (deadline_timer_) {
    if (deadline_timer_due_ <= first->deadline) return;
    loop_.cancel(*deadline_timer_);  // a request's own shorter timeout came first
    deadline_timer_.reset();
  }
  std::weak_ptr<ClientCore> core = core_.weak_from_this();
  deadline_timer_due_ = first->deadline;
  deadline_timer_ = loop_.schedule(std::max(first->deadline - loop_.now(), Duration::zero()), [this, core] {
    if (auto alive = core.lock()) {  // this LoopClient lives as long as its core
      deadline_timer_.reset();
      deadlines_due();
    }
  });
}

void LoopClient::deadlines_due() {
  // The timer was armed for a first request that may have ended since: the one now first may be due
  // later, and gets the timer then.
  const TimePoint now = loop_.now();
  while (Exchange* first = deadlines_.front()) {
    if (first->deadline > now) break;
    std::shared_ptr<Exchange> x = first->shared_from_this();
    RequestDeadlines::remove(*x);
    timed_out(x);
  }
  arm_deadline_timer();
}

void LoopClient::upload_failed(const std::shared_ptr<Exchange>& x, std::exception_ptr error) {
  if (x->done) return;
  finish(*x);
  if (!closed_) pool_for(x->url).withdraw(*x);
  x->result.set_error(error);
}

OriginPool& LoopClient::pool_for(const Url& url) {
  // Requests come in runs to one origin: the last one found is checked first, without a key or a hash.
  if (last_pool_ != nullptr && url.port() == last_pool_->origin().port() &&
      url.scheme() == last_pool_->origin().scheme() && url.host() == last_pool_->origin().host()) {
    return *last_pool_;
  }
  // scheme://host:port, the port always written (authority() leaves the default one out).
  std::string& key = pool_key_;
  key.assign(url.scheme_name()).append("://");
  if (url.host_is_ipv6()) {
    key.append("[").append(url.host()).append("]");
  } else {
    key.append(url.host());
  }
  char port[8];
  key.append(":").append(port, std::to_chars(port, port + sizeof port, url.port()).ptr);
  auto it = pools_.find(key);
  if (it == pools_.end()) {
    it = pools_
             .emplace(key, std::make_shared<OriginPool>(loop_, connector_, url, core_.options(),
                                                        url.scheme() == Scheme::https ? core_.tls() : TlsContextPtr(),
                                                        *this, core_.counters()))
             .first;
  }
  last_pool_ = it->second.get();
  return *it->second;
}

void LoopClient::route(std::shared_ptr<Exchange> x) {
  OriginPool* pool = nullptr;
  try {
    pool = &pool_for(x->url);
  } catch (...) {  // the https context could not be built
    failed(std::move(x), std::current_exception());
    return;
  }
  pool->submit(std::move(x));
}

void LoopClient::timed_out(const std::shared_ptr<Exchange>& x) {
  if (x->done) return;
  finish(*x);
  auto error = std::make_exception_ptr(TimeoutError(TimeoutError::Kind::request, x->url.to_string()));
  if (x->upload) x->upload->stop(error);  // before the connection's close says otherwise
  if (!closed_) pool_for(x->url).withdraw(*x);
  x->result.set_error(error);
}

void LoopClient::finish(Exchange& x) {
  x.done = true;
  RequestDeadlines::remove(x);
}

void LoopClient::answered(std::shared_ptr<Exchange> x, http::HttpClientResponse&& response) {
  if (x->done) return;
  const ClientOptions& options = core_.options();
  // A streamed request's answer is its head, whatever it is: its body is the caller's to read.
  if (options.follow_redirects && !x->streamed && is_redirect(response.status()) && !closed_) {
    if (auto location = response.header("location")) {
      if (x->redirects >= options.max_redirects) {
        finish(*x);
        x->result.fail(TooManyRedirectsError(x->url.to_string(), options.max_redirects));
        return;
      }
      try {
        x->url = x->url.resolve(*location);
      } catch (...) {
        finish(*x);
        x->result.set_error(std::current_exception());
        return;
      }
      ++x->redirects;
      const int status = response.status();
      if (status == 303 || ((status == 301 || status == 302) && x->method == "POST")) {
        if (x->method != "HEAD") x->method = "GET";
        x->body = ByteBuf();
      }
      x->retried = false;
      x->fresh_only = false;
      StatsCounters::bump(core_.counters().requests);
      route(std::move(x));
      return;
    }
  }
  finish(*x);
  if (x->upload && x->upload->active() && response.status() >= 300) {
    x->upload->stop(std::make_exception_ptr(RequestBodyError(RequestBodyError::Kind::answered, x->url.to_string())));
  }
  x->result.set_value(std::move(response), x->body_stream);
}

void LoopClient::failed(std::shared_ptr<Exchange> x, std::exception_ptr error) {
  if (x->upload) x->upload->stop(error);
  if (x->done) return;
  finish(*x);
  x->result.set_error(error);
}

void LoopClient::close() {
  if (closed_) return;
  closed_ = true;
  auto pools = std::move(pools_);
  pools_.clear();
  last_pool_ = nullptr;
  for (auto& [key, pool] : pools) pool->close_all(std::make_exception_ptr(ClientClosedError()));
  connector_.close();  // after the pools: their connections opening stopped waiting for it
}

}  // namespace weft::client::detail
