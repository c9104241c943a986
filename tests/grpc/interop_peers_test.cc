// grpc's interop suite against real peers, each way they are written (tests/grpc/interop_peer):
// grpc++ 1.51's interop client against weft's TestService, weft's interop cases against grpc++'s
// TestService, and Python grpcio 1.51's interop client against weft's; on every transport of
// weft's side, over h2c and TLS. Skipped, with the reason, where a peer is not installed.

#ifdef WEFT_HAVE_INTEROP  // built with protoc-gen-weft (CMakeLists.txt: weft_grpc_interop)

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "interop/interop_cases.h"
#include "interop/interop_service.h"
#include "support/h2_matrix.h"
#include "support/hello_process.h"
#include "support/shell.h"
#include "support/tls_certs.h"
#include "weft/weft.h"

namespace weft::grpc {
namespace {

const std::string kPeerSources = WEFT_INTEROP_PEER_DIR;
const std::string kProtos = WEFT_INTEROP_PROTOS_DIR;

std::string peer_out() {
  const char* tmp = std::getenv("TMPDIR");
  return std::string(tmp != nullptr ? tmp : "/tmp") + "/weft-interop-peer";
}

std::string shell(const std::string& command, int& status) { return test::run_shell(command + " 2>&1", status); }

// grpc++'s interop client and server, built once (the build built them: target weft_interop_peer;
// build.sh returns at once while they are newer than their sources). Empty, with `why`, when not.
struct Peer {
  std::string client;
  std::string server;
  std::string why;
  bool missing = false;
};
const Peer& grpcpp_peer() {
  static const Peer built = [] {
    Peer p;
    int status = -1;
    shell("pkg-config --exists grpc++ protobuf && command -v grpc_cpp_plugin && command -v protoc", status);
    if (status != 0) {
      p.missing = true;
      p.why = "grpc++ is not installed (apt-get install libgrpc++-dev protobuf-compiler-grpc pkg-config)";
      return p;
    }
    const std::string log = shell("bash " + kPeerSources + "/build.sh " + peer_out(), status);
    if (status != 0) p.why = "build.sh failed: " + log;
    p.client = peer_out() + "/weft-interop-peer-client";
    p.server = peer_out() + "/weft-interop-peer-server";
    return p;
  }();
  return built;
}

// A directory of this test process's own, removed when the process exits.
struct OwnDirectory {
  std::string path;
  ~OwnDirectory() {
    std::error_code ignored;
    if (!path.empty()) std::filesystem::remove_all(path, ignored);
  }
};

// Python grpcio's interop client: its command up to the flags (stubs made once per process, by
// grpc_python_plugin, in a directory of the process's own: ctest runs these tests as processes side
// by side, and one that rewrote shared stubs while another imported them failed the other with
// "module 'grpc.testing.empty_pb2' has no attribute 'Empty'").
const Peer& python_peer() {
  static OwnDirectory stubs_dir;
  static const Peer made = [] {
    Peer p;
    int status = -1;
    shell("/usr/bin/python3 -c 'import grpc' && command -v grpc_python_plugin && command -v protoc", status);
    if (status != 0) {
      p.missing = true;
      p.why = "Python grpcio is not installed (apt-get install python3-grpcio protobuf-compiler-grpc)";
      return p;
    }
    std::string pattern = peer_out() + "/python-XXXXXX";
    shell("mkdir -p " + peer_out(), status);
    if (::mkdtemp(pattern.data()) == nullptr) {
      p.why = "mkdtemp " + pattern + " failed";
      return p;
    }
    stubs_dir.path = pattern;
    const std::string& stubs = stubs_dir.path;
    const std::string log = shell("protoc -I " + kProtos + " --python_out=" + stubs + " --grpc_python_out=" + stubs +
                                      " --plugin=protoc-gen-grpc_python=$(command -v grpc_python_plugin) " + kProtos +
                                      "/grpc/testing/empty.proto " + kProtos + "/grpc/testing/messages.proto " +
                                      kProtos + "/grpc/testing/test.proto",
                                  status);
    if (status != 0) p.why = "protoc failed: " + log;
    p.client = "/usr/bin/python3 " + kPeerSources + "/client.py " + stubs;
    return p;
  }();
  return made;
}

#define WEFT_REQUIRE_PEER(peer)                     \
  do {                                              \
    if ((peer).missing) GTEST_SKIP() << (peer).why; \
    ASSERT_TRUE((peer).why.empty()) << (peer).why;  \
  } while (false)

// Every case's line says passed, and the exit status says so too.
void expect_every_case_passed(const std::string& out, int status) {
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << out;
  for (std::string_view name : interop::case_names()) {
    EXPECT_NE(out.find(std::string(name) + ": passed\n"), std::string::npos) << name << " in:\n" << out;
  }
}

// On every transport of weft's side, over h2c and over TLS (h2 by ALPN; the peers trust the test CA).
class GrpcInteropPeersTest : public ::testing::TestWithParam<std::tuple<Transport*, bool>> {
 protected:
  Transport& transport() const { return *std::get<0>(GetParam()); }
  bool tls() const { return std::get<1>(GetParam()); }

  std::uint16_t serve_test_service() {
    ServiceRegistry services;
    interop::add_test_service(services);
    http2::Settings settings = services.http2_settings();
    TlsContextPtr context = tls() ? test::test_server_context(test::test_pki().localhost, {"h2"}) : nullptr;
    server_ = ServerBootstrap()
                  .group(loops_)
                  .child_handler([settings, context](Channel& ch) {
                    if (context) ch.pipeline().add_last("tls", std::make_shared<TlsHandler>(context));
                    ch.pipeline().add_last("http2", std::make_shared<http2::ServerCodec>(settings));
                  })
                  .bind(SocketAddress::loopback(0))
                  .get();
    return server_->local_address().port();
  }
  // A peer client's flags for weft's server on `port`.
  std::string client_flags(std::uint16_t port) const {
    std::string flags = " --server_port=" + std::to_string(port) + " --test_case=all";
    if (tls()) {
      static const std::string ca = test::write_temp_file(test::test_pki().ca.cert_pem, ".pem");
      flags += " --use_tls=true --ca_file=" + ca + " --server_host_override=localhost";
    }
    return flags;
  }
  // grpc++'s server's flags (HelloProcess adds --host and --port).
  std::vector<std::string> server_flags() const {
    if (!tls()) return {};
    static const std::string cert = test::write_temp_file(test::test_pki().localhost.cert_pem, ".pem");
    static const std::string key = test::write_temp_file(test::test_pki().localhost.key_pem, ".pem");
    return {"--use_tls=true", "--cert_file=" + cert, "--key_file=" + key};
  }
  void TearDown() override {
    if (server_) server_->close().wait();
  }

  // A loop per connection on the blocking transport (the peers open one or two).
  EventLoopGroup loops_{transport(), transport().name() == "blocking" ? 4u : 1u};
  ChannelPtr server_;
};

TEST_P(GrpcInteropPeersTest, GrpcppClientPassesEveryCaseAgainstWeftsServer) {
  WEFT_REQUIRE_PEER(grpcpp_peer());
  const std::uint16_t port = serve_test_service();
  int status = -1;
  const std::string out = shell(grpcpp_peer().client + client_flags(port), status);
  expect_every_case_passed(out, status);
}

TEST_P(GrpcInteropPeersTest, WeftsClientPassesEveryCaseAgainstGrpcppsServer) {
  WEFT_REQUIRE_PEER(grpcpp_peer());
  test::HelloProcess server(grpcpp_peer().server, server_flags());
  ASSERT_TRUE(server.is_running()) << server.error();
  Client::Options options;
  if (tls()) {
    options.http2.tls = test::test_client_context({"h2"});
    options.http2.server_name = "localhost";
  }
  std::shared_ptr<Client> client = Client::connect(loops_, SocketAddress::loopback(server.port()), options).get();
  for (std::string_view name : interop::case_names()) {
    Future<std::string> done = spawn(client->loop(), interop::run_case(client, name));
    ASSERT_TRUE(done.wait_for(std::chrono::seconds(60))) << name << " did not end";
    EXPECT_EQ(done.get(), "") << name;
  }
  client->close().wait();
}

TEST_P(GrpcInteropPeersTest, PythonClientPassesEveryCaseAgainstWeftsServer) {
  WEFT_REQUIRE_PEER(python_peer());
  const std::uint16_t port = serve_test_service();
  int status = -1;
  const std::string out = shell(python_peer().client + client_flags(port), status);
  expect_every_case_passed(out, status);
}

WEFT_H2_ON_EVERY_TRANSPORT(GrpcInteropPeersTest);

}  // namespace
}  // namespace weft::grpc

#endif  // WEFT_HAVE_INTEROP
