// gRPC compression and binary metadata against grpc++ 1.51, on every transport: the reference
// client (tests/integration/grpc_peer, built by its build.sh when the test runs; skipped, saying so,
// when grpc++ is not installed) compresses its requests (gzip or deflate) and sends -bin metadata;
// weft's server decompresses them, compresses its responses in the encoding the client accepts, and
// sends -bin metadata back in the head and the trailers. The client checks every response's payload
// size and the metadata's bytes; the server counts the calls that came compressed and the responses
// it compressed.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>

#include "support/grpc_peer.h"
#include "support/shell.h"
#include "support/transports.h"
#include "weft/grpc/compression.h"
#include "weft/grpc/service_registry.h"
#include "weft/weft.h"

using ::testing::HasSubstr;

namespace weft::grpc {
namespace {

using test::response_size;
using test::simple_response;

const test::GrpcPeer& peer() { return test::grpc_peer(); }
std::string run(const std::string& command, int& status) { return test::run_shell(command + " 2>&1", status); }

// What the server saw (its loops' threads count, the test reads after the client exited).
struct Counts {
  std::atomic<long> compressed_calls{0};    // requests whose head said the client's grpc-encoding
  std::atomic<long> compressed_replies{0};  // calls whose responses went in that encoding
  std::atomic<long> bin_echoed{0};          // calls whose x-weft-bin metadata came and went back
};

ServiceRegistry compressing_service(Compression algorithm, std::shared_ptr<Counts> counts) {
  ServerOptions options;
  options.response_compression = CompressionOptions(algorithm, -1, 0);  // every message
  ServiceRegistry services(options);
  const std::string name(compression_name(algorithm));
  const auto seen = [counts, name](ServerCall& call) {
    if (call.request().header("grpc-encoding") == name) counts->compressed_calls.fetch_add(1);
  };
  services.add("/grpc.testing.BenchmarkService/UnaryCall", [counts, seen](ServerCall& call) -> Task<> {
    seen(call);
    std::optional<ByteBuf> request = co_await call.read();
    if (!request) throw StatusError(Status(StatusCode::internal, "no request"));
    if (std::optional<std::string> bin = call.metadata("x-weft-bin")) {
      call.add_response_header("echo-bin", *bin);
      call.add_trailing_metadata("trailer-bin", *bin);
      counts->bin_echoed.fetch_add(1);
    }
    co_await call.write(simple_response(response_size(*request)));
    if (call.response_encoding() != Compression::identity) counts->compressed_replies.fetch_add(1);
  });
  services.add("/grpc.testing.BenchmarkService/StreamingCall", [counts, seen](ServerCall& call) -> Task<> {
    seen(call);
    bool counted = false;
    while (std::optional<ByteBuf> request = co_await call.read()) {
      co_await call.write(simple_response(response_size(*request)));
      if (!counted && call.response_encoding() != Compression::identity) counts->compressed_replies.fetch_add(1);
      counted = true;
    }
  });
  services.add("/grpc.testing.BenchmarkService/StreamingFromServer", [counts, seen](ServerCall& call) -> Task<> {
    seen(call);
    std::optional<ByteBuf> request = co_await call.read();
    if (!request) throw StatusError(Status(StatusCode::internal, "no request"));
    const ByteBuf response = simple_response(response_size(*request), true);
    co_await call.write(response.slice());
    if (call.response_encoding() != Compression::identity) counts->compressed_replies.fetch_add(1);
    for (;;) co_await call.write(response.slice());  // until the client cancels (CallEnded)
  });
  return services;
}

long messages(const std::string& out) {
  const auto at = out.find("messages=");
  return at == std::string::npos ? -1 : std::atol(out.c_str() + at + 9);
}

class GrpcCompressionInteropTest : public test::TransportTest {
 protected:
  void TearDown() override {
    if (server_) server_->close().wait();
  }

  // Serves the benchmark service compressing in `algorithm`, runs the grpc++ client in `mode` with
  // requests in `algorithm` (and binary metadata when `bin`), and checks both sides.
  void expect_calls(Compression algorithm, const std::string& mode, int size, bool bin = false) {
    expect_counted_run(algorithm, mode, size, bin, 2, 200);
    EXPECT_GE(counts_->compressed_calls.load(), 2)
        << "the client's requests did not say " << compression_name(algorithm);
    EXPECT_GE(counts_->compressed_replies.load(), 2) << "grpc++ did not accept " << compression_name(algorithm);
  }

  // Runs the grpc++ client with `threads` threads until `goal` messages in all, and checks its report.
  void expect_counted_run(Compression algorithm, const std::string& mode, int size, bool bin, int threads, long goal) {
    if (peer().skip) GTEST_SKIP() << peer().error;
    ASSERT_FALSE(peer().client.empty()) << peer().error;
    const ServiceRegistry services = compressing_service(algorithm, counts_);
    http2::Settings settings;
    settings.stream_initializer = services.stream_chooser();
    server_ = ServerBootstrap()
                  .group(loops_)
                  .child_handler([settings](Channel& ch) {
                    ch.pipeline().add_last("http2", std::make_shared<http2::ServerCodec>(settings));
                  })
                  .bind(SocketAddress::loopback(0))
                  .get();
    const std::string target = "127.0.0.1:" + std::to_string(server_->local_address().port());
    int status = -1;
    const std::string out =
        run("timeout 600 " + peer().client + " " + target + " " + mode + " " + std::to_string(threads) +
                " messages:" + std::to_string(goal) + " " + std::to_string(size) + " 1 " +
                std::string(compression_name(algorithm)) + (bin ? " bin" : ""),
            status);
    ASSERT_EQ(status, 0) << out;
    EXPECT_THAT(out, HasSubstr("failures=0"));
    EXPECT_GE(messages(out), goal) << out;
    if (bin) {
      EXPECT_GE(counts_->bin_echoed.load(), messages(out));
    }
  }

  EventLoopGroup loops_{transport(), loops(1, 2)};
  std::shared_ptr<Counts> counts_ = std::make_shared<Counts>();
  ChannelPtr server_;
};

TEST_P(GrpcCompressionInteropTest, GzipUnaryCallsWithBinaryMetadata) {
  expect_calls(Compression::gzip, "unary", 1000, true);
}

TEST_P(GrpcCompressionInteropTest, DeflatePingPong) { expect_calls(Compression::deflate, "pingpong", 1000); }

TEST_P(GrpcCompressionInteropTest, GzipServerStream) { expect_calls(Compression::gzip, "stream", 20'000); }

// The tests above count on each client thread's call reaching the server. A counted run stops at its
// goal, and a thread the machine started late once saw the goal already reached and sent nothing
// (CI: DeflatePingPong counted 1 compressed call of 2). Each thread now completes one message first.
TEST_P(GrpcCompressionInteropTest, EveryThreadOfACountedRunCallsBeforeTheGoalStopsIt) {
  constexpr int kThreads = 8;
  expect_counted_run(Compression::deflate, "pingpong", 10, false, kThreads, 1);
  EXPECT_EQ(counts_->compressed_calls.load(), kThreads);
  EXPECT_EQ(counts_->compressed_replies.load(), kThreads);
}

WEFT_ON_EVERY_TRANSPORT(GrpcCompressionInteropTest);

}  // namespace
}  // namespace weft::grpc
