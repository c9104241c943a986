// weft-load grpc (tools/load/grpc_load.h) against bench.proto's service served by weft in this
// process: every call shape makes calls with no error, the responses are the size asked for, the
// hand-written request encoding is protobuf's, and an unreachable target is a LoadError.

#include "grpc_load.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "support/blocking_client.h"
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

class GrpcLoadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServiceRegistry services;
    auto requests = requests_;
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

  EventLoopGroup loops_{epoll(), 1};
  std::shared_ptr<std::atomic<long>> requests_ = std::make_shared<std::atomic<long>>(0);
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

}  // namespace
}  // namespace weft::load
