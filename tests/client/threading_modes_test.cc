// client::HttpClient called from a route in each of weft's five threading modes (weft-hello's
// --mode), on each transport: a front server whose route fetches from an origin with the client and
// answers with what it got.
//   loop             a callback route; the future's listener runs on the route's loop
//   loop-async       the route hands the fetch to an executor thread, which blocks on the future
//   offload          the router runs on an ExecutorGroup; the route blocks on the future there
//   coroutine        a coroutine route co_awaits the client; it resumes on the route's loop
//   coroutine-async  a coroutine route co_awaits offload(a blocking fetch); it resumes on the loop
// Each route checks the thread its answer came on and says so in the response, which the test reads
// with a client of its own. On epoll the route's client shares the front server's loops (a proxy's
// pattern: the request runs on the route's loop); on io_uring and blocking it has loops of its own
// (the answer crosses back to the route's loop). Release runs every mode on every transport; the
// sanitizers run each mode once and each transport at least once. HTTP/2 origins (streams
// multiplexed on the route client's connections) have rows of their own, fewer: h2c by prior
// knowledge in every mode on epoll, h2 over TLS (ALPN) in one mode per transport (sanitizers: three
// rows in all).

#include "support/threading_modes.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "client/origin_servers.h"
#include "support/sanitizers.h"
#include "weft/core/awaitables.h"
#include "weft/core/executor_group.h"
#include "weft/core/task.h"

namespace weft {
namespace {

using client::HttpClient;
using http::HttpClientResponse;
using http::HttpResponse;
using ResponseFuture = Future<HttpClientResponse>;

using Mode = test::ThreadingMode;

// What the origins speak: HTTP/1.1, h2c (the client by prior knowledge), or h2 over TLS (by ALPN).
enum class Origin { http1, h2c, h2_tls };

struct Config {
  Transport* transport;
  Mode mode;
  Origin origin = Origin::http1;
};

std::string config_name(const ::testing::TestParamInfo<Config>& info) {
  const Origin o = info.param.origin;
  return std::string(info.param.transport->name()) + "_" + test::threading_mode_name(info.param.mode) +
         (o == Origin::h2c      ? "_h2c"
          : o == Origin::h2_tls ? "_h2_tls"
                                : "");
}

// The front server's answer for a fetch that failed: 502 naming the typed error the route caught.
HttpResponse answer_from(std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const IoError&) {
    return HttpResponse(502).body("IoError");
  } catch (const client::ClientClosedError&) {
    return HttpResponse(502).body("ClientClosedError");
  } catch (const ChannelClosedError&) {
    return HttpResponse(502).body("ChannelClosedError");
  } catch (const EventLoopTerminatedError&) {
    return HttpResponse(502).body("EventLoopTerminatedError");
  } catch (const std::exception& e) {
    return HttpResponse(500).body(std::string("untyped: ") + e.what());
  }
}

// The front server's answer for a fetch that came: the origin's status and body.
HttpResponse answer_from(const HttpClientResponse& r) {
  return HttpResponse(r.status()).body(ByteBuf::copy_of(r.body_view()));
}

HttpResponse answer_from(const ResponseFuture& fetched) {
  if (auto error = fetched.error()) return answer_from(error);
  return answer_from(fetched.get());
}

// As answer_from, after blocking this (executor) thread until the fetch ends.
HttpResponse answer_after_waiting(const ResponseFuture& fetched) {
  try {
    fetched.wait();
  } catch (const BlockingOperationError& e) {
    return HttpResponse(500).body(std::string("blocking wait refused: ") + e.what());
  }
  return answer_from(fetched);
}

HttpResponse wrong_thread(const char* what) { return HttpResponse(500).body(std::string("wrong thread: ") + what); }

// What a route needs: the client, the executors of the -async modes, and the origins' scheme.
struct RouteDeps {
  HttpClient* client;
  EventLoopGroup* executors;
  const char* scheme = "http";
};

// The origin URL of a front request: /{route}/{port}/{n} fetches {scheme}://127.0.0.1:{port}/item/{n}.
std::string origin_url(const RouteDeps& deps, std::string_view front_path) {
  front_path.remove_prefix(front_path.find('/', 1) + 1);
  const std::size_t slash = front_path.find('/');
  return std::string(deps.scheme) + "://127.0.0.1:" + std::string(front_path.substr(0, slash)) + "/item" +
         std::string(front_path.substr(slash));
}

// GET /fetch/{port}/{n} in `mode`: fetches the origin's /item/{n} with the client and answers with
// what came (see answer_from), or with 500 naming the wrong thread its answer came on.
// GET /blocking-get/{port}/{n}: a blocking get() on the route's thread; where that is a loop (the
// loop and coroutine modes) it must be refused at once with BlockingOperationError.
std::shared_ptr<http::Router> front_routes(Mode mode, RouteDeps deps) {
  auto router = std::make_shared<http::Router>();
  switch (mode) {
    case Mode::loop:
      router->get("/fetch/{port}/{n}", [deps](Context& ctx, http::HttpRequest& request) {
        ChannelPtr channel = ctx.channel().shared_from_this();
        EventLoop* route_loop = EventLoop::current();
        deps.client->get(origin_url(deps, request.path()))
            .add_listener([channel, route_loop, sequence = request.sequence()](const ResponseFuture& f) {
              HttpResponse r = route_loop->in_loop() ? answer_from(f) : wrong_thread("listener off the route's loop");
              r.for_request(sequence);
              channel->write_and_flush(std::move(r));
            });
      });
      break;
    case Mode::loop_async:
      router->get("/fetch/{port}/{n}", [deps](Context& ctx, http::HttpRequest& request) {
        ChannelPtr channel = ctx.channel().shared_from_this();
        deps.executors->at(channel->id() % deps.executors->size())
            .execute([deps, channel, url = origin_url(deps, request.path()), sequence = request.sequence()] {
              HttpResponse r =
                  channel->loop().in_loop() ? wrong_thread("on the loop") : answer_after_waiting(deps.client->get(url));
              r.for_request(sequence);
              channel->write_and_flush(std::move(r));
            });
      });
      break;
    case Mode::offload:
      router->get("/fetch/{port}/{n}", [deps](http::Request& request) {
        if (request.channel().loop().in_loop()) return wrong_thread("the router runs on the loop");
        return answer_after_waiting(deps.client->get(origin_url(deps, request.path())));
      });
      break;
    case Mode::coroutine:
      router->get("/fetch/{port}/{n}", [deps](http::Request& request) -> Task<HttpResponse> {
        EventLoop& route_loop = request.channel().loop();
        HttpResponse r;
        try {
          r = answer_from(co_await deps.client->get(origin_url(deps, request.path())));
        } catch (const std::exception&) {
          r = answer_from(std::current_exception());
        }
        if (!route_loop.in_loop()) co_return wrong_thread("co_await resumed off the route's loop");
        co_return r;
      });
      break;
    case Mode::coroutine_async:
      router->get("/fetch/{port}/{n}", [deps](http::Request& request) -> Task<HttpResponse> {
        EventLoop& route_loop = request.channel().loop();
        auto fetch = [deps, url = origin_url(deps, request.path())] {
          return answer_after_waiting(deps.client->get(url));
        };
        HttpResponse r = co_await offload(*deps.executors, std::move(fetch));
        if (!route_loop.in_loop()) co_return wrong_thread("offload resumed off the route's loop");
        co_return r;
      });
      break;
  }
  router->get("/blocking-get/{port}/{n}", [deps](http::Request& request) {
    try {
      deps.client->get(origin_url(deps, request.path())).wait();
      return HttpResponse(200).body("blocked");
    } catch (const BlockingOperationError&) {
      return HttpResponse(200).body("refused");
    }
  });
  return router;
}

// The origin: GET /item/{n} answers "item-{n}"; closing after every answer when asked; HTTP/1.1
// unless `origin` says otherwise.
ChannelPtr serve_items(EventLoopGroup& group, bool close_after_each, Origin origin = Origin::http1) {
  auto router = std::make_shared<http::Router>();
  router->get("/item/{n}", [close_after_each](http::Request& request) {
    HttpResponse r(200);
    r.body("item-" + std::string(*request.param("n")));
    if (close_after_each) r.close_connection();
    return r;
  });
  TlsContextPtr tls =
      origin == Origin::h2_tls ? test::test_server_context(test::test_pki().localhost, {"h2"}) : nullptr;
  return ServerBootstrap()
      .group(group)
      .child_handler([router, origin, tls](Channel& ch) {
        if (tls) ch.pipeline().add_last("tls", std::make_shared<TlsHandler>(tls));
        if (origin == Origin::http1) {
          ch.pipeline().add_last("http1", std::make_shared<http::ServerCodec>());
        } else {
          ch.pipeline().add_last("http2", std::make_shared<http2::ServerCodec>());
        }
        ch.pipeline().add_last("router", router);
      })
      .bind(SocketAddress::loopback(0))
      .get();
}

std::string port_of(const ChannelPtr& server) { return std::to_string(server->local_address().port()); }

class ClientThreadingModesTest : public ::testing::TestWithParam<Config> {
 protected:
#if defined(WEFT_TEST_SANITIZED)
  static constexpr int kConcurrency = 16;
#else
  static constexpr int kConcurrency = 64;
#endif
  // The route client's bound per origin (and loop): with more requests than this, some wait in a
  // pool's queue.
  static constexpr int kRouteConnections = 16;

  Transport& transport() const { return *GetParam().transport; }
  Mode mode() const { return GetParam().mode; }
  Origin origin() const { return GetParam().origin; }
  bool is_blocking() const { return transport().name() == "blocking"; }
  std::size_t loops(std::size_t epoll_loops, std::size_t channels) const {
    return is_blocking() ? channels : epoll_loops;
  }

  // Requests `path` on the front server, from the test's own client.
  ResponseFuture front_get(const std::string& path) {
    return driver_->get("http://127.0.0.1:" + port_of(front_server_) + path);
  }

  // Blocking: a loop per channel -- the front's listener and the driver's connections; the route
  // client's connections and the origins' accepted ones -- with room for closed ones that linger.
  // The groups that run route code (executors_, offload_) go after the front's loops, the clients
  // after every group: each is destroyed before what it uses.
  EventLoopGroup origins_{transport(), loops(1, 3 * kConcurrency + 16)};
  EventLoopGroup front_{transport(), loops(2, 2 * kConcurrency + 16)};
  std::optional<EventLoopGroup> client_loops_;
  EventLoopGroup executors_{executor_driver_factory(), 2, "modes-exec"};
  std::optional<ExecutorGroup> offload_;
  EventLoopGroup driver_loops_{epoll(), 1, "modes-driver"};
  std::optional<HttpClient> client_;  // the route's
  std::optional<HttpClient> driver_;  // the test's, to the front server
  ChannelPtr front_server_;

  void SetUp() override {
    client::ClientOptions options;
    options.max_connections_per_origin = kRouteConnections;
    options.http2_prior_knowledge = origin() == Origin::h2c;
    if (origin() == Origin::h2_tls) {
      options.tls = TlsContext::client().trust_pem(test::test_pki().ca.cert_pem).application_protocols({"h2"}).build();
    }
    if (transport().name() == "epoll") {
      client_.emplace(front_, options);
    } else {
      client_loops_.emplace(transport(), loops(2, 3 * kConcurrency + 16), "modes-client");
      client_.emplace(*client_loops_, options);
    }
    client::ClientOptions driver_options;
    driver_options.max_connections_per_origin = kConcurrency;
    driver_.emplace(driver_loops_, driver_options);
    if (mode() == Mode::offload) offload_.emplace(ExecutorGroup::Options{.threads = 4, .name = "modes-offload"});
    auto router =
        front_routes(mode(), RouteDeps{&*client_, &executors_, origin() == Origin::h2_tls ? "https" : "http"});
    ExecutorGroup* offload = offload_ ? &*offload_ : nullptr;
    front_server_ = ServerBootstrap()
                        .group(front_)
                        .child_handler([router, offload](Channel& ch) {
                          ch.pipeline().add_last("http1", std::make_shared<http::ServerCodec>());
                          if (offload != nullptr) {
                            ch.pipeline().add_last(*offload, "router", router);
                          } else {
                            ch.pipeline().add_last("router", router);
                          }
                        })
                        .bind(SocketAddress::loopback(0))
                        .get();
  }

  // The clients first, then the front's loops (whose pipelines use offload_), as weft-hello does;
  // The executors' queued route code uses the client: they stop before it goes.
  void TearDown() override {
    driver_.reset();
    if (client_) client_->close().wait();
    executors_.shutdown_gracefully(Duration::zero(), std::chrono::milliseconds(100)).wait();
    if (offload_) offload_->shutdown_gracefully(Duration::zero(), std::chrono::milliseconds(100)).wait();
    client_.reset();
    front_.shutdown_gracefully(Duration::zero(), std::chrono::milliseconds(100)).wait();
  }
};

// kConcurrency requests at once to a keep-alive origin, as many to one that closes after every
// answer (each a reconnect), and a few to a port that refuses: each answer is the origin's, or the
// typed error (IoError), and it came on the thread the mode promises.
TEST_P(ClientThreadingModesTest, ConcurrentFetchesReconnectsAndRefusals) {
  ChannelPtr keep = serve_items(origins_, false);
  ChannelPtr closing = serve_items(origins_, true);
  ChannelPtr refusing = serve_items(origins_, false);
  const std::string refused_port = port_of(refusing);
  refusing->close().wait();

  struct Expected {
    ResponseFuture answer;
    int status;
    std::string body;
  };
  std::vector<Expected> expected;
  for (int i = 0; i < kConcurrency; ++i) {
    const std::string n = std::to_string(i);
    expected.push_back({front_get("/fetch/" + port_of(keep) + "/" + n), 200, "item-" + n});
    expected.push_back({front_get("/fetch/" + port_of(closing) + "/" + n), 200, "item-" + n});
    if (i % 8 == 0) expected.push_back({front_get("/fetch/" + refused_port + "/" + n), 502, "IoError"});
  }
  // A blocking get() where the route runs on a loop (every mode's but offload's routes) is refused
  // at once with BlockingOperationError, never a deadlock; the executors' fetches above block on it.
  // Its origin never answers, so the future is still pending when get() is called.
  ChannelPtr silent = test::serve_raw(origins_, [](Context&, int) {});
  if (mode() != Mode::offload) {
    expected.push_back({front_get("/blocking-get/" + port_of(silent) + "/1"), 200, "refused"});
  }
  for (Expected& e : expected) {
    const HttpClientResponse& r = test::answer_of(e.answer);
    EXPECT_EQ(r.status(), e.status) << r.body_view();
    EXPECT_EQ(r.body_view(), e.body);
  }
  const client::ClientStats stats = client_->stats();
  EXPECT_GE(stats.connections_opened, static_cast<std::uint64_t>(kConcurrency));  // the closing origin's
  EXPECT_GE(stats.connect_failures, static_cast<std::uint64_t>(kConcurrency / 8));
}

// The front server shuts down while every route waits for an origin that never answers (some
// fetches sent, others waiting in a pool's queue): the test's
// requests all end (no hang) -- failed with the front's connections, or answered 502 where a route
// saw its fetch fail first --, the route's client closes, and nothing is left behind (ASan, the
// buffer leak check, TSan).
TEST_P(ClientThreadingModesTest, ServerShutDownWithFetchesInFlight) {
  auto seen = std::make_shared<std::atomic<int>>(0);
  // Fetches sure to reach the origin: the loop modes send kRouteConnections at once; the executor
  // modes as many as their threads block on (offload's channels may share one thread).
  const int wire = mode() == Mode::loop || mode() == Mode::coroutine ? kRouteConnections
                   : mode() == Mode::offload                         ? 1
                                                                     : static_cast<int>(executors_.size());
  Promise<void> on_the_wire;
  ChannelPtr silent = test::serve_raw(origins_, [seen, on_the_wire, wire](Context&, int) mutable {
    if (seen->fetch_add(1) + 1 == wire) on_the_wire.set_value();
  });
  std::vector<ResponseFuture> answers;
  for (int i = 0; i < kConcurrency; ++i)
    answers.push_back(front_get("/fetch/" + port_of(silent) + "/" + std::to_string(i)));
  ASSERT_TRUE(on_the_wire.future().wait_for(std::chrono::seconds(60)));

  front_server_->close().wait();
  front_.shutdown_gracefully(Duration::zero(), std::chrono::milliseconds(100)).wait();
  client_->close().wait();  // fails what the front's loops did not close, and every later fetch
  for (ResponseFuture& f : answers) {
    ASSERT_TRUE(f.wait_for(std::chrono::seconds(60)));
    if (f.is_success()) {
      EXPECT_EQ(f.get().status(), 502) << f.get().body_view();
    }
  }
}

// The HTTP/2 rows: kConcurrency requests at once to an h2c or h2-over-TLS origin, multiplexed as
// streams on the route client's connections: each answer is the origin's, on the mode's thread.
class ClientThreadingModesHttp2Test : public ClientThreadingModesTest {};

TEST_P(ClientThreadingModesHttp2Test, ConcurrentFetchesAsStreams) {
  ChannelPtr origin_server = serve_items(origins_, false, origin());
  std::vector<ResponseFuture> answers;
  for (int i = 0; i < kConcurrency; ++i) {
    answers.push_back(front_get("/fetch/" + port_of(origin_server) + "/" + std::to_string(i)));
  }
  for (int i = 0; i < kConcurrency; ++i) {
    const HttpClientResponse& r = test::answer_of(answers[i]);
    EXPECT_EQ(r.status(), 200) << r.body_view();
    EXPECT_EQ(r.body_view(), "item-" + std::to_string(i));
  }
  // Streams, not a connection per request: at most one connection per pool (per client loop).
  const std::size_t pools = client_loops_ ? client_loops_->size() : front_.size();
  EXPECT_LE(client_->stats().connections_opened, pools);
}

std::vector<Config> http2_configs() {
#if defined(WEFT_TEST_SANITIZED)
  return {{&epoll(), Mode::coroutine, Origin::h2c},
          {&io_uring(), Mode::loop_async, Origin::h2c},
          {&epoll(), Mode::offload, Origin::h2_tls}};
#else
  std::vector<Config> all;
  for (Mode m : {Mode::loop, Mode::loop_async, Mode::offload, Mode::coroutine, Mode::coroutine_async}) {
    all.push_back({&epoll(), m, Origin::h2c});
  }
  all.push_back({&epoll(), Mode::coroutine_async, Origin::h2_tls});
  all.push_back({&io_uring(), Mode::loop, Origin::h2_tls});
  all.push_back({&blocking(), Mode::coroutine, Origin::h2_tls});
  return all;
#endif
}

INSTANTIATE_TEST_SUITE_P(On, ClientThreadingModesHttp2Test, ::testing::ValuesIn(http2_configs()), config_name);

std::vector<Config> configs() {
  std::vector<Config> all;
#if defined(WEFT_TEST_SANITIZED)
  // Each mode once, each transport at least once.
  all = {{&epoll(), Mode::loop},
         {&io_uring(), Mode::loop_async},
         {&blocking(), Mode::offload},
         {&io_uring(), Mode::coroutine},
         {&epoll(), Mode::coroutine_async}};
#else
  for (Transport* t : {&epoll(), &io_uring(), &blocking()}) {
    for (Mode m : {Mode::loop, Mode::loop_async, Mode::offload, Mode::coroutine, Mode::coroutine_async}) {
      all.push_back({t, m});
    }
  }
#endif
  return all;
}

INSTANTIATE_TEST_SUITE_P(On, ClientThreadingModesTest, ::testing::ValuesIn(configs()), config_name);

}  // namespace
}  // namespace weft
