// The HTTP client's origin pool: what a request costs it to take an idle keep-alive connection
// and give it back (OriginPool::submit, then the answer through OriginPool::answered), on the
// pool's loop, without network I/O: the connection is one without a socket that carries the
// request as OriginConnection does (in_flight, served, idle_since) and is answered at once. The
// request and its answer are made once and go round. Reports time per request (target: < 150 ns).

#include <benchmark/benchmark.h>

#include <memory>

#include "../src/client/origin_connector.h"
#include "../src/client/origin_pool.h"
#include "weft/core/event_loop_group.h"
#include "weft/transport/epoll.h"

namespace weft::client::detail {
namespace {

// A ready HTTP/1.1 connection without a socket: it holds the request it is given.
class Socketless final : public PooledConnection {
 public:
  using PooledConnection::PooledConnection;
  void send(std::shared_ptr<Exchange> x) override {
    ++in_flight;
    x->on = this;
    carried = std::move(x);
  }
  void abandon(Exchange& x) override { x.on = nullptr; }
  void close() override { dead = true; }
  std::shared_ptr<Exchange> carried;
};

// Where the pool's answers go: kept, for the next round.
class Keep final : public ExchangeSink {
 public:
  void answered(std::shared_ptr<Exchange> x, http::HttpClientResponse&& r) override {
    exchange = std::move(x);
    response = std::move(r);
  }
  void failed(std::shared_ptr<Exchange> x, std::exception_ptr) override { exchange = std::move(x); }
  std::shared_ptr<Exchange> exchange;
  http::HttpClientResponse response;
};

void BM_PoolAcquireRelease(benchmark::State& state) {
  EventLoopGroup group(epoll(), 1, "bench");
  EventLoop& loop = group.at(0);
  ClientOptions options;
  SharedResolver resolver(options);
  StatsCounters stats;
  Keep sink;
  // On the loop, as the client runs its pools.
  Promise<void> done;
  loop.execute([&] {
    OriginConnector connector(loop, group, options, resolver);
    const Url origin = Url::parse("http://127.0.0.1:8080/");
    auto pool = std::make_shared<OriginPool>(loop, connector, origin, options, nullptr, sink, stats);
    auto c = std::make_shared<Socketless>(pool, loop);
    c->ready = true;
    pool->adopt(c);
    sink.exchange = std::make_shared<Exchange>(Url(origin), "GET", Promise<http::HttpClientResponse>());
    for (auto _ : state) {
      pool->submit(std::move(sink.exchange));  // acquire: the idle connection takes it
      c->in_flight = 0;                        // its answer came (OriginConnection::http1_response)
      ++c->served;
      c->idle_since = loop.now();
      pool->answered(*c, std::move(c->carried), std::move(sink.response));  // release
    }
    if (c->served != static_cast<std::size_t>(state.iterations())) state.SkipWithError("a request was not carried");
    pool->close_all(nullptr);
    connector.close();
    done.set_value();
  });
  done.future().get();
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_PoolAcquireRelease)->UseRealTime();

}  // namespace
}  // namespace weft::client::detail
