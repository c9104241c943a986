// WebSocket in each of weft's five threading modes (weft-hello's --mode), on each transport: the
// server's echo in the mode's form, and the client opened and run from the mode's kind of thread.
//   loop             callbacks; the client opened from a loop, its future's listener on that loop
//   loop-async       callbacks that hand each echo to an executor thread, which writes it back; the
//                    client opened from an executor thread, blocking on its future there
//   offload          the router on an ExecutorGroup (the route upgrades from there); the client
//                    opened from an ExecutorGroup thread, blocking on its future
//   coroutine        a coroutine echo; the client co_awaited from a coroutine on a loop
//   coroutine-async  a coroutine echo whose each answer comes from co_await offload(...); the
//                    client opened by a blocking call offloaded from a coroutine
// Each mode opens one WebSocket over HTTP/1.1 and one over h2c (RFC 8441), echoes three messages,
// closes with 1000, and checks the thread each answer came on. Release runs every mode on every
// transport; the sanitizers every mode on epoll and one mode on each other transport.

#include "support/threading_modes.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "support/blocking_client.h"
#include "support/sanitizers.h"
#include "weft/channel/bootstrap.h"
#include "weft/client/http_client.h"
#include "weft/codec/http1/router.h"
#include "weft/codec/http2/cleartext_detector.h"
#include "weft/codec/websocket/upgrade.h"
#include "weft/core/awaitables.h"
#include "weft/core/executor_group.h"
#include "weft/core/spawn.h"
#include "weft/core/task.h"
#include "weft/transport/blocking.h"
#include "weft/transport/epoll.h"
#include "weft/transport/io_uring.h"

using namespace std::chrono_literals;

// A namespace of its own: the unity build puts this file beside the other WebSocket tests.
namespace weft::ws_threading_modes_test {
namespace {

using Mode = test::ThreadingMode;

struct Config {
  Transport* transport;
  Mode mode;
};

std::string config_name(const ::testing::TestParamInfo<Config>& info) {
  return std::string(info.param.transport->name()) + "_" + test::threading_mode_name(info.param.mode);
}

// What one client WebSocket saw: the echoes in order, then the close's code; or what went wrong
// (a wrong thread, an error).
struct Seen {
  std::vector<std::string> echoes;
  std::uint16_t close_code = 0;
  std::string wrong;
};

const std::vector<std::string> kMessages = {"one", "two", std::string(70000, 'x')};  // (the last: > 64 KiB)

class WebSocketThreadingModesTest : public ::testing::TestWithParam<Config> {
 protected:
  Transport& transport() const { return *GetParam().transport; }
  Mode mode() const { return GetParam().mode; }
  std::size_t loops(std::size_t epoll_loops, std::size_t channels) const {
    return transport().name() == "blocking" ? channels : epoll_loops;
  }

  EventLoopGroup servers_{transport(), loops(1, 16)};
  EventLoopGroup clients_{transport(), loops(2, 16)};
  EventLoopGroup executors_{executor_driver_factory(), 2, "ws-modes-exec"};
  std::optional<ExecutorGroup> offload_;
  std::optional<client::HttpClient> client_;
  ChannelPtr server_;
  std::mutex mutex_;
  std::vector<std::uint16_t> server_closes_;

  void SetUp() override {
    if (mode() == Mode::offload) offload_.emplace(ExecutorGroup::Options{.threads = 2, .name = "ws-modes-offload"});
    auto router = std::make_shared<http::Router>();
    add_echo(*router);
    http2::Settings settings;
    settings.enable_connect_protocol = true;
    ExecutorGroup* offload = offload_ ? &*offload_ : nullptr;
    server_ =
        ServerBootstrap()
            .group(servers_)
            .child_handler([router, offload, settings](Channel& ch) {
              ch.pipeline().add_last("detect", std::make_shared<http2::CleartextDetector>(http::Limits{}, settings));
              if (offload != nullptr) {
                ch.pipeline().add_last(*offload, "router", router);
              } else {
                ch.pipeline().add_last("router", router);
              }
            })
            .bind(SocketAddress::loopback(0))
            .get();
    client::ClientOptions options;
    options.http2_prior_knowledge = true;  // ws:// over h2c when a WebSocket asks for HTTP/2
    client_.emplace(clients_, options);
  }
  void TearDown() override {
    client_->close().wait();
    client_.reset();
    server_->close().wait();
    servers_.shutdown_gracefully(0ms, 5s).wait();
    if (offload_) offload_->shutdown_gracefully(0ms, 5s).wait();
    executors_.shutdown_gracefully(0ms, 5s).wait();
    clients_.shutdown_gracefully(0ms, 5s).wait();
  }

  void note_server_close(std::uint16_t code) {
    std::lock_guard lock(mutex_);
    server_closes_.push_back(code);
  }

  // /echo in the mode's form (see the file's description).
  void add_echo(http::Router& router) {
    auto on_close = [this](Context&, const ws::Message& m) { note_server_close(m.close_code()); };
    switch (mode()) {
      case Mode::loop:
      case Mode::offload:
        ws::websocket(
            router, "/echo",
            ws::Callbacks{.on_message = [](Context& ctx, ws::Message& m) { ctx.write_and_flush(std::move(m)); },
                          .on_close = on_close});
        break;
      case Mode::loop_async:
        ws::websocket(router, "/echo",
                      ws::Callbacks{.on_message =
                                        [this](Context& ctx, ws::Message& m) {
                                          ChannelPtr channel = ctx.channel().shared_from_this();
                                          // One executor per connection: its echoes stay in order.
                                          EventLoop& executor = executors_.at(channel->id() % executors_.size());
                                          executor.execute([channel, m = std::move(m)]() mutable {
                                            channel->write_and_flush(std::move(m));  // thread-safe: posted to the loop
                                          });
                                        },
                                    .on_close = on_close});
        break;
      case Mode::coroutine:
      case Mode::coroutine_async: {
        const bool async = mode() == Mode::coroutine_async;
        ws::websocket(router, "/echo", [this, async](Connection<ws::Message>& c) -> Task<> {
          for (;;) {
            ws::Message m = co_await c.read();
            if (m.is_close()) {
              note_server_close(m.close_code());
              co_return;
            }
            if (async) {
              auto answer = offload(executors_, [t = std::string(m.view())] { return t; });
              std::string text = co_await answer;
              co_await c.write(ws::Message::text(text));
            } else {
              co_await c.write(std::move(m));
            }
            c.flush();
          }
        });
        break;
      }
    }
  }

  std::string url() const { return "ws://127.0.0.1:" + std::to_string(server_->local_address().port()) + "/echo"; }

  // The callbacks that send kMessages at the open, collect the echoes, close with 1000 after the
  // last, and report at the close; each callback checks it runs on the connection's loop.
  static ws::Callbacks script_callbacks(std::shared_ptr<Promise<Seen>> done) {
    auto seen = std::make_shared<Seen>();
    return ws::Callbacks{.on_open =
                             [](Context& ctx, const ws::Handshake&) {
                               for (const std::string& m : kMessages) ctx.write(ws::Message::text(m));
                               ctx.flush();
                             },
                         .on_message =
                             [seen](Context& ctx, ws::Message& m) {
                               if (!ctx.channel().loop().in_loop())
                                 seen->wrong = "on_message off the connection's loop";
                               seen->echoes.emplace_back(m.view());
                               if (seen->echoes.size() == kMessages.size())
                                 ctx.write_and_flush(ws::Message::close(1000));
                             },
                         .on_close =
                             [seen, done](Context&, const ws::Message& m) {
                               seen->close_code = m.close_code();
                               done->set_value(std::move(*seen));
                             }};
  }

  // The coroutine form of script_callbacks.
  static ws::CoroutineFn script_coroutine(std::shared_ptr<Promise<Seen>> done) {
    return [done](Connection<ws::Message>& c) -> Task<> {
      Seen seen;
      try {
        for (const std::string& m : kMessages) co_await c.write(ws::Message::text(m));
        c.flush();
        while (seen.echoes.size() < kMessages.size()) seen.echoes.emplace_back((co_await c.read()).view());
        co_await c.write(ws::Message::close(1000));
        c.flush();
        for (;;) {
          ws::Message m = co_await c.read();
          if (m.is_close()) {
            seen.close_code = m.close_code();
            break;
          }
        }
      } catch (...) {
        done->set_error(std::current_exception());
        co_return;
      }
      done->set_value(std::move(seen));
    };
  }

  // The coroutine modes' opening: co_await the client, or offload a blocking call to it; then
  // check the thread it resumed on and the version.
  static Task<> open_from_coroutine(client::HttpClient* client, std::string target, client::WebSocketOptions options,
                                    std::shared_ptr<Promise<Seen>> done, Promise<std::string> opened, bool async,
                                    EventLoopGroup* executors, EventLoop* loop, bool http2) {
    try {
      std::optional<ws::Handshake> h;
      if (async) {
        auto blocking_open = offload(*executors, [client, target, options, done] {
          return client->websocket(target, script_coroutine(done), options).get();
        });
        ws::Handshake got = co_await blocking_open;
        h.emplace(std::move(got));
      } else {
        Future<ws::Handshake> opening = client->websocket(target, script_coroutine(done), options);
        ws::Handshake got = co_await opening;
        h.emplace(std::move(got));
      }
      if (!loop->in_loop()) {
        opened.set_value("resumed off the caller's loop");
      } else {
        opened.set_value((h->version == http::Version::http2) == http2 ? "" : "the wrong HTTP version");
      }
    } catch (...) {
      opened.set_error(std::current_exception());
    }
  }

  // Opens a WebSocket to /echo from the mode's kind of thread (HTTP/1.1, or h2c with `http2`) and
  // runs the script on it; `opened` gets what the opening saw: "" or what was wrong.
  Future<Seen> open_and_run(bool http2, Promise<std::string> opened) {
    auto done = std::make_shared<Promise<Seen>>();
    Future<Seen> seen = done->future();
    const client::WebSocketOptions options{.http2 =
                                               http2 ? client::WebSocketHttp2::require : client::WebSocketHttp2::never};
    client::HttpClient* client = &*client_;
    const std::string target = url();
    // A version other than the one asked for is wrong too.
    auto check = [http2](const ws::Handshake& h) -> std::string {
      return (h.version == http::Version::http2) == http2 ? "" : "the wrong HTTP version";
    };
    switch (mode()) {
      case Mode::loop: {
        EventLoop& loop = clients_.next();
        loop.execute([client, target, options, done, opened, check, &loop]() mutable {
          client->websocket(target, script_callbacks(done), options)
              .add_listener([opened, check, &loop](const Future<ws::Handshake>& f) mutable {
                if (!loop.in_loop()) {
                  opened.set_value("listener off the caller's loop");
                } else if (auto error = f.error()) {
                  opened.set_error(error);
                } else {
                  opened.set_value(check(f.get()));
                }
              });
        });
        break;
      }
      case Mode::loop_async:
      case Mode::offload: {
        EventLoop& executor = mode() == Mode::offload ? offload_->next() : executors_.next();
        executor.execute([client, target, options, done, opened, check]() mutable {
          try {
            opened.set_value(check(client->websocket(target, script_callbacks(done), options).get()));  // blocks here
          } catch (...) {
            opened.set_error(std::current_exception());
          }
        });
        break;
      }
      case Mode::coroutine:
      case Mode::coroutine_async: {
        const bool async = mode() == Mode::coroutine_async;
        EventLoop& loop = clients_.next();
        spawn_detached(loop,
                       open_from_coroutine(client, target, options, done, opened, async, &executors_, &loop, http2));
        break;
      }
    }
    return seen;
  }
};

TEST_P(WebSocketThreadingModesTest, ClientAndServerEchoOverHttp1AndH2c) {
  for (const bool http2 : {false, true}) {
    SCOPED_TRACE(http2 ? "h2c" : "HTTP/1.1");
    Promise<std::string> opened;
    Future<std::string> opened_future = opened.future();
    Future<Seen> seen = open_and_run(http2, opened);
    EXPECT_EQ(opened_future.get(), "");
    const Seen& s = seen.get();
    EXPECT_EQ(s.wrong, "");
    EXPECT_TRUE(s.echoes == kMessages) << s.echoes.size() << " echoes";
    EXPECT_EQ(s.close_code, 1000) << "the server's echo of the client's close";
  }
  EXPECT_TRUE(test::eventually([&] {
    std::lock_guard lock(mutex_);
    return server_closes_ == std::vector<std::uint16_t>{1000, 1000};
  }));
}

std::vector<Config> configs() {
  std::vector<Config> out;
  const Mode modes[] = {Mode::loop, Mode::loop_async, Mode::offload, Mode::coroutine, Mode::coroutine_async};
  Transport* transports[] = {&epoll(), &io_uring(), &blocking()};
#if defined(WEFT_TEST_SANITIZED)
  constexpr bool sanitized = true;
#else
  constexpr bool sanitized = false;
#endif
  for (Transport* t : transports) {
    for (Mode m : modes) {
      // Sanitizers: every mode on epoll, offload on io_uring, coroutine-async on blocking.
      if (sanitized && t != &epoll() && m != (t == &io_uring() ? Mode::offload : Mode::coroutine_async)) continue;
      out.push_back({t, m});
    }
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Modes, WebSocketThreadingModesTest, ::testing::ValuesIn(configs()), config_name);

}  // namespace
}  // namespace weft::ws_threading_modes_test
