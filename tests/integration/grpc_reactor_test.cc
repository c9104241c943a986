// The callback form of gRPC calls of every shape (server_reactor.h, client_reactor.h), over
// sockets on every transport: weft's reactor server against weft's coroutine client and reactor
// client, and the reactor client against coroutine methods. Bidi, server and client streaming,
// unary answered from an executor thread; backpressure both ways (a server stream to a client that
// does not read stops at the window; a client stream waits for a slow server); a deadline, a
// cancel and a closed connection reaching on_cancel / on_done; a reactor that throws; misuse
// refused with std::logic_error; every reactor method on the call's loop.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cctype>
#include <cstdio>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "support/h2c_server.h"
#include "support/transports.h"
#include "weft/grpc/client.h"
#include "weft/grpc/client_reactor.h"
#include "weft/grpc/server_reactor.h"
#include "weft/grpc/service_registry.h"
#include "weft/codec/http2/server_codec.h"
#include "weft/weft.h"

using namespace std::chrono_literals;
using ::testing::HasSubstr;

namespace weft::grpc {
namespace {

ByteBuf bytes(std::string_view text) { return ByteBuf::copy_of(text); }
std::string text(const ByteBuf& b) { return std::string(b.view()); }

constexpr std::size_t kFloodMessageBytes = 1024;

// What the server's reactors saw, for the tests to check.
struct Seen {
  Promise<std::string> ended;            // "cancel+done" or "done" (the order the reactor saw), of the call ended by the client
  Promise<void> idle_started;             // the Idle reactor exists
  std::atomic<std::size_t> flood_bytes{0};  // what the endless Count's completed writes carried
  Promise<std::size_t> flood_stalled;       // its flood_bytes when its call first stopped being ready
  bool stalled = false;                     // (loop of the call)
  std::atomic<bool> off_loop{false};        // a reactor method ran off its call's loop
};

// Records a reactor's end: on_cancel then on_done, into seen->ended.
class RecordsEnd : public ServerReactor {
 public:
  RecordsEnd(ServerStream stream, std::shared_ptr<Seen> seen) : stream_(std::move(stream)), seen_(std::move(seen)) {}
  void on_cancel() override {
    check_loop();
    cancelled_ = true;
  }
  void on_done() override {
    check_loop();
    seen_->ended.set_value(cancelled_ ? "cancel+done" : "done");
  }

 protected:
  void check_loop() {
    if (!stream_.loop().in_loop()) seen_->off_loop = true;
  }
  ServerStream stream_;
  std::shared_ptr<Seen> seen_;
  bool cancelled_ = false;
};

// Bidi: every message back, one at a time; OK once the client is done.
class Echo final : public RecordsEnd {
 public:
  Echo(ServerStream stream, std::shared_ptr<Seen> seen) : RecordsEnd(std::move(stream), std::move(seen)) {
    stream_.start_read();
  }
  void on_read_done(std::optional<ByteBuf> message) override {
    check_loop();
    if (message) {
      stream_.start_write(std::move(*message));
    } else {
      stream_.finish({});
    }
  }
  void on_write_done(bool ok) override {
    check_loop();
    if (ok) stream_.start_read();
  }
};

// Server streaming: the request is a count N; answers "0" .. "N-1" (N = -1: 1 KiB messages without end).
class Count final : public RecordsEnd {
 public:
  Count(ServerStream stream, std::shared_ptr<Seen> seen) : RecordsEnd(std::move(stream), std::move(seen)) {
    stream_.start_read();
  }
  void on_read_done(std::optional<ByteBuf> message) override {
    if (!message) return;  // the request, or nothing (the call ended)
    n_ = std::stol(text(*message));
    next();
  }
  void on_write_done(bool ok) override {
    if (!ok) return;
    if (n_ < 0) seen_->flood_bytes.fetch_add(kFloodMessageBytes);
    next();
  }

 private:
  void next() {
    if (n_ < 0 && !stream_.call().is_ready() && !seen_->stalled) {
      seen_->stalled = true;
      seen_->flood_stalled.set_value(seen_->flood_bytes.load());
    }
    if (n_ < 0) {
      stream_.start_write(ByteBuf::copy_of(std::string(kFloodMessageBytes, 'f')));
    } else if (i_ < n_) {
      stream_.start_write(bytes(std::to_string(i_++)));
    } else {
      stream_.finish({});
    }
  }
  long n_ = 0;
  long i_ = 0;
};

// Writes 1 KiB messages without end once the first request came, with a read kept outstanding.
class FloodAndRead final : public RecordsEnd {
 public:
  FloodAndRead(ServerStream stream, std::shared_ptr<Seen> seen) : RecordsEnd(std::move(stream), std::move(seen)) {
    stream_.start_read();
  }
  void on_read_done(std::optional<ByteBuf> message) override {
    if (!message) return;
    if (!flooding_) {
      flooding_ = true;
      write();
    }
    stream_.start_read();
  }
  void on_write_done(bool ok) override {
    if (ok) write();
  }

 private:
  void write() {
    if (!stream_.call().is_ready() && !seen_->stalled) {
      seen_->stalled = true;
      seen_->flood_stalled.set_value(0);
    }
    stream_.start_write(ByteBuf::copy_of(std::string(kFloodMessageBytes, 'f')));
  }
  bool flooding_ = false;
};

// Client streaming: the count of the requests and their total bytes, as one response.
class Sum final : public RecordsEnd {
 public:
  Sum(ServerStream stream, std::shared_ptr<Seen> seen) : RecordsEnd(std::move(stream), std::move(seen)) {
    stream_.start_read();
  }
  void on_read_done(std::optional<ByteBuf> message) override {
    if (message) {
      total_ += message->readable_bytes();
      ++count_;
      stream_.start_read();
      return;
    }
    if (stream_.call().cancelled()) return;
    stream_.start_write(bytes(std::to_string(count_) + " " + std::to_string(total_)));
    stream_.finish({});  // after the write
  }

 private:
  std::size_t count_ = 0, total_ = 0;
};

// Unary, answered from an executor thread: the request upper-cased, with response metadata.
class Offload final : public ServerReactor {
 public:
  Offload(ServerStream stream, ExecutorGroup& executors, std::shared_ptr<Seen> seen)
      : stream_(std::move(stream)), executors_(executors), seen_(std::move(seen)) {
    stream_.call().add_response_header("x-reactor", "offload");
    stream_.start_read();
  }
  void on_read_done(std::optional<ByteBuf> message) override {
    if (!stream_.loop().in_loop()) seen_->off_loop = true;
    if (!message) return;
    executors_.next().execute([stream = stream_, request = text(*message)]() mutable {
      std::string answer = request;
      for (char& c : answer) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      if (request == "fail") {
        stream.finish(Status(StatusCode::failed_precondition, "refused on the executor"));
        return;
      }
      stream.start_write(bytes(answer));
      stream.finish({});
    });
  }

 private:
  ServerStream stream_;
  ExecutorGroup& executors_;
  std::shared_ptr<Seen> seen_;
};

// Does nothing until the call ends without it (the deadline, a reset, the connection gone).
class Idle final : public RecordsEnd {
 public:
  Idle(ServerStream stream, std::shared_ptr<Seen> seen) : RecordsEnd(std::move(stream), std::move(seen)) {
    seen_->idle_started.set_value();
  }
};

// Throws from on_read_done: StatusError with "status", anything else otherwise.
class Throws final : public ServerReactor {
 public:
  explicit Throws(ServerStream stream) : stream_(std::move(stream)) { stream_.start_read(); }
  void on_read_done(std::optional<ByteBuf> message) override {
    if (message && text(*message) == "status") throw StatusError(Status(StatusCode::invalid_argument, "bad request"));
    throw std::runtime_error("the reactor broke");
  }

 private:
  ServerStream stream_;
};

// A careless reactor that asks for another read whatever it got: the read after nullopt is refused
// (std::logic_error, out of on_read_done: the call ends UNKNOWN) instead of failing again forever.
class ReadsForever final : public ServerReactor {
 public:
  explicit ReadsForever(ServerStream stream) : stream_(std::move(stream)) { stream_.start_read(); }
  void on_read_done(std::optional<ByteBuf>) override { stream_.start_read(); }

 private:
  ServerStream stream_;
};

// Misuse: bytes that are not one framed message, a second read while one is outstanding, and a
// write after finish, are refused.
class Misuse final : public ServerReactor {
 public:
  explicit Misuse(ServerStream stream) : stream_(std::move(stream)) {
    std::string refused;
    try {
      stream_.start_write_framed(bytes("not framed"));
    } catch (const std::invalid_argument&) {
      refused += "framed ";
    }
    stream_.start_read();
    try {
      stream_.start_read();
    } catch (const std::logic_error&) {
      refused += "read ";
    }
    stream_.finish(Status(StatusCode::aborted, "misuse"));
    try {
      stream_.start_write(bytes("late"));
    } catch (const std::logic_error&) {
      refused += "write";
    }
    stream_.call().add_trailing_metadata("x-refused", refused);
  }

 private:
  ServerStream stream_;
};

// One 2 MiB message (past the client's 1 MiB window) and finish() at once: the status after it.
class BigThenFinish final : public ServerReactor {
 public:
  explicit BigThenFinish(ServerStream stream) : stream_(std::move(stream)) {
    stream_.start_write(ByteBuf::copy_of(std::string(2 * 1024 * 1024, 'b')));
    stream_.finish(Status(StatusCode::ok, ""));
  }

 private:
  ServerStream stream_;
};

class GrpcReactorTest : public test::TransportTest {
 protected:
  void SetUp() override {
    ServiceRegistry services;
    auto seen = seen_;
    services.add_reactor("/test.R/Echo", [seen](ServerStream s) { return std::make_shared<Echo>(std::move(s), seen); });
    services.add_reactor("/test.R/Count", [seen](ServerStream s) { return std::make_shared<Count>(std::move(s), seen); });
    services.add_reactor("/test.R/FloodAndRead",
                         [seen](ServerStream s) { return std::make_shared<FloodAndRead>(std::move(s), seen); });
    services.add_reactor("/test.R/Sum", [seen](ServerStream s) { return std::make_shared<Sum>(std::move(s), seen); });
    services.add_reactor("/test.R/Offload", [seen, this](ServerStream s) {
      return std::make_shared<Offload>(std::move(s), executors_, seen);
    });
    services.add_reactor("/test.R/Idle", [seen](ServerStream s) { return std::make_shared<Idle>(std::move(s), seen); });
    services.add_reactor("/test.R/Throws", [](ServerStream s) { return std::make_shared<Throws>(std::move(s)); });
    services.add_reactor("/test.R/ReadsForever", [](ServerStream s) { return std::make_shared<ReadsForever>(std::move(s)); });
    services.add_reactor("/test.R/Misuse", [](ServerStream s) { return std::make_shared<Misuse>(std::move(s)); });
    services.add_reactor("/test.R/Big", [](ServerStream s) { return std::make_shared<BigThenFinish>(std::move(s)); });
    // Coroutine methods, for the reactor client.
    services.add("/test.C/Count", [](ServerCall& call) -> Task<> {
      std::optional<ByteBuf> request = co_await call.read();
      const long n = request ? std::stol(text(*request)) : 0;
      for (long i = 0; n < 0 || i < n; ++i) co_await call.write(bytes(std::to_string(i)));
    });
    services.add("/test.C/Sum", [](ServerCall& call) -> Task<> {
      std::size_t total = 0, count = 0;
      while (std::optional<ByteBuf> request = co_await call.read()) {
        total += request->readable_bytes();
        if (++count % 64 == 0) co_await weft::sleep(1ms);  // a slow reader: the client's writes must wait
      }
      co_await call.write(bytes(std::to_string(count) + " " + std::to_string(total)));
    });
    http2::Settings settings;
    settings.stream_initializer = services.stream_chooser();
    server_ = test::serve_h2c(loops_, settings);
    client_ = Client::connect(loops_, server_->local_address()).get();
  }
  void TearDown() override {
    if (client_) client_->close().wait();
    if (server_) server_->close().wait();
    EXPECT_FALSE(seen_->off_loop) << "a server reactor method ran off its call's loop";
  }

  template <class T>
  T run(Task<T> task) {
    Future<T> done = spawn(client_->loop(), std::move(task));
    EXPECT_TRUE(done.wait_for(60s)) << "the call did not end";
    return done.get();
  }

  std::string server_end() {
    Future<std::string> ended = seen_->ended.future();
    EXPECT_TRUE(ended.wait_for(60s)) << "the server's reactor did not see the call's end";
    return ended.is_done() ? ended.get() : "";
  }

  ExecutorGroup executors_{ExecutorGroup::Options{.threads = 1}};
  EventLoopGroup loops_{transport(), loops(2, 7)};  // blocking: two servers with a client each
  std::shared_ptr<Seen> seen_ = std::make_shared<Seen>();
  ChannelPtr server_;
  std::shared_ptr<Client> client_;
};

std::string describe(const Status& status) {
  return std::string(status_code_name(status.code)) + (status.message.empty() ? "" : ":" + status.message);
}

// ---- the reactor server, from the coroutine client

Task<std::string> bidi_echo(Client& client) {
  ClientCall call = client.call("/test.R/Echo");
  std::string failures;
  for (std::size_t size : {0u, 1u, 100u, 20000u, 300000u, 5u}) {
    const std::string message(size, static_cast<char>('a' + size % 26));
    if (!co_await call.write(bytes(message))) failures += "write ";
    std::optional<ByteBuf> back = co_await call.read();
    if (!back || text(*back) != message) failures += "echo of " + std::to_string(size) + " ";
  }
  co_await call.writes_done();
  if (co_await call.read()) failures += "an extra message ";
  Status status = co_await call.finish();
  co_return failures + describe(status);
}

TEST_P(GrpcReactorTest, ABidiReactorEchoesMessagesOfEverySizeThenOk) {
  EXPECT_EQ(run(bidi_echo(*client_)), "OK");
  EXPECT_EQ(server_end(), "done");
}

Task<std::string> count(Client& client, std::string method, int n) {
  ClientCall call = client.call(method);
  co_await call.write(bytes(std::to_string(n)));
  co_await call.writes_done();
  int expected = 0;
  while (std::optional<ByteBuf> m = co_await call.read()) {
    if (text(*m) != std::to_string(expected)) co_return "message " + std::to_string(expected) + " was " + text(*m);
    ++expected;
  }
  Status status = co_await call.finish();
  co_return std::to_string(expected) + " " + describe(status);
}

TEST_P(GrpcReactorTest, AServerStreamingReactorWritesEveryMessageInOrder) {
  EXPECT_EQ(run(count(*client_, "/test.R/Count", 3000)), "3000 OK");
  EXPECT_EQ(server_end(), "done");
}

Task<std::string> sum(Client& client, std::string method, std::size_t messages) {
  ClientCall call = client.call(method);
  std::size_t total = 0;
  for (std::size_t i = 0; i < messages; ++i) {
    const std::string message(i % 1000, 's');
    total += message.size();
    if (!co_await call.write(bytes(message))) co_return "write " + std::to_string(i) + " failed";
  }
  co_await call.writes_done();
  std::optional<ByteBuf> answer = co_await call.read();
  Status status = co_await call.finish();
  const std::string expected = std::to_string(messages) + " " + std::to_string(total);
  co_return (answer && text(*answer) == expected ? "" : "answer " + (answer ? text(*answer) : "none") + " ") +
      describe(status);
}

TEST_P(GrpcReactorTest, AClientStreamingReactorReadsEveryRequestThenAnswers) {
  EXPECT_EQ(run(sum(*client_, "/test.R/Sum", 4000)), "OK");
  EXPECT_EQ(server_end(), "done");
}

Task<std::string> unary_text(Client& client, std::string method, std::string request) {
  ClientCall call = client.call(method);
  co_await call.write(bytes(request));
  co_await call.writes_done();
  std::optional<ByteBuf> answer = co_await call.read();
  Status status = co_await call.finish();
  co_return (answer ? text(*answer) + " " : "") + call.initial_metadata_value("x-reactor").value_or("-") + " " +
      describe(status);
}

TEST_P(GrpcReactorTest, AUnaryReactorAnswersFromAnExecutorThread) {
  EXPECT_EQ(run(unary_text(*client_, "/test.R/Offload", "shout")), "SHOUT offload OK");
  EXPECT_EQ(run(unary_text(*client_, "/test.R/Offload", "fail")), "offload FAILED_PRECONDITION:refused on the executor");
}

Task<std::string> never_read_then_cancel(Client& client, Seen& seen) {
  ClientCall call = client.call("/test.R/Count");
  co_await call.write(bytes("-1"));
  co_await call.writes_done();
  const std::size_t at_stall = co_await seen.flood_stalled.future();  // nothing read
  // The connection goes on meanwhile: only the flooded stream's window is held.
  for (int i = 0; i < 20; ++i) {
    const std::string answer = co_await unary_text(client, "/test.R/Offload", "beside");
    if (answer != "BESIDE offload OK") co_return "a call beside the flood: " + answer;
  }
  const std::size_t after = seen.flood_bytes.load();
  call.cancel();
  co_return std::to_string(at_stall) + " " + std::to_string(after);
}

TEST_P(GrpcReactorTest, AServerStreamToAClientThatDoesNotReadStopsAtTheWindowAndTheCancelReachesTheReactor) {
  const std::string answer = run(never_read_then_cancel(*client_, *seen_));
  std::size_t at_stall = 0, after = 0;
  ASSERT_EQ(std::sscanf(answer.c_str(), "%zu %zu", &at_stall, &after), 2) << answer;
  // The client's 1 MiB window, the stream's and connection's write buffers, a message over them.
  const std::size_t bound = http2::ClientSettings{}.initial_window_size + 512 * 1024;
  EXPECT_LE(at_stall, bound);
  EXPECT_LE(after, bound) << "the reactor's writes went on completing to a client that does not read";
  EXPECT_EQ(server_end(), "cancel+done");
}

// The server's write waits for the client's window while its read meets a message past the 4 MiB
// bound: the status goes out past the waiting write (one coroutine cannot wait for the other's
// place to write), the call ends RESOURCE_EXHAUSTED, and the reactor hears of it.
Task<std::string> oversized_while_the_write_waits(Client& client, Seen& seen) {
  ClientCall call = client.call("/test.R/FloodAndRead");
  co_await call.write(bytes("go"));
  co_await seen.flood_stalled.future();  // nothing read: the server's write now waits
  co_await call.write(ByteBuf::copy_of(std::string(kDefaultMaxMessageBytes + 1, 'x')));  // false once reset
  Status status = co_await call.finish();
  co_return std::string(status_code_name(status.code));
}

TEST_P(GrpcReactorTest, AMessagePastTheBoundWhileAWriteWaitsEndsTheCallResourceExhausted) {
  EXPECT_EQ(run(oversized_while_the_write_waits(*client_, *seen_)), "RESOURCE_EXHAUSTED");
  EXPECT_EQ(server_end(), "cancel+done");
}

Task<std::string> deadline(Client& client) {
  CallOptions options;
  options.timeout = 50ms;
  ClientCall call = client.call("/test.R/Idle", options);
  co_await call.write(bytes("x"));
  Status status = co_await call.finish();
  co_return describe(status);
}

TEST_P(GrpcReactorTest, ADeadlineReachesAnIdleReactorAsCancelThenDone) {
  EXPECT_EQ(run(deadline(*client_)), "DEADLINE_EXCEEDED:Deadline Exceeded");
  EXPECT_EQ(server_end(), "cancel+done");
}

Task<> open_idle(Client& client, std::shared_ptr<ClientCall> call) {
  *call = client.call("/test.R/Idle");
  co_await call->write(bytes("x"));
}

TEST_P(GrpcReactorTest, TheConnectionClosingReachesAnIdleReactorAsCancelThenDone) {
  auto call = std::make_shared<ClientCall>();
  run(open_idle(*client_, call));
  ASSERT_TRUE(seen_->idle_started.future().wait_for(60s));
  client_->close().wait();
  EXPECT_EQ(server_end(), "cancel+done");
  client_->loop().execute([call] { *call = ClientCall(); });
  client_.reset();
}

TEST_P(GrpcReactorTest, AReactorThatThrowsEndsTheCallWithItsStatusOrUnknown) {
  EXPECT_EQ(run(unary_text(*client_, "/test.R/Throws", "status")), "- INVALID_ARGUMENT:bad request");
  EXPECT_EQ(run(unary_text(*client_, "/test.R/Throws", "other")), "- UNKNOWN:the reactor broke");
}

Task<std::string> misuse(Client& client) {
  ClientCall call = client.call("/test.R/Misuse");
  co_await call.writes_done();
  Status status = co_await call.finish();
  co_return describe(status) + " " + call.trailing_metadata_value("x-refused").value_or("-");
}

TEST_P(GrpcReactorTest, ASecondOutstandingReadAndAWriteAfterFinishAreRefused) {
  EXPECT_EQ(run(misuse(*client_)), "ABORTED:misuse framed read write");
}

Task<std::string> big(Client& client) {
  ClientCall call = client.call("/test.R/Big");
  co_await call.writes_done();
  std::optional<ByteBuf> message = co_await call.read();
  Status status = co_await call.finish();
  co_return std::to_string(message ? message->readable_bytes() : 0) + " " + describe(status);
}

TEST_P(GrpcReactorTest, AReadAfterTheEndOfTheRequestsIsRefusedNotRepeatedForever) {
  EXPECT_EQ(run(unary_text(*client_, "/test.R/ReadsForever", "one")),
            "- UNKNOWN:grpc::ServerStream::start_read after a read gave nullopt");
}

TEST_P(GrpcReactorTest, FinishWaitsForTheOutstandingWriteEvenPastTheWindow) {
  EXPECT_EQ(run(big(*client_)), std::to_string(2 * 1024 * 1024) + " OK");
}

// ---- the reactor client

// A client reactor that records what it saw; `script` decides what it asks next.
class Recorder : public ClientReactor {
 public:
  void on_read_done(std::optional<ByteBuf> message) override {
    check_loop();
    if (message) {
      if (messages.empty()) first_message.set_value();
      messages.push_back(text(*message));
      if (cancel_at == messages.size()) {
        stream().start_read();  // the last read
        stream().cancel();
        read_more = false;
        return;
      }
      if (read_more) stream().start_read();
    } else {
      saw_end = true;
    }
  }
  void on_write_done(bool ok) override {
    check_loop();
    if (!ok) ++failed_writes;
    if (ok && writes_left > 0) {
      --writes_left;
      written += write_size;
      stream().start_write(ByteBuf::copy_of(std::string(write_size, 'w')));
    } else if (ok && close_after_writes) {
      stream().writes_done();
    }
  }
  void on_done(const Status& status) override {
    check_loop();
    // The call's metadata is there until on_done returns (none for a refused call: its handle is empty).
    const std::string trailer = stream().call().trailing_metadata_value("x-none").value_or("");
    done.set_value(describe(status) + trailer + (saw_end ? "" : " (no end read)"));
  }
  void check_loop() {
    if (!stream().loop().in_loop()) off_loop = true;
  }
  std::string wait() {
    Future<std::string> f = done.future();
    EXPECT_TRUE(f.wait_for(60s)) << "on_done did not come";
    return f.is_done() ? f.get() : "";
  }

  std::optional<ClientStream> handle;  // the test thread's
  std::vector<std::string> messages;
  bool read_more = true;
  std::size_t cancel_at = 0;  // after this many messages: one more read, cancel(), no more reads
  std::size_t writes_left = 0;
  std::size_t write_size = 0;
  std::size_t written = 0;
  bool close_after_writes = false;
  int failed_writes = 0;
  bool saw_end = false;
  std::atomic<bool> off_loop{false};
  Promise<std::string> done;
  Promise<void> first_message;
};

TEST_P(GrpcReactorTest, AReactorClientReadsAServerStreamToItsEnd) {
  auto r = std::make_shared<Recorder>();
  r->handle = client_->start("/test.C/Count", {}, r);
  r->handle->start_write(bytes("500"));
  r->handle->writes_done();
  r->handle->start_read();
  EXPECT_EQ(r->wait(), "OK");
  ASSERT_EQ(r->messages.size(), 500u);
  for (std::size_t i = 0; i < r->messages.size(); ++i) ASSERT_EQ(r->messages[i], std::to_string(i));
  EXPECT_FALSE(r->off_loop);
}

TEST_P(GrpcReactorTest, AReactorClientStreamOutrunsASlowServerWithoutLosingAMessage) {
  auto r = std::make_shared<Recorder>();
  r->handle = client_->start("/test.C/Sum", {}, r);
  r->writes_left = 3000;  // after the first: 3001 messages of 700 bytes, about 2 MiB past the windows
  r->write_size = 700;
  r->close_after_writes = true;
  r->written = 700;
  r->handle->start_write(ByteBuf::copy_of(std::string(700, 'w')));
  r->handle->start_read();
  EXPECT_EQ(r->wait(), "OK");
  ASSERT_EQ(r->messages.size(), 1u);
  EXPECT_EQ(r->messages[0], "3001 " + std::to_string(r->written));
  EXPECT_FALSE(r->off_loop);
}

// Bidi between the two reactors, every request from this (non-loop) thread once the last was echoed.
TEST_P(GrpcReactorTest, AReactorClientAndAReactorServerTalkBidiFromAnotherThread) {
  class PingPong final : public ClientReactor {
   public:
    void on_read_done(std::optional<ByteBuf> message) override { got.set_value(message ? text(*message) : "<end>"); }
    void on_write_done(bool ok) override { wrote.set_value(ok); }
    void on_done(const Status& status) override { done.set_value(describe(status)); }
    Promise<std::string> got;
    Promise<bool> wrote;
    Promise<std::string> done;
  };
  auto r = std::make_shared<PingPong>();
  ClientStream stream = client_->start("/test.R/Echo", {}, r);
  for (int i = 0; i < 50; ++i) {
    r->got = Promise<std::string>();
    r->wrote = Promise<bool>();
    Future<std::string> got = r->got.future();
    Future<bool> wrote = r->wrote.future();
    stream.start_write(bytes("ping " + std::to_string(i)));
    stream.start_read();
    ASSERT_TRUE(wrote.wait_for(60s));
    ASSERT_TRUE(wrote.get());
    ASSERT_TRUE(got.wait_for(60s));
    ASSERT_EQ(got.get(), "ping " + std::to_string(i));
  }
  r->got = Promise<std::string>();
  Future<std::string> end = r->got.future();
  stream.writes_done();
  EXPECT_THROW(stream.start_write(bytes("late")), std::logic_error);  // after writes_done
  stream.start_read();
  ASSERT_TRUE(end.wait_for(60s));
  EXPECT_EQ(end.get(), "<end>");
  Future<std::string> done = r->done.future();
  ASSERT_TRUE(done.wait_for(60s));
  EXPECT_EQ(done.get(), "OK");
  EXPECT_EQ(server_end(), "done");
}

TEST_P(GrpcReactorTest, AReactorClientCancelsAServerStreamAndBothSidesSeeIt) {
  auto r = std::make_shared<Recorder>();
  Future<void> first = r->first_message.future();
  r->handle = client_->start("/test.R/Count", {}, r);
  r->handle->start_write(bytes("-1"));
  r->handle->writes_done();
  r->handle->start_read();
  ASSERT_TRUE(first.wait_for(60s));  // the stream flows (the reactor reads on): now cancel it
  r->handle->cancel();
  EXPECT_EQ(r->wait(), "CANCELLED:Cancelled");
  EXPECT_EQ(server_end(), "cancel+done");
}

TEST_P(GrpcReactorTest, AReactorClientDeadlineEndsTheCallWithoutAnyRead) {
  auto r = std::make_shared<Recorder>();
  CallOptions options;
  options.timeout = 50ms;
  r->handle = client_->start("/test.R/Idle", options, r);
  r->handle->start_write(bytes("x"));
  EXPECT_EQ(r->wait(), "DEADLINE_EXCEEDED:Deadline Exceeded (no end read)");
  EXPECT_EQ(server_end(), "cancel+done");
}

TEST_P(GrpcReactorTest, AReactorClientGetsRefusedMetadataUnknownMethodsAndAClosedConnectionAsStatuses) {
  auto bad = std::make_shared<Recorder>();
  CallOptions options;
  options.metadata = {{"Upper", "v"}};
  bad->handle = client_->start("/test.R/Echo", options, bad);
  bad->handle->start_read();
  EXPECT_THAT(bad->wait(), HasSubstr("INVALID_ARGUMENT:"));

  auto unknown = std::make_shared<Recorder>();
  unknown->handle = client_->start("/test.R/Nope", {}, unknown);
  unknown->handle->writes_done();
  unknown->handle->start_read();
  EXPECT_EQ(unknown->wait(), "UNIMPLEMENTED:Method not found: /test.R/Nope");

  auto idle = std::make_shared<Recorder>();
  idle->handle = client_->start("/test.R/Idle", {}, idle);
  idle->handle->start_read();
  ASSERT_TRUE(seen_->idle_started.future().wait_for(60s));
  client_->close().wait();
  EXPECT_THAT(idle->wait(), HasSubstr("UNAVAILABLE"));
}

// The read after the 63rd message is the 64th in a row, where the client's read lets the loop take a
// turn: the cancel lands in it, the read still gives its message, and the reactor reads no more.
TEST_P(GrpcReactorTest, AReactorClientCancelInTheReadsTurnStillReachesOnDone) {
  auto r = std::make_shared<Recorder>();
  r->cancel_at = 63;
  r->handle = client_->start("/test.C/Count", {}, r);
  r->handle->start_write(bytes("-1"));
  r->handle->writes_done();
  r->handle->start_read();
  EXPECT_THAT(r->wait(), HasSubstr("CANCELLED:Cancelled"));
}

// Runs two rounds of the loop's task queue: what was posted before, and what that posted.
void drain_twice(EventLoop& loop) {
  Promise<void> drained;
  loop.execute([&loop, drained]() mutable { loop.execute([drained]() mutable { drained.set_value(); }); });
  ASSERT_TRUE(drained.future().wait_for(60s));
}

// A write past the window of a server that never reads waits for good: cancel() must reach it.
TEST_P(GrpcReactorTest, AReactorClientCancelReachesAWriteThatWaitsForTheWindow) {
  auto r = std::make_shared<Recorder>();
  r->handle = client_->start("/test.R/Idle", {}, r);
  ASSERT_TRUE(seen_->idle_started.future().wait_for(60s));
  r->handle->start_write(ByteBuf::copy_of(std::string(8 * 1024 * 1024, 'w')));
  drain_twice(client_->loop());  // the call's coroutine has taken the write: it waits in it now
  r->handle->cancel();
  EXPECT_EQ(r->wait(), "CANCELLED:Cancelled (no end read)");
  EXPECT_EQ(r->failed_writes, 1);
  EXPECT_EQ(server_end(), "cancel+done");
}

// A write that fails otherwise than by the call's end (here the response's compression level, which
// zlib refuses) ends the call UNKNOWN with it; the reactor hears of the write and is done.
TEST_P(GrpcReactorTest, AWriteThatFailsOtherwiseEndsTheCallWithItsErrorAndTheReactorIsDone) {
  ServerOptions options;
  options.response_compression = CompressionOptions(Compression::gzip, 42, 0);
  ServiceRegistry services(options);
  auto seen = seen_;
  services.add_reactor("/test.R/Echo", [seen](ServerStream s) { return std::make_shared<Echo>(std::move(s), seen); });
  http2::Settings settings;
  settings.stream_initializer = services.stream_chooser();
  ChannelPtr server = test::serve_h2c(loops_, settings);
  std::shared_ptr<Client> client = Client::connect(loops_, server->local_address()).get();
  Future<std::string> answer = spawn(client->loop(), unary_text(*client, "/test.R/Echo", "compress me"));
  ASSERT_TRUE(answer.wait_for(60s));
  EXPECT_THAT(answer.get(), HasSubstr("UNKNOWN:"));
  EXPECT_EQ(server_end(), "done");
  client->close().wait();
  server->close().wait();
}

// The connection closes under a call whose reactor reads and writes nothing (it waits for its own
// input): on_done still comes, UNAVAILABLE.
TEST_P(GrpcReactorTest, AReactorClientThatIsNotReadingHearsTheConnectionClose) {
  auto r = std::make_shared<Recorder>();
  r->handle = client_->start("/test.R/Idle", {}, r);
  r->handle->start_write(bytes("x"));
  ASSERT_TRUE(seen_->idle_started.future().wait_for(60s));
  client_->close().wait();
  EXPECT_THAT(r->wait(), HasSubstr("UNAVAILABLE"));
  EXPECT_EQ(server_end(), "cancel+done");
}

// ---- a call whose loop group shuts down (server_reactor.h, client_reactor.h: the loop's end)

// Records what a server reactor hears and on which thread; hands its stream to the test.
class HeldServer final : public ServerReactor {
 public:
  HeldServer(ServerStream stream, std::shared_ptr<Promise<ServerStream>> handed, std::shared_ptr<std::string> heard,
             std::shared_ptr<Promise<void>> done)
      : stream_(std::move(stream)), heard_(std::move(heard)), done_(std::move(done)) {
    handed->set_value(stream_);
  }
  void on_read_done(std::optional<ByteBuf> message) override { add(message ? "read" : "read end"); }
  void on_write_done(bool ok) override { add(ok ? "write ok" : "write failed"); }
  void on_cancel() override { add("cancel"); }
  void on_done() override {
    add("done");
    done_->set_value();
  }

 private:
  void add(const std::string& event) { *heard_ += event + (stream_.loop().in_loop() ? " " : "(off the loop) "); }
  ServerStream stream_;
  std::shared_ptr<std::string> heard_;  // written on the call's loop until on_done
  std::shared_ptr<Promise<void>> done_;
};

Task<> open_call(Client& client, std::shared_ptr<ClientCall> call, std::string method) {
  *call = client.call(method);
  co_await call->write(bytes("x"));
}

// The server's loops shut down under an open call: the reactor hears the call's end on its loop
// (the shutdown closed the connection first), and requests made afterwards from the user's thread
// throw nothing and do nothing.
TEST_P(GrpcReactorTest, AServerReactorWhoseLoopGroupShutsDownHearsTheEndAndLaterRequestsDoNothing) {
  EventLoopGroup server_loops{transport(), loops(1, 2), "held-server"};
  auto handed = std::make_shared<Promise<ServerStream>>();
  auto heard = std::make_shared<std::string>();
  auto done = std::make_shared<Promise<void>>();
  ServiceRegistry services;
  services.add_reactor("/test.R/Held", [handed, heard, done](ServerStream s) {
    return std::make_shared<HeldServer>(std::move(s), handed, heard, done);
  });
  http2::Settings settings;
  settings.stream_initializer = services.stream_chooser();
  ChannelPtr server = test::serve_h2c(server_loops, settings);
  std::shared_ptr<Client> client = Client::connect(loops_, server->local_address()).get();
  auto call = std::make_shared<ClientCall>();
  ASSERT_TRUE(spawn(client->loop(), open_call(*client, call, "/test.R/Held")).wait_for(60s));
  Future<ServerStream> stream_handed = handed->future();
  ASSERT_TRUE(stream_handed.wait_for(60s));
  ServerStream stream = stream_handed.get();
  ASSERT_TRUE(server_loops.shutdown_gracefully(0ms, 0ms).wait_for(60s));
  ASSERT_TRUE(done->future().wait_for(60s)) << "the reactor never heard of the call's end";
  EXPECT_EQ(*heard, "cancel done ");
  EXPECT_NO_THROW(stream.start_read());
  EXPECT_NO_THROW(stream.start_write(bytes("late")));
  EXPECT_NO_THROW(stream.finish(Status(StatusCode::ok, "")));
  EXPECT_EQ(*heard, "cancel done ");
  client->loop().execute([call] { *call = ClientCall(); });
  client->close().wait();
}

// The client's loops shut down under an open call: on_done comes, UNAVAILABLE, on the call's loop;
// requests made afterwards from the user's thread throw nothing and do nothing.
TEST_P(GrpcReactorTest, AClientReactorWhoseLoopGroupShutsDownHearsTheEndAndLaterRequestsDoNothing) {
  EventLoopGroup client_loops{transport(), loops(1, 1), "held-client"};
  std::shared_ptr<Client> client = Client::connect(client_loops, server_->local_address()).get();
  auto r = std::make_shared<Recorder>();
  r->handle = client->start("/test.R/Idle", {}, r);
  r->handle->start_read();
  ASSERT_TRUE(seen_->idle_started.future().wait_for(60s));
  ASSERT_TRUE(client_loops.shutdown_gracefully(0ms, 0ms).wait_for(60s));
  EXPECT_THAT(r->wait(), HasSubstr("UNAVAILABLE"));
  EXPECT_NO_THROW(r->handle->start_write(bytes("late")));
  EXPECT_NO_THROW(r->handle->writes_done());
  EXPECT_NO_THROW(r->handle->cancel());
  EXPECT_EQ(r->failed_writes, 0);
  EXPECT_FALSE(r->off_loop);
  EXPECT_EQ(server_end(), "cancel+done");
}

WEFT_ON_EVERY_TRANSPORT(GrpcReactorTest);

}  // namespace
}  // namespace weft::grpc
