// grpc::ClientChannel (weft/grpc/channel.h) against weft's gRPC servers and scripted HTTP/2 peers:
// target names; round_robin spreading calls over 3 servers; pick_first passing a dead address (and
// a dns: target whose first address refuses); a killed server's calls moving to the other and
// coming back once it restarts; calls that wait for a connection (wait_for_ready, their deadline,
// UNAVAILABLE without it); refused calls sent again (REFUSED_STREAM, GOAWAY) within the retry
// budget; close() with calls waiting. On epoll and io_uring; the blocking transport, whose loops
// serve one connection each, is refused with a clear error.

#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "support/h2_frames.h"
#include "support/h2_scripted_server.h"
#include "support/random_port.h"
#include "support/transports.h"
#include "weft/codec/http2/server_codec.h"
#include "weft/core/loop_signal.h"
#include "weft/grpc/channel.h"
#include "weft/grpc/service_registry.h"
#include "weft/weft.h"

using namespace std::chrono_literals;

namespace weft::grpc {
namespace {

constexpr std::string_view kWhich = "/test.Which/Name";
constexpr std::string_view kHang = "/test.Which/Hang";

// A callback-form call: sends one message, half-closes, reads what comes if `reads`; `done`
// completes with "CODE:last message".
class OneMessage final : public ClientReactor {
 public:
  explicit OneMessage(bool reads) : reads_(reads) {}
  void start() {
    stream().start_write(ByteBuf::copy_of("?"));
    stream().writes_done();
    if (reads_) stream().start_read();
  }
  void on_read_done(std::optional<ByteBuf> message) override {
    if (!message) return;
    heard_ = std::string(message->view());
    stream().start_read();
  }
  void on_done(const Status& status) override {
    done.set_value(std::string(status_code_name(status.code)) + ":" + heard_);
  }
  Promise<std::string> done;

 private:
  bool reads_;
  std::string heard_;
};

// A gRPC server on a loop of its own whose kWhich answers its name; kill() ends it and its
// connections, restart() serves the same port again.
class NamedServer {
 public:
  NamedServer(Transport& transport, std::string name) : transport_(transport), name_(std::move(name)) {
    for (int tries = 0; !server_ && tries < 100; ++tries) start(SocketAddress::loopback(test::random_port()));
    if (!server_) throw std::runtime_error("no free port for the test server");
  }
  // Serves `address` (a Unix domain socket's).
  NamedServer(Transport& transport, std::string name, const SocketAddress& address)
      : transport_(transport), name_(std::move(name)) {
    start(address);
    if (!server_) throw std::runtime_error("cannot serve " + address.to_string());
  }
  ~NamedServer() { kill(); }

  void kill() {
    if (server_) server_->close().wait();
    server_.reset();
    group_.reset();  // its loops end, and the connections they served close
  }
  void restart() {
    for (int tries = 0; !server_ && tries < 100; ++tries) start(bound_);
    if (!server_) throw std::runtime_error(bound_.to_string() + " could not be served again");
  }
  std::uint16_t port() const { return bound_.port(); }
  std::string address() const { return bound_.to_string(); }
  std::size_t calls() const { return calls_->load(); }
  // Completes when a kHang call first reached the server.
  Future<void> hung() const { return hung_->future(); }

 private:
  void start(const SocketAddress& address) {
    // On the blocking transport a loop serves one channel: the listener and a few connections.
    group_ = std::make_unique<EventLoopGroup>(transport_, transport_.name() == "blocking" ? 4 : 1);
    ServiceRegistry services;
    services.add_unary(std::string(kWhich), [calls = calls_, name = name_](ServerCall&, ByteBuf) -> Task<ByteBuf> {
      calls->fetch_add(1);
      co_return ByteBuf::copy_of(name);
    });
    // Never answers: reads until the call ends.
    services.add(std::string(kHang), [hung = hung_](ServerCall& call) -> Task<> {
      hung->set_value();
      while (co_await call.read()) {
      }
    });
    http2::Settings settings;
    settings.stream_initializer = services.stream_chooser();
    try {
      server_ = ServerBootstrap()
                    .group(*group_)
                    .child_handler([settings](weft::Channel& ch) {
                      ch.pipeline().add_last("http2", std::make_shared<http2::ServerCodec>(settings));
                    })
                    .bind(address)
                    .get();
      bound_ = address;
    } catch (const IoError&) {
      group_.reset();  // taken: the caller tries again
    }
  }

  Transport& transport_;
  std::string name_;
  SocketAddress bound_;
  std::shared_ptr<std::atomic<std::size_t>> calls_ = std::make_shared<std::atomic<std::size_t>>(0);
  std::shared_ptr<Promise<void>> hung_ = std::make_shared<Promise<void>>();
  std::unique_ptr<EventLoopGroup> group_;
  ChannelPtr server_;
};

// A peer that answers each call's HEADERS with `answer(stream)` (RST_STREAM REFUSED_STREAM...).
struct ScriptedPeer {
  ScriptedPeer(EventLoopGroup& group, test::ScriptedH2Script script)
      : server(test::serve_scripted_h2(group, false, std::move(script), log)) {}
  std::string address() const { return "127.0.0.1:" + std::to_string(server->local_address().port()); }
  std::shared_ptr<test::ScriptedH2Log> log = std::make_shared<test::ScriptedH2Log>();
  ChannelPtr server;
};

test::ScriptedH2Script refusing() {
  test::ScriptedH2Script script;
  script.answer = [](std::uint32_t stream) { return test::frame(NGHTTP2_RST_STREAM, 0, stream, test::u32(0x7)); };
  return script;
}

class GrpcChannelTest : public test::TransportTest {
 protected:
  void TearDown() override {
    if (channel_) channel_->close().wait();
    channel_.reset();
  }

  std::shared_ptr<ClientChannel> open(const std::string& target, LoadBalancing policy,
                                      std::function<void(ChannelOptions&)> tune = {}) {
    ChannelOptions options;
    options.load_balancing = policy;
    options.backoff.initial = 10ms;
    options.backoff.max = 100ms;
    options.backoff.min_connect_timeout = 10s;
    if (tune) tune(options);
    channel_ = ClientChannel::create(client_loops_.at(0), target, options);
    return channel_;
  }

  template <class T>
  T run(Task<T> task) {
    Future<T> done = spawn(channel_->loop(), std::move(task));
    EXPECT_TRUE(done.wait_for(60s)) << "the task did not end";
    return done.get();
  }

  // Waits (on the channel's loop; at most 30 s, then fails) until `pred(stats)` holds.
  void wait_until(std::function<bool(const ChannelStats&)> pred, const char* what) {
    auto poll = [](std::shared_ptr<ClientChannel> ch, std::function<bool(const ChannelStats&)> p) -> Task<bool> {
      for (int i = 0; i < 30'000; ++i) {
        if (p(ch->stats())) co_return true;
        co_await weft::sleep(1ms);
      }
      co_return false;
    };
    ASSERT_TRUE(run(poll(channel_, std::move(pred)))) << "waited in vain for " << what;
  }
  void wait_for_ready_connections(std::size_t n) {
    wait_until([n](const ChannelStats& s) { return s.ready_connections == n; }, "the connections");
  }

  // `n` unary calls of kWhich one after the other: "name" or "CODE:message" each.
  std::vector<std::string> calls(std::size_t n, CallOptions options = {}) {
    auto many = [](std::shared_ptr<ClientChannel> ch, std::size_t count,
                   CallOptions o) -> Task<std::vector<std::string>> {
      std::vector<std::string> out;
      for (std::size_t i = 0; i < count; ++i) {
        UnaryResult r = co_await ch->unary(std::string(kWhich), ByteBuf::copy_of("?"), o);
        out.push_back(r.status.ok() ? std::string(r.message.view())
                                    : std::string(status_code_name(r.status.code)) + ":" + r.status.message);
      }
      co_return out;
    };
    return run(many(channel_, n, std::move(options)));
  }

  EventLoopGroup client_loops_{transport(), 1};
  EventLoopGroup peer_loops_{transport(), loops(1, 8)};
  std::shared_ptr<ClientChannel> channel_;
};

TEST(GrpcChannelTargetTest, TargetsAreParsedAsGrpcNamesThem) {
  ChannelTarget dns = parse_target("dns:///example.com:8080");
  EXPECT_EQ(dns.host, "example.com");
  EXPECT_EQ(dns.port, 8080);
  EXPECT_TRUE(dns.addresses.empty());
  EXPECT_EQ(dns.authority, "example.com:8080");
  EXPECT_EQ(parse_target("example.com").port, 443);
  EXPECT_EQ(parse_target("dns:localhost:50051").host, "localhost");
  EXPECT_EQ(parse_target("dns:[::1]:7").authority, "[::1]:7");

  ChannelTarget v4 = parse_target("ipv4:127.0.0.1:1,10.0.0.2:2");
  ASSERT_EQ(v4.addresses.size(), 2u);
  EXPECT_EQ(v4.addresses[1].to_string(), "10.0.0.2:2");
  EXPECT_EQ(v4.authority, "127.0.0.1:1");
  ChannelTarget v6 = parse_target("ipv6:[::1]:50051,::1");
  ASSERT_EQ(v6.addresses.size(), 2u);
  EXPECT_EQ(v6.addresses[0].to_string(), "[::1]:50051");
  EXPECT_EQ(v6.addresses[1].port(), 443);

  ChannelTarget file = parse_target("unix:///run/app.sock");
  ASSERT_EQ(file.addresses.size(), 1u);
  EXPECT_EQ(file.addresses[0].to_string(), "unix:/run/app.sock");
  EXPECT_EQ(file.authority, "localhost");
  EXPECT_EQ(parse_target("unix:relative.sock").addresses[0].host(), "relative.sock");
  EXPECT_EQ(parse_target("unix-abstract:app").addresses[0].to_string(), "unix-abstract:app");

  for (std::string_view bad :
       {"unix:", "unix://relative", "unix-abstract:", "dns://8.8.8.8/example.com", "ipv4:", "ipv4:1.2.3.4:0",
        "ipv4:::1", "ipv6:127.0.0.1", "example.com:99999", "", "dns:///", "ipv4:1.2.3.4:80,"}) {
    EXPECT_THROW(parse_target(bad), std::invalid_argument) << bad;
  }
  try {
    parse_target("ipv4:1.2.3.4:0");
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "gRPC target 'ipv4:1.2.3.4:0': '0' is not a port");
  }
}

TEST(GrpcChannelBlockingTest, TheBlockingTransportIsRefusedWithAClearError) {
  EventLoopGroup loops(blocking(), 1);
  try {
    (void)ClientChannel::create(loops.at(0), "ipv4:127.0.0.1:1", {});
    ADD_FAILURE() << "a channel was made on a loop of the blocking transport";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("use grpc::Client"), std::string::npos) << e.what();
  }
}

TEST_P(GrpcChannelTest, RoundRobinSpreadsCallsEvenlyOverThreeServers) {
  NamedServer a(transport(), "a"), b(transport(), "b"), c(transport(), "c");
  open("ipv4:" + a.address() + "," + b.address() + "," + c.address(), LoadBalancing::round_robin);
  wait_for_ready_connections(3);
  EXPECT_EQ(channel_->state(), ConnectivityState::ready);
  for (const std::string& answer : calls(300)) ASSERT_TRUE(answer == "a" || answer == "b" || answer == "c") << answer;
  for (const NamedServer* s : {&a, &b, &c}) {
    EXPECT_GE(s->calls(), 90u);
    EXPECT_LE(s->calls(), 110u);
  }
  EXPECT_EQ(
      run([](std::shared_ptr<ClientChannel> ch) -> Task<std::uint64_t> { co_return ch->stats().calls; }(channel_)),
      300u);
}

TEST_P(GrpcChannelTest, PickFirstSendsEveryCallToTheFirstAddressThatAnswers) {
  NamedServer dead(transport(), "dead"), first(transport(), "first"), second(transport(), "second");
  dead.kill();
  open("ipv4:" + dead.address() + "," + first.address() + "," + second.address(), LoadBalancing::pick_first);
  for (const std::string& answer : calls(20)) EXPECT_EQ(answer, "first");
  EXPECT_EQ(second.calls(), 0u);
  const ChannelStats stats =
      run([](std::shared_ptr<ClientChannel> ch) -> Task<ChannelStats> { co_return ch->stats(); }(channel_));
  EXPECT_EQ(stats.ready_connections, 1u);  // pick_first holds one connection
  EXPECT_GE(stats.connect_failures, 1u);
}

TEST_P(GrpcChannelTest, ADnsTargetIsResolvedAndItsRefusingAddressPassed) {
  // localhost resolves to ::1 (preferred) and 127.0.0.1; the server listens on 127.0.0.1 only.
  NamedServer server(transport(), "v4");
  open("dns:///localhost:" + std::to_string(server.port()), LoadBalancing::pick_first);
  for (const std::string& answer : calls(5)) EXPECT_EQ(answer, "v4");
  EXPECT_GE(run([](std::shared_ptr<ClientChannel> ch) -> Task<std::uint64_t> {
              co_return ch->stats().resolutions;
            }(channel_)),
            1u);
}

TEST_P(GrpcChannelTest, AKilledServersCallsMoveToTheOtherAndComeBackWhenItRestarts) {
  NamedServer a(transport(), "a"), b(transport(), "b");
  open("ipv4:" + a.address() + "," + b.address(), LoadBalancing::round_robin);
  wait_for_ready_connections(2);
  (void)calls(20);
  EXPECT_EQ(a.calls(), 10u);
  EXPECT_EQ(b.calls(), 10u);

  a.kill();
  wait_for_ready_connections(1);
  for (const std::string& answer : calls(20)) EXPECT_EQ(answer, "b");

  a.restart();
  wait_for_ready_connections(2);  // reconnected after its backoff
  (void)calls(20);
  EXPECT_EQ(a.calls(), 20u) << "the restarted server got no calls";
  EXPECT_EQ(b.calls(), 40u);
}

TEST_P(GrpcChannelTest, CallsWaitForAConnectionOnlyWhenAskedOnceEveryAddressHasFailed) {
  NamedServer later(transport(), "later");
  later.kill();
  open("ipv4:" + later.address(), LoadBalancing::pick_first);
  EXPECT_FALSE(channel_->ready().wait_for(0ms)) << "ready before any server listens";
  wait_until([](const ChannelStats& s) { return s.connect_failures >= 1; }, "a failed connection");
  EXPECT_EQ(channel_->state(), ConnectivityState::transient_failure);

  // Without wait_for_ready: UNAVAILABLE at once, naming the address that failed.
  const std::string failed = calls(1)[0];
  EXPECT_EQ(failed.rfind("UNAVAILABLE:connecting to " + later.address(), 0), 0u) << failed;

  // With it: the call waits, and its deadline still counts.
  CallOptions waiting;
  waiting.wait_for_ready = true;
  waiting.timeout = 20ms;
  EXPECT_EQ(calls(1, waiting)[0], "DEADLINE_EXCEEDED:Deadline Exceeded");

  waiting.timeout = 60s;
  Future<UnaryResult> answered =
      spawn(channel_->loop(), channel_->unary(std::string(kWhich), ByteBuf::copy_of("?"), waiting));
  wait_until([](const ChannelStats& s) { return s.waited == 2; }, "the call to wait");
  later.restart();
  ASSERT_TRUE(answered.wait_for(60s));
  EXPECT_TRUE(answered.get().status.ok()) << answered.get().status.message;
  EXPECT_EQ(answered.get().message.view(), "later");
  EXPECT_TRUE(channel_->ready().wait_for(0ms));
}

TEST_P(GrpcChannelTest, RefusedCallsAreSentAgainOverTheOtherConnection) {
  ScriptedPeer refuser(peer_loops_, refusing());
  NamedServer good(transport(), "good");
  open("ipv4:" + refuser.address() + "," + good.address(), LoadBalancing::round_robin);
  wait_for_ready_connections(2);
  for (const std::string& answer : calls(4)) EXPECT_EQ(answer, "good");
  const ChannelStats stats =
      run([](std::shared_ptr<ClientChannel> ch) -> Task<ChannelStats> { co_return ch->stats(); }(channel_));
  // Each call starts on the refusing peer (the retry took the other's turn): 4 retries, from a
  // budget of 10 tokens (-1 a retry, +0.1 a success: 6.4 left, above the half).
  EXPECT_EQ(stats.transparent_retries, 4u);
  EXPECT_EQ(stats.retries_throttled, 0u);
  EXPECT_EQ(good.calls(), 4u);
}

TEST_P(GrpcChannelTest, RetriesStopAtTheAttemptLimitAndTheBudget) {
  ScriptedPeer refuser(peer_loops_, refusing());
  open("ipv4:" + refuser.address(), LoadBalancing::pick_first);
  for (const std::string& answer : calls(3)) EXPECT_EQ(answer.rfind("UNAVAILABLE:", 0), 0u) << answer;
  const ChannelStats stats =
      run([](std::shared_ptr<ClientChannel> ch) -> Task<ChannelStats> { co_return ch->stats(); }(channel_));
  // 10 tokens, -1 a refused attempt: the first call's 4 retries leave 6, its 5th attempt (the last
  // allowed) 5; a retry needs more than 5, so the next calls' first refusals are throttled.
  EXPECT_EQ(stats.transparent_retries, 4u);
  EXPECT_EQ(stats.retries_throttled, 2u);

  // The ClientCall form is not sent again; refused() says it may be.
  auto streamed = [](std::shared_ptr<ClientChannel> ch) -> Task<std::string> {
    ClientCall call = ch->call(kWhich);
    co_await call.write(ByteBuf::copy_of("?"));
    co_await call.writes_done();
    Status status = co_await call.finish();
    co_return std::string(status_code_name(status.code)) + (call.refused() ? " refused" : "");
  };
  EXPECT_EQ(run(streamed(channel_)), "UNAVAILABLE refused");
}

TEST_P(GrpcChannelTest, AServerThatSendsGoawayGetsNoCalls) {
  // SETTINGS, then GOAWAY (last stream 0, NO_ERROR): it will process nothing; the calls that
  // reach it before the GOAWAY does are refused and sent again.
  test::ScriptedH2Script script = refusing();
  script.greeting =
      test::frame(NGHTTP2_SETTINGS, 0, 0, "") + test::frame(NGHTTP2_GOAWAY, 0, 0, test::u32(0) + test::u32(0));
  ScriptedPeer leaving(peer_loops_, std::move(script));
  NamedServer good(transport(), "good");
  open("ipv4:" + leaving.address() + "," + good.address(), LoadBalancing::round_robin);
  wait_until([](const ChannelStats& s) { return s.ready_connections >= 1 && s.connects >= 2; },
             "both connections tried");
  for (const std::string& answer : calls(10)) EXPECT_EQ(answer, "good");
  EXPECT_EQ(good.calls(), 10u);
}

// A peer that accepts and never sends its SETTINGS holds no address: the attempt ends at the connect
// timeout (not only its TCP connect), and pick_first goes on to the next address.
TEST_P(GrpcChannelTest, APeerThatNeverSendsItsSettingsIsPassed) {
  test::ScriptedH2Script silent = refusing();
  silent.greeting.clear();
  ScriptedPeer mute(peer_loops_, std::move(silent));
  NamedServer good(transport(), "good");
  open("ipv4:" + mute.address() + "," + good.address(), LoadBalancing::pick_first,
       [](ChannelOptions& o) { o.backoff.min_connect_timeout = 50ms; });
  CallOptions patient;
  patient.timeout = 60s;
  for (const std::string& answer : calls(3, patient)) EXPECT_EQ(answer, "good");
}

// A dns target whose connection gets GOAWAY: the pick that finds it asks for a re-resolution, which
// the hosts file answers at once; it must not replace the subchannels under the pick (it ran inside
// the pick before, and freed the vector the pick walked). The connection, lost as soon as made, is
// made again after a backoff, not in a loop.
TEST_P(GrpcChannelTest, AReResolutionThatAnswersAtOnceDoesNotRunInsideAPick) {
  test::ScriptedH2Script script = refusing();
  script.greeting =
      test::frame(NGHTTP2_SETTINGS, 0, 0, "") + test::frame(NGHTTP2_GOAWAY, 0, 0, test::u32(0) + test::u32(0));
  ScriptedPeer leaving(peer_loops_, std::move(script));
  open("dns:///localhost:" + std::to_string(leaving.server->local_address().port()), LoadBalancing::round_robin,
       [](ChannelOptions& o) { o.min_re_resolution_interval = 0ms; });
  CallOptions brief;
  brief.timeout = 100ms;
  for (const std::string& answer : calls(3, brief)) {
    EXPECT_TRUE(answer.starts_with("DEADLINE_EXCEEDED") || answer.starts_with("UNAVAILABLE")) << answer;
  }
  // The GOAWAYs (and the refused ::1) asked for re-resolutions, which run from a timer.
  wait_until([](const ChannelStats& st) { return st.resolutions >= 2; }, "a re-resolution");
}

// writes_done() from one coroutine while another's write() waits for a connection: the message goes,
// then the half-close (as on a call that had its stream).
TEST_P(GrpcChannelTest, AHalfCloseWhileAWriteWaitsForTheConnectionFollowsTheMessage) {
  NamedServer later(transport(), "later");
  later.kill();
  open("ipv4:" + later.address(), LoadBalancing::pick_first);
  auto write_one = [](ClientCall& call) -> Task<bool> { co_return co_await call.write(ByteBuf::copy_of("?")); };
  auto scenario = [write_one](std::shared_ptr<ClientChannel> ch) -> Task<std::string> {
    CallOptions options;
    options.wait_for_ready = true;
    options.timeout = 60s;
    ClientCall call = ch->call(kWhich, options);
    Future<bool> wrote = spawn(ch->loop(), write_one(call));
    auto turn = weft::next_turn(ch->loop());  // the writer runs first, and waits for the stream
    co_await turn;
    co_await call.writes_done();
    std::optional<ByteBuf> answer = co_await call.read();
    Status status = co_await call.finish();
    co_return std::string(status_code_name(status.code)) + ":" + (answer ? std::string(answer->view()) : "none") + ":" +
        (wrote.get() ? "written" : "not written");
  };
  Future<std::string> done = spawn(channel_->loop(), scenario(channel_));
  wait_until([](const ChannelStats& s) { return s.waited == 1; }, "the call to wait");
  later.restart();
  ASSERT_TRUE(done.wait_for(60s));
  EXPECT_EQ(done.get(), "OK:later:written");
}

// The callback form over a channel whose calls wait for a connection: one is answered once the server
// starts; another, idle (it neither reads nor writes), ends UNAVAILABLE when the connection it got
// closes (its close watch was set when its stream opened).
TEST_P(GrpcChannelTest, ReactorCallsWaitForAConnectionAndWatchTheOneTheyGet) {
  NamedServer later(transport(), "later");
  later.kill();
  open("ipv4:" + later.address(), LoadBalancing::pick_first);
  CallOptions waiting;
  waiting.wait_for_ready = true;
  auto answered = std::make_shared<OneMessage>(true);
  auto idle = std::make_shared<OneMessage>(false);
  Future<std::string> answer = answered->done.future();
  Future<std::string> idle_end = idle->done.future();
  channel_->start(std::string(kWhich), waiting, answered);
  answered->start();
  channel_->start(std::string(kHang), waiting, idle);
  idle->start();
  wait_until([](const ChannelStats& s) { return s.waited == 2; }, "the calls to wait");
  later.restart();
  ASSERT_TRUE(answer.wait_for(60s));
  EXPECT_EQ(answer.get(), "OK:later");
  ASSERT_TRUE(later.hung().wait_for(60s));
  EXPECT_FALSE(idle_end.wait_for(0ms));
  later.kill();
  ASSERT_TRUE(idle_end.wait_for(60s)) << "the idle call did not hear its connection close";
  // The server's shutdown may end the call first (OK trailers) or not (UNAVAILABLE): either way the
  // idle reactor hears it.
  EXPECT_TRUE(idle_end.get() == "OK:" || idle_end.get().starts_with("UNAVAILABLE:")) << idle_end.get();
}

TEST_P(GrpcChannelTest, CloseEndsTheWaitingCallsAndRefusesNewOnes) {
  NamedServer nobody(transport(), "nobody");
  nobody.kill();
  open("ipv4:" + nobody.address(), LoadBalancing::round_robin);
  CallOptions waiting;
  waiting.wait_for_ready = true;
  Future<UnaryResult> waited =
      spawn(channel_->loop(), channel_->unary(std::string(kWhich), ByteBuf::copy_of("?"), waiting));
  wait_until([](const ChannelStats& s) { return s.waited == 1; }, "the call to wait");
  channel_->close().wait();
  ASSERT_TRUE(waited.wait_for(60s));
  EXPECT_EQ(waited.get().status.code, StatusCode::unavailable);
  EXPECT_EQ(waited.get().status.message, "the channel is closed");
  EXPECT_EQ(channel_->state(), ConnectivityState::shutdown);
  EXPECT_EQ(calls(1)[0], "UNAVAILABLE:the channel is closed");
  EXPECT_THROW(channel_->ready().get(), Error);
}

// The name of the server a unary call through `caller` (a Client or a ClientChannel) reached, or the
// call's status message.
template <class Caller>
std::string ask_which(const std::shared_ptr<Caller>& caller) {
  auto ask = [](std::shared_ptr<Caller> c) -> Task<std::string> {
    UnaryResult r = co_await c->unary(std::string(kWhich), ByteBuf::copy_of("?"));
    co_return r.status.ok() ? std::string(r.message.view()) : r.status.message;
  };
  Future<std::string> answered = spawn(caller->loop(), ask(caller));
  if (!answered.wait_for(60s)) return "the call did not end";
  return answered.get();
}

// A grpc::Client on every transport, and a channel where it may run, to a server on a Unix socket.
class GrpcUnixSocketTest : public test::TransportTest {};

TEST_P(GrpcUnixSocketTest, CallsReachAServerOnAUnixSocket) {
  const SocketAddress address = SocketAddress::unix_abstract("weft-grpc-" + std::to_string(std::random_device{}()));
  NamedServer server(transport(), "unix", address);
  EventLoopGroup client_loops(transport(), loops(1, 2));
  std::shared_ptr<Client> client = Client::connect(client_loops, address).get();
  EXPECT_EQ(ask_which(client), "unix");
  client->close().wait();
  if (is_blocking()) return;  // a channel is refused there (GrpcChannelBlockingTest)

  auto channel = ClientChannel::create(client_loops.at(0), address.to_string(), {});
  EXPECT_EQ(ask_which(channel), "unix");
  channel->close().wait();
  EXPECT_EQ(server.calls(), 2u);
}

}  // namespace

WEFT_ON_EVERY_TRANSPORT(GrpcUnixSocketTest);

// A channel keeps its connections on one loop: the blocking transport is refused (above).
INSTANTIATE_TEST_SUITE_P(On, GrpcChannelTest, ::testing::Values(&::weft::epoll(), &::weft::io_uring()),
                         ::weft::test::transport_name);

}  // namespace weft::grpc
