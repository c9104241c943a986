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

#include "support/shell.h"
#include "support/transports.h"
#include "weft/codec/grpc/compression.h"
#include "weft/codec/grpc/service_registry.h"
#include "weft/weft.h"

using ::testing::HasSubstr;

namespace weft::grpc {
namespace {

std::string run(const std::string& command, int& status) { return test::run_shell(command + " 2>&1", status); }

// The grpc++ client, built once per process (as grpc_interop_test.cc builds it).
struct Peer {
  std::string client;
  std::string error;
  bool skip = false;
};
const Peer& peer() {
  static Peer built = [] {
    Peer p;
    int status = -1;
    run("pkg-config --exists grpc++ protobuf && command -v grpc_cpp_plugin && command -v protoc", status);
    if (status != 0) {
      p.skip = true;
      p.error = "grpc++ is not installed (apt-get install libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev "
                "protobuf-compiler pkg-config)";
      return p;
    }
    const char* dir = std::getenv("WEFT_GRPC_PEER_DIR");
    const std::string sources = dir != nullptr ? dir : WEFT_GRPC_PEER_DIR;
    const char* tmp = std::getenv("TMPDIR");
    const std::string out = std::string(tmp != nullptr ? tmp : "/tmp") + "/weft-peer-grpc";
    const std::string log =
        run("mkdir -p " + out + " && flock " + out + "/.lock bash " + sources + "/build.sh " + out, status);
    if (status != 0) {
      p.error = "build.sh failed: " + log;
      return p;
    }
    p.client = out + "/weft-peer-grpc-client";
    return p;
  }();
  return built;
}

// ---- bench.proto's two fields weft needs, on bytes

bool read_varint(const ByteBuf& buf, std::size_t& at, std::uint64_t& value) {
  value = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (at >= buf.readable_bytes()) return false;
    const std::uint8_t byte = buf.read_ptr()[at++];
    value |= std::uint64_t{byte & 0x7Fu} << shift;
    if ((byte & 0x80) == 0) return true;
  }
  return false;
}

// SimpleRequest.response_size (field 2); bytes that are not a SimpleRequest (a message left
// compressed, say) are INVALID_ARGUMENT, which fails the client's call.
std::size_t response_size(const ByteBuf& request) {
  std::size_t at = 0;
  std::uint64_t size = 0;
  while (at < request.readable_bytes()) {
    std::uint64_t key = 0, value = 0;
    if (!read_varint(request, at, key)) throw StatusError(Status(StatusCode::invalid_argument, "bad key"));
    if ((key & 7) == 0) {
      if (!read_varint(request, at, value)) throw StatusError(Status(StatusCode::invalid_argument, "bad varint"));
      if ((key >> 3) == 2) size = value;
    } else if ((key & 7) == 2) {
      if (!read_varint(request, at, value) || value > request.readable_bytes() - at) {
        throw StatusError(Status(StatusCode::invalid_argument, "bad length"));
      }
      at += value;
    } else {
      throw StatusError(Status(StatusCode::invalid_argument, "bad wire type"));
    }
  }
  if (size > 1u << 20) throw StatusError(Status(StatusCode::invalid_argument, "response_size too large"));
  return static_cast<std::size_t>(size);
}

void write_varint(ByteBuf& buf, std::uint64_t value) {
  while (value >= 0x80) {
    buf.write_u8(static_cast<std::uint8_t>(value | 0x80));
    value >>= 7;
  }
  buf.write_u8(static_cast<std::uint8_t>(value));
}

// SimpleResponse{payload: Payload{body: `size` bytes}}: zeros (they shrink a thousandfold), or with
// `textured` 16 letters in a pseudo-random order (they shrink about twofold: a stream of them is
// bounded by flow control, where a stream of zeros floods the client with a thousand times its window).
ByteBuf simple_response(std::size_t size, bool textured = false) {
  ByteBuf out = ByteBuf::copy_of("");
  if (size == 0) return out;
  ByteBuf payload = ByteBuf::copy_of("");
  payload.write_u8(0x12);
  write_varint(payload, size);
  payload.ensure_writable(size);
  std::fill_n(payload.write_ptr(), size, std::uint8_t{0});
  std::uint32_t lcg = 12345;
  for (std::size_t i = 0; textured && i < size; ++i) {
    lcg = lcg * 1664525u + 1013904223u;
    payload.write_ptr()[i] = static_cast<std::uint8_t>('a' + (lcg >> 28));
  }
  payload.advance_writer(size);
  out.write_u8(0x0A);
  write_varint(out, payload.readable_bytes());
  out.ensure_writable(payload.readable_bytes());
  std::copy_n(payload.read_ptr(), payload.readable_bytes(), out.write_ptr());
  out.advance_writer(payload.readable_bytes());
  return out;
}

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
    const std::string out = run("timeout 600 " + peer().client + " " + target + " " + mode + " 2 1 " +
                                    std::to_string(size) + " 1 " + std::string(compression_name(algorithm)) +
                                    (bin ? " bin" : ""),
                                status);
    ASSERT_EQ(status, 0) << out;
    EXPECT_THAT(out, HasSubstr("failures=0"));
    EXPECT_GT(messages(out), 10) << out;
    EXPECT_GE(counts_->compressed_calls.load(), 2) << "the client's requests did not say " << compression_name(algorithm);
    EXPECT_GE(counts_->compressed_replies.load(), 2) << "grpc++ did not accept " << compression_name(algorithm);
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

WEFT_ON_EVERY_TRANSPORT(GrpcCompressionInteropTest);

}  // namespace
}  // namespace weft::grpc
