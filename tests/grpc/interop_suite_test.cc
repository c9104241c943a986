// grpc's interop suite (doc/interop-test-descriptions.md) with weft on both sides, on every
// transport, over h2c and TLS: weft's interop cases (examples/grpc_interop/interop, on protoc-gen-weft's stubs for
// grpc.testing) against its TestService, in process; the cases failing against a server that
// serves none of it; and weft-grpc-interop-client, the program, as grpc's clients are run.

#ifdef WEFT_HAVE_INTEROP  // built with protoc-gen-weft (CMakeLists.txt: weft_grpc_interop)

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <tuple>

#include "grpc/testing/test.weft.h"
#include "interop/interop_cases.h"
#include "interop/interop_service.h"
#include "support/h2_matrix.h"
#include "support/shell.h"
#include "support/tls_certs.h"
#include "weft/weft.h"

namespace weft::grpc {
namespace {

// On every transport, over h2c and over TLS (h2 by ALPN).
class GrpcInteropSuiteTest : public ::testing::TestWithParam<std::tuple<Transport*, bool>> {
 protected:
  Transport& transport() const { return *std::get<0>(GetParam()); }
  bool tls() const { return std::get<1>(GetParam()); }

  void serve(ServiceRegistry services) {
    services_ = std::move(services);
    http2::Settings settings = services_.http2_settings();
    TlsContextPtr context = tls() ? test::test_server_context(test::test_pki().localhost, {"h2"}) : nullptr;
    server_ = ServerBootstrap()
                  .group(loops_)
                  .child_handler([settings, context](Channel& ch) {
                    if (context) ch.pipeline().add_last("tls", std::make_shared<TlsHandler>(context));
                    ch.pipeline().add_last("http2", std::make_shared<http2::ServerCodec>(settings));
                  })
                  .bind(SocketAddress::loopback(0))
                  .get();
    Client::Options options;
    if (tls()) {
      options.http2.tls = test::test_client_context({"h2"});
      options.http2.server_name = "localhost";
    }
    client_ = Client::connect(loops_, SocketAddress::loopback(server_->local_address().port()), options).get();
  }
  void TearDown() override {
    if (client_) client_->close().wait();
    if (server_) server_->close().wait();
  }
  // What the case found wrong; empty when it passed.
  std::string run_case(std::string_view name) {
    Future<std::string> done = spawn(client_->loop(), interop::run_case(client_, name));
    EXPECT_TRUE(done.wait_for(std::chrono::seconds(60))) << name << " did not end";
    return done.get();
  }

  // A server loop and a client loop; on the blocking transport a loop per channel.
  EventLoopGroup loops_{transport(), transport().name() == "blocking" ? 3u : 2u};
  ServiceRegistry services_;
  ChannelPtr server_;
  std::shared_ptr<Client> client_;
};

TEST_P(GrpcInteropSuiteTest, EveryCasePassesAgainstWeftsTestService) {
  ServiceRegistry services;
  interop::add_test_service(services);
  serve(std::move(services));
  ASSERT_EQ(interop::case_names().size(), 16u);
  for (std::string_view name : interop::case_names()) EXPECT_EQ(run_case(name), "") << name;
}

// The cases assert: against a TestService left to the generated defaults (every method
// UNIMPLEMENTED), only the two that expect UNIMPLEMENTED pass.
TEST_P(GrpcInteropSuiteTest, TheCasesFailAgainstAServerThatImplementsNothing) {
  ServiceRegistry services;
  ::grpc::testing::TestService::Service::add_to(services, std::make_shared<::grpc::testing::TestService::Service>());
  serve(std::move(services));
  for (std::string_view name : interop::case_names()) {
    const bool expects_unimplemented = name == "unimplemented_method" || name == "unimplemented_service";
    // cancel_after_begin cancels before the server answers: CANCELLED, whatever the server does;
    // timeout_on_sleeping_server's 1 ms may pass before the UNIMPLEMENTED comes back, or not.
    if (name == "timeout_on_sleeping_server") continue;
    const bool passes_anyway = name == "cancel_after_begin";
    EXPECT_EQ(run_case(name).empty(), expects_unimplemented || passes_anyway) << name;
  }
}

WEFT_H2_ON_EVERY_TRANSPORT(GrpcInteropSuiteTest);

#ifdef WEFT_GRPC_INTEROP_CLIENT_BIN
// The program: one line per case, exit status 0 when all passed; 2 for a case it does not know.
TEST(GrpcInteropClientProgram, RunsEveryCaseAgainstAServerAndSaysSoInItsExitStatus) {
  EventLoopGroup loops(epoll(), 1);
  ServiceRegistry services;
  interop::add_test_service(services);
  http2::Settings settings = services.http2_settings();
  ChannelPtr server = ServerBootstrap()
                          .group(loops)
                          .child_handler([settings](Channel& ch) {
                            ch.pipeline().add_last("http2", std::make_shared<http2::ServerCodec>(settings));
                          })
                          .bind(SocketAddress::loopback(0))
                          .get();
  const std::string client = std::string(WEFT_GRPC_INTEROP_CLIENT_BIN) +
                             " --server_host=127.0.0.1 --server_port=" + std::to_string(server->local_address().port());
  int status = -1;
  const std::string out = test::run_shell(client + " --test_case=all 2>&1", status);
  EXPECT_EQ(status, 0) << out;
  for (std::string_view name : interop::case_names()) {
    EXPECT_NE(out.find(std::string(name) + ": passed\n"), std::string::npos) << name << " in:\n" << out;
  }
  test::run_shell(client + " --test_case=no_such_case 2>&1", status);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 2) << status;
  server->close().wait();
}
#endif

}  // namespace
}  // namespace weft::grpc

#endif  // WEFT_HAVE_INTEROP
