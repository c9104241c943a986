// weft-load grpc (tools/load/grpc_load.h) against bench.proto's service served by weft in this
// process: every call shape makes calls with no error, the responses are the size asked for, the
// hand-written request encoding is protobuf's, and an unreachable target is a LoadError. `method`
// calls a service described by a .proto written at test time (probe.proto below), in each of its
// four shapes, and says why a file, a method or a JSON body will not do.

#include "grpc_load.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <utility>

#include "support/blocking_client.h"
#include "support/shell.h"
#include "weft/codec/http2/server_codec.h"
#include "weft/grpc/service_registry.h"
#include "weft/weft.h"

namespace weft::load {
namespace {

// SimpleRequest's response_size (field 2) and payload length (field 3), read from the encoding
// encode_simple_request makes (varints below 2^28).
struct Parsed {
  std::uint64_t response_size = 0;
  std::uint64_t payload = 0;
};

std::uint64_t varint(const std::uint8_t*& p) {
  std::uint64_t v = 0;
  for (int shift = 0;; shift += 7) {
    const std::uint8_t b = *p++;
    v |= std::uint64_t{b & 0x7Fu} << shift;
    if ((b & 0x80) == 0) return v;
  }
}

Parsed parse(const ByteBuf& request) {
  Parsed out;
  const std::uint8_t* p = request.read_ptr();
  const std::uint8_t* end = p + request.readable_bytes();
  while (p < end) {
    const std::uint8_t key = *p++;
    if (key == 0x10) {
      out.response_size = varint(p);
    } else if (key == 0x1A) {
      const std::uint64_t n = varint(p);
      out.payload = n;
      p += n;
    } else {
      throw grpc::StatusError(grpc::Status(grpc::StatusCode::invalid_argument, "unexpected field"));
    }
  }
  return out;
}

// A SimpleResponse of `size` body bytes is at least `size` bytes: the test only counts them.
ByteBuf response(std::size_t size) { return ByteBuf::copy_of(std::string(size, '\0')); }

// probe.proto's Req{name=1 (string), count=2 (int32)}, decoded by hand as it arrived.
struct ProbeRequest {
  std::string name;
  std::uint64_t count = 0;
};

ProbeRequest parse_probe(const ByteBuf& request) {
  ProbeRequest out;
  const std::uint8_t* p = request.read_ptr();
  const std::uint8_t* end = p + request.readable_bytes();
  while (p < end) {
    const std::uint8_t key = *p++;
    if (key == 0x0A) {
      const std::uint64_t n = varint(p);
      out.name.assign(reinterpret_cast<const char*>(p), n);
      p += n;
    } else if (key == 0x10) {
      out.count = varint(p);
    } else {
      throw grpc::StatusError(grpc::Status(grpc::StatusCode::invalid_argument, "unexpected field"));
    }
  }
  return out;
}

// What probe.proto's service saw: calls, request messages, and the last request's fields.
struct ProbeCounts {
  std::atomic<long> calls{0};
  std::atomic<long> messages{0};
  std::atomic<long> unexpected{0};  // a request unlike the test's, or a client stream of another length
  std::atomic<long> last_count{-1};
};

constexpr std::string_view kProbeProto = R"(syntax = "proto3";
package loadtest;

message Req {
  string name = 1;
  int32 count = 2;
}
message Resp { bytes body = 1; }

service Probe {
  rpc Unary(Req) returns (Resp);
  rpc ServerStream(Req) returns (stream Resp);
  rpc ClientStream(stream Req) returns (Resp);
  rpc Bidi(stream Req) returns (stream Resp);
}
)";

// A directory of its own for this process's .proto files, removed at the end of the test.
class ProtoDir {
 public:
  ProtoDir()
      : path_(std::filesystem::path(::testing::TempDir()) /
              ("weft_grpc_load." + std::to_string(::getpid()) + "." + std::to_string(next_++))) {
    std::filesystem::create_directories(path_);
  }
  ~ProtoDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  std::string write(const std::string& name, std::string_view text) const {
    const std::filesystem::path file = path_ / name;
    std::filesystem::create_directories(file.parent_path());
    std::ofstream(file) << text;
    return file.string();
  }
  std::string path() const { return path_.string(); }

 private:
  static inline int next_ = 0;
  std::filesystem::path path_;
};

class GrpcLoadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServiceRegistry services;
    auto requests = requests_;
    auto probe = probe_;
    // probe.proto's service: Unary answers; ServerStream sends `count` responses and ends; ClientStream
    // counts the messages of each call (the test sends 3 each); Bidi answers each message.
    services.add_unary("/loadtest.Probe/Unary", [probe](grpc::ServerCall&, ByteBuf request) -> Task<ByteBuf> {
      const ProbeRequest r = parse_probe(request);
      if (r.name != "weft") probe->unexpected.fetch_add(1);
      probe->last_count.store(static_cast<long>(r.count));
      probe->calls.fetch_add(1);
      probe->messages.fetch_add(1);
      co_return response(8);
    });
    services.add("/loadtest.Probe/ServerStream", [probe](grpc::ServerCall& call) -> Task<> {
      std::optional<ByteBuf> request = co_await call.read();
      if (!request) co_return;
      probe->calls.fetch_add(1);
      probe->messages.fetch_add(1);
      const std::uint64_t count = parse_probe(*request).count;
      for (std::uint64_t i = 0; i < count; ++i) {
        ByteBuf body = response(4);
        co_await call.write(std::move(body));
      }
    });
    services.add("/loadtest.Probe/ClientStream", [probe](grpc::ServerCall& call) -> Task<> {
      long n = 0;
      while (std::optional<ByteBuf> request = co_await call.read()) {
        if (parse_probe(*request).name != "weft") probe->unexpected.fetch_add(1);
        ++n;
      }
      probe->calls.fetch_add(1);
      probe->messages.fetch_add(n);
      if (n != 3) probe->unexpected.fetch_add(1);
      ByteBuf body = response(2);
      co_await call.write(std::move(body));
    });
    services.add("/loadtest.Probe/Bidi", [probe](grpc::ServerCall& call) -> Task<> {
      probe->calls.fetch_add(1);
      while (std::optional<ByteBuf> request = co_await call.read()) {
        probe->messages.fetch_add(1);
        ByteBuf body = response(1);
        co_await call.write(std::move(body));
      }
    });
    services.add_unary("/grpc.testing.BenchmarkService/UnaryCall",
                       [requests](grpc::ServerCall&, ByteBuf request) -> Task<ByteBuf> {
                         const Parsed p = parse(request);
                         if (p.payload == 0 && p.response_size > 0) throw grpc::StatusError(grpc::Status(grpc::StatusCode::internal, "no payload"));
                         requests->fetch_add(1);
                         co_return response(p.response_size);
                       });
    services.add("/grpc.testing.BenchmarkService/StreamingCall", [requests](grpc::ServerCall& call) -> Task<> {
      while (std::optional<ByteBuf> request = co_await call.read()) {
        requests->fetch_add(1);
        co_await call.write(response(parse(*request).response_size));
      }
    });
    services.add("/grpc.testing.BenchmarkService/StreamingFromServer", [requests](grpc::ServerCall& call) -> Task<> {
      std::optional<ByteBuf> request = co_await call.read();
      if (!request) co_return;
      requests->fetch_add(1);
      const std::size_t size = parse(*request).response_size;
      // Until the client cancels. A write returns at once while the stream is writable, so the
      // handler pauses now and then to let the server's other streams and its socket go on.
      for (long k = 1;; ++k) {
        co_await call.write(response(size));
        if (k % 128 == 0) co_await weft::sleep(std::chrono::milliseconds(1));
      }
    });
    http2::Settings settings;
    settings.stream_initializer = services.stream_chooser();
    server_ = ServerBootstrap()
                  .group(loops_)
                  .child_handler([settings](Channel& ch) {
                    ch.pipeline().add_last("http2", std::make_shared<http2::ServerCodec>(settings));
                  })
                  .bind(SocketAddress::loopback(0))
                  .get();
  }
  void TearDown() override { server_->close().wait(); }

  GrpcResult run(const std::string& call, int size, int connections = 1, int streams = 10, double warmup_s = 0) {
    GrpcOptions o;
    o.warmup_s = warmup_s;
    o.call = call;
    o.target = "127.0.0.1:" + std::to_string(server_->local_address().port());
    o.size = size;
    o.connections = connections;
    o.streams = streams;
    o.duration_s = 0.5;
    return run_grpc(o);
  }

  // A `method` run of probe.proto's `method` (Probe/NAME) with the fixture's server as target.
  GrpcOptions method_options(const std::string& method, const std::string& data = "") {
    GrpcOptions o;
    o.call = "method";
    o.target = "127.0.0.1:" + std::to_string(server_->local_address().port());
    o.proto_file = proto_;
    o.method = "loadtest.Probe/" + method;
    o.data = data;
    o.connections = 2;
    o.streams = 4;
    o.duration_s = 0;
    return o;
  }
  // The LoadError's message of run_grpc(o), or "" when it threw none.
  static std::string load_error(const GrpcOptions& o) {
    try {
      run_grpc(o);
    } catch (const LoadError& e) {
      return e.what();
    }
    return "";
  }

  EventLoopGroup loops_{epoll(), 1};
  std::shared_ptr<std::atomic<long>> requests_ = std::make_shared<std::atomic<long>>(0);
  std::shared_ptr<ProbeCounts> probe_ = std::make_shared<ProbeCounts>();
  ProtoDir dir_;
  std::string proto_ = dir_.write("probe.proto", kProbeProto);
  ChannelPtr server_;
};

TEST_F(GrpcLoadTest, StreamReadsServerStreamsOnEveryStream) {
  GrpcResult r = run("stream", 10);
  EXPECT_EQ(r.errors.total(), 0u);
  EXPECT_EQ(r.calls, 10u);  // one StreamingFromServer call per stream
  EXPECT_EQ(requests_->load(), 10);
  EXPECT_GT(r.messages, 100u);
  EXPECT_EQ(r.latency.count(), 0u);
}

TEST_F(GrpcLoadTest, UnaryMakesCallsBackToBack) {
  GrpcResult r = run("unary", 100, 2, 5);
  EXPECT_EQ(r.errors.total(), 0u);
  EXPECT_GT(r.calls, 10u);
  EXPECT_EQ(r.messages, r.calls);
  EXPECT_EQ(r.latency.count(), r.calls);
  EXPECT_GE(static_cast<std::uint64_t>(requests_->load()), r.calls);
}

TEST_F(GrpcLoadTest, AWarmUpRunsBeforeTheCountedTime) {
  const auto start = Clock::now();
  GrpcResult r = run("unary", 0, 1, 2, 0.4);
  const double wall = std::chrono::duration<double>(Clock::now() - start).count();
  EXPECT_GE(wall, 0.4 + r.duration_s);
  EXPECT_EQ(r.errors.total(), 0u);
  EXPECT_GT(r.calls, 0u);
  EXPECT_EQ(r.latency.count(), r.calls);
}

TEST_F(GrpcLoadTest, PingPongRoundTripsOnEachStream) {
  GrpcResult r = run("pingpong", 0);
  EXPECT_EQ(r.errors.total(), 0u);
  EXPECT_EQ(r.calls, 10u);
  EXPECT_GT(r.messages, 10u);
  EXPECT_EQ(r.latency.count(), r.messages);
}

// -n: exactly that many messages, shared by every stream and connection, then the run ends by itself.
TEST_F(GrpcLoadTest, AMessageCountIsSentExactlyInEveryCall) {
  GrpcOptions o;
  o.target = "127.0.0.1:" + std::to_string(server_->local_address().port());
  o.duration_s = 0;  // no time limit: the count ends the run
  o.connections = 2;
  o.streams = 5;
  o.call = "unary";
  o.size = 10;
  o.messages = 1001;
  GrpcResult unary = run_grpc(o);
  EXPECT_EQ(unary.errors.total(), 0u);
  EXPECT_EQ(unary.messages, 1001u);
  EXPECT_EQ(unary.sent, 1001u);
  EXPECT_EQ(unary.calls, 1001u);
  EXPECT_EQ(requests_->load(), 1001);

  o.call = "pingpong";
  o.messages = 777;
  GrpcResult pingpong = run_grpc(o);
  EXPECT_EQ(pingpong.errors.total(), 0u);
  EXPECT_EQ(pingpong.messages, 777u);
  EXPECT_EQ(pingpong.sent, 777u);
  EXPECT_EQ(pingpong.calls, 10u);  // one StreamingCall per stream
  EXPECT_EQ(pingpong.latency.count(), 777u);

  o.call = "stream";
  o.messages = 500;
  GrpcResult stream = run_grpc(o);
  EXPECT_EQ(stream.errors.total(), 0u);
  EXPECT_EQ(stream.messages, 500u);
  EXPECT_EQ(stream.calls, 10u);
}

// --rate: an open loop; its messages cannot leave before their intended times, so 400 at 2,000/s
// take at least the schedule's 0.2 s (a lower bound: a slow machine only makes it longer).
TEST_F(GrpcLoadTest, AConstantRateSendsNoFasterThanItsSchedule) {
  for (const char* call : {"unary", "pingpong"}) {
    GrpcOptions o;
    o.target = "127.0.0.1:" + std::to_string(server_->local_address().port());
    o.duration_s = 0;
    o.streams = 4;
    o.call = call;
    o.rate = 2000;
    o.messages = 400;
    GrpcResult r = run_grpc(o);
    EXPECT_EQ(r.errors.total(), 0u) << call;
    EXPECT_EQ(r.messages, 400u) << call;
    EXPECT_EQ(r.latency.count(), 400u) << call;
    EXPECT_GE(r.duration_s, 399.0 / 2000) << call;
  }
  GrpcOptions stream;
  stream.target = "127.0.0.1:" + std::to_string(server_->local_address().port());
  stream.call = "stream";
  stream.rate = 100;
  EXPECT_THROW(run_grpc(stream), LoadError) << "a server stream has no rate of ours to keep";
}

TEST(GrpcLoadEncoding, SimpleRequestIsEncodedAsProtobufDoes) {
  // protoc --encode: response_size: 2, payload { body: "\0\0\0" }
  EXPECT_EQ(encode_simple_request(2, 3), std::string("\x10\x02\x1a\x05\x12\x03\0\0\0", 9));
  EXPECT_EQ(encode_simple_request(0, 0), "");
  EXPECT_EQ(encode_simple_request(300, 0), "\x10\xac\x02");
}

TEST(GrpcLoadEncoding, UnreachableTargetIsOneLineReason) {
  GrpcOptions o;
  o.target = "127.0.0.1:" + std::to_string(weft::test::unused_loopback_port());
  o.duration_s = 0.5;
  EXPECT_THROW(run_grpc(o), LoadError);
  o.call = "bidi";
  EXPECT_THROW(run_grpc(o), LoadError);
}

#ifdef WEFT_LOAD_PROTOBUF
#define WEFT_NEEDS_PROTOBUF() static_cast<void>(0)
#else
#define WEFT_NEEDS_PROTOBUF() GTEST_SKIP() << "weft-load was built without protobuf"
#endif

// Unary: the JSON's fields arrive encoded as protobuf does, -n calls exactly.
TEST_F(GrpcLoadTest, MethodUnarySendsTheJsonRequest) {
  WEFT_NEEDS_PROTOBUF();
  GrpcOptions o = method_options("Unary", R"({"name": "weft", "count": 42})");
  o.messages = 101;
  GrpcResult r = run_grpc(o);
  EXPECT_EQ(r.errors.total(), 0u);
  EXPECT_EQ(r.path, "/loadtest.Probe/Unary");
  EXPECT_EQ(r.kind, "unary");
  EXPECT_EQ(r.request_bytes, 8u);  // 0a 04 "weft" 10 2a
  EXPECT_EQ(r.messages, 101u);
  EXPECT_EQ(r.calls, 101u);
  EXPECT_EQ(r.sent, 101u);
  EXPECT_EQ(r.latency.count(), 101u);
  EXPECT_EQ(probe_->calls.load(), 101);
  EXPECT_EQ(probe_->unexpected.load(), 0);
  EXPECT_EQ(probe_->last_count.load(), 42);
}

// Server streaming: each call is read to its end; -n counts calls, messages the responses read.
TEST_F(GrpcLoadTest, MethodServerStreamingReadsEachCallToItsEnd) {
  WEFT_NEEDS_PROTOBUF();
  GrpcOptions o = method_options("ServerStream", R"({"count": 5})");
  o.messages = 60;
  GrpcResult r = run_grpc(o);
  EXPECT_EQ(r.errors.total(), 0u);
  EXPECT_EQ(r.kind, "server streaming");
  EXPECT_EQ(r.calls, 60u);
  EXPECT_EQ(r.sent, 60u);
  EXPECT_EQ(r.messages, 300u);
  EXPECT_EQ(r.latency.count(), 60u);
  EXPECT_EQ(probe_->calls.load(), 60);

  // A timed run ends its calls with the run, and --rate paces calls: 100 at 1,000/s take at least
  // the schedule's 0.099 s.
  o.messages = 100;
  o.rate = 1000;
  GrpcResult paced = run_grpc(o);
  EXPECT_EQ(paced.errors.total(), 0u);
  EXPECT_EQ(paced.calls, 100u);
  EXPECT_EQ(paced.messages, 500u);
  EXPECT_GE(paced.duration_s, 99.0 / 1000);
  o.messages = 0;
  o.rate = 0;
  o.duration_s = 0.3;
  GrpcResult timed = run_grpc(o);
  EXPECT_EQ(timed.errors.total(), 0u);
  EXPECT_GT(timed.calls, 0u);
  EXPECT_GE(timed.messages, timed.calls * 5);
}

// Client streaming: each call writes the request --stream-messages times; the server counts them.
TEST_F(GrpcLoadTest, MethodClientStreamingWritesKMessagesPerCall) {
  WEFT_NEEDS_PROTOBUF();
  GrpcOptions o = method_options("ClientStream", R"({"name": "weft"})");
  o.stream_messages = 3;
  o.messages = 50;
  GrpcResult r = run_grpc(o);
  EXPECT_EQ(r.errors.total(), 0u);
  EXPECT_EQ(r.kind, "client streaming");
  EXPECT_EQ(r.calls, 50u);
  EXPECT_EQ(r.messages, 50u);
  EXPECT_EQ(r.latency.count(), 50u);
  EXPECT_EQ(probe_->calls.load(), 50);
  EXPECT_EQ(probe_->messages.load(), 150);
  EXPECT_EQ(probe_->unexpected.load(), 0);
}

// Bidi streaming: ping-pong on one call per stream slot; -n counts round trips.
TEST_F(GrpcLoadTest, MethodBidiRoundTripsOnEachStream) {
  WEFT_NEEDS_PROTOBUF();
  GrpcOptions o = method_options("Bidi");
  o.method = "loadtest.Probe.Bidi";  // the dotted form names it too
  o.messages = 333;
  GrpcResult r = run_grpc(o);
  EXPECT_EQ(r.errors.total(), 0u);
  EXPECT_EQ(r.kind, "bidi streaming");
  EXPECT_EQ(r.messages, 333u);
  EXPECT_EQ(r.sent, 333u);
  EXPECT_EQ(r.calls, 8u);  // one call per stream slot: 2 connections x 4
  EXPECT_EQ(r.latency.count(), 333u);
  EXPECT_EQ(probe_->messages.load(), 333);
}

// A .proto that imports another from an -I directory.
TEST_F(GrpcLoadTest, MethodImportsFromIncludeDirectories) {
  WEFT_NEEDS_PROTOBUF();
  ProtoDir include;
  include.write("common/req.proto", R"(syntax = "proto3";
package common;
message Req { string name = 1; int32 count = 2; }
)");
  GrpcOptions o = method_options("Unary", R"({"name": "weft", "count": 7})");
  o.proto_file = dir_.write("importing.proto", R"(syntax = "proto3";
package loadtest;
import "common/req.proto";
message Resp { bytes body = 1; }
service Probe { rpc Unary(common.Req) returns (Resp); }
)");
  o.import_dirs = {include.path()};
  o.messages = 5;
  GrpcResult r = run_grpc(o);
  EXPECT_EQ(r.errors.total(), 0u);
  EXPECT_EQ(r.messages, 5u);
  EXPECT_EQ(probe_->last_count.load(), 7);
  EXPECT_EQ(probe_->unexpected.load(), 0);
}

TEST_F(GrpcLoadTest, MethodErrorsAreOneLineReasons) {
  WEFT_NEEDS_PROTOBUF();
  GrpcOptions o = method_options("Unary");
  o.messages = 1;
  o.proto_file = dir_.path() + "/missing.proto";
  EXPECT_EQ(load_error(o), "cannot read the .proto file " + o.proto_file);

  o.proto_file = dir_.write("broken.proto", "syntax = \"proto3\";\nmessage Req {\n  string name = ;\n}\n");
  std::string e = load_error(o);
  EXPECT_NE(e.find("broken.proto:3:17: "), std::string::npos) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos) << e;

  o.proto_file = proto_;
  o.method = "loadtest.Probe/Nope";
  e = load_error(o);
  EXPECT_EQ(e, "no method Nope in service loadtest.Probe (its methods: Unary, ServerStream, ClientStream, Bidi)");
  o.method = "loadtest.Nothing/Unary";
  e = load_error(o);
  EXPECT_EQ(e, "no service loadtest.Nothing in " + proto_ + " (its services: loadtest.Probe)");
  o.method = "Unary";
  EXPECT_NE(load_error(o).find("must be pkg.Service/Method"), std::string::npos);

  o.method = "loadtest.Probe/Unary";
  o.data = R"({"name": "weft", "colour": "red"})";
  e = load_error(o);
  EXPECT_NE(e.find("the request data does not fit loadtest.Req: "), std::string::npos) << e;
  EXPECT_NE(e.find("colour"), std::string::npos) << e;
  o.data = R"({"name": "weft")";  // not JSON: protobuf's reason, on one line
  e = load_error(o);
  EXPECT_EQ(e.rfind("the request data does not fit loadtest.Req: ", 0), 0u) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  EXPECT_EQ(probe_->calls.load(), 0) << "nothing is sent when the request cannot be made";
}

#ifndef WEFT_LOAD_PROTOBUF
TEST_F(GrpcLoadTest, MethodWithoutProtobufSaysSo) {
  GrpcOptions o = method_options("Unary");
  o.messages = 1;
  EXPECT_EQ(load_error(o), "weft-load was built without protobuf: --proto needs libprotobuf-dev");
  EXPECT_EQ(probe_->calls.load(), 0);
}
#endif

// Runs weft-load with `args`: its exit status, and what it wrote on stdout and stderr.
std::pair<int, std::string> run_weft_load(const std::string& args) {
  int status = -1;
  std::string out = weft::test::run_shell(std::string(WEFT_LOAD_BIN) + " " + args + " 2>&1", status);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

// The command line --help documents, end to end: weft-load itself, its summary and its JSON.
TEST_F(GrpcLoadTest, MethodFromTheCommandLine) {
  WEFT_NEEDS_PROTOBUF();
  const std::string data = dir_.write("req.json", R"({"name": "weft", "count": 2})");
  const std::string json = dir_.path() + "/out.json";
  const std::string target = "127.0.0.1:" + std::to_string(server_->local_address().port());
  auto [status, out] = run_weft_load("grpc method " + target + " --proto " + proto_ + " -I " + dir_.path() +
                                     " --call loadtest.Probe/ServerStream --data-file " + data +
                                     " -c 1 -s 2 -n 20 --latency --json " + json);
  ASSERT_EQ(status, 0) << out;
  EXPECT_NE(out.find("gRPC /loadtest.Probe/ServerStream (server streaming) @ " + target), std::string::npos) << out;
  EXPECT_NE(out.find("  40 messages, 20 calls in "), std::string::npos) << out;
  EXPECT_NE(out.find("Calls/sec:"), std::string::npos) << out;
  EXPECT_NE(out.find("failures=0"), std::string::npos) << out;
  std::ifstream in(json);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find(R"("method":"/loadtest.Probe/ServerStream","kind":"server streaming")"), std::string::npos)
      << text.str();

  auto [bad, why] = run_weft_load("grpc method " + target + " --proto " + proto_ +
                                  " --call loadtest.Probe/Unary --stream-messages 3 --data '{\"nope\": 1}'");
  EXPECT_EQ(bad, 1) << why;
  EXPECT_EQ(why.rfind("weft-load: the request data does not fit loadtest.Req: ", 0), 0u) << why;
}

}  // namespace
}  // namespace weft::load
