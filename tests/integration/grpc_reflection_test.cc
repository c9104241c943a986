// Server reflection (weft/grpc/reflection.h) read by a real client: Python's grpcio (Debian
// python3-grpcio, stubs generated here from grpc_reflection/reflection.proto) asks a weft server
// with the generated test services for its services, a symbol's file with its import, a file
// sent already, names it lacks and extension numbers (grpc_reflection/reflection_client.py). Skipped,
// saying why, without /usr/bin/python3's grpcio or grpc_python_plugin. The reflection service is
// a handler on ServerCall, like every method: one transport (epoll) here, the others are the
// gRPC core's tests'.

// Built only with the tests' generated protos (protobuf and protoc-gen-weft at configure time).
#ifdef WEFT_HAVE_TEST_PROTOS
#include <gtest/gtest.h>
#include <stdlib.h>

#include <memory>
#include <string>

#include "no_package.weft.h"
#include "support/shell.h"
#include "weft/grpc/reflection.h"
#include "weft/weft.h"
#include "weft_test/shapes.weft.h"

namespace weft::grpc {
namespace {

class ReflectedShapes final : public ::weft_test::shapes::Shapes::Service {};
class ReflectedPinger final : public ::PlainPinger::Service {};

TEST(GrpcReflectionTest, PythonGrpcioListsTheServicesAndReadsTheirDescriptors) {
  int status = -1;
  test::run_shell("/usr/bin/python3 -c 'import grpc' 2>&1 && command -v grpc_python_plugin >/dev/null", status);
  if (status != 0) GTEST_SKIP() << "needs /usr/bin/python3 with grpcio (python3-grpcio) and grpc_python_plugin";

  char dir_template[] = "/tmp/weft-reflection-XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::string gen = dir_template;
  const std::string here = WEFT_GRPC_REFLECTION_DIR;
  const std::string generated = test::run_shell(
      "protoc -I " + here + " --python_out=" + gen + " --grpc_python_out=" + gen +
          " --plugin=protoc-gen-grpc_python=$(command -v grpc_python_plugin) " + here + "/reflection.proto 2>&1",
      status);
  ASSERT_EQ(status, 0) << generated;

  ServiceRegistry services;
  ::weft_test::shapes::Shapes::Service::add_to(services, std::make_shared<ReflectedShapes>());
  ::weft_test::shapes::Empty::Service::add_to(services, std::make_shared<::weft_test::shapes::Empty::Service>());
  ::PlainPinger::Service::add_to(services, std::make_shared<ReflectedPinger>());
  add_reflection(services);
  const http2::Settings settings = services.http2_settings();
  EventLoopGroup loops(epoll(), 1);
  ChannelPtr server = ServerBootstrap()
                          .group(loops)
                          .child_handler([settings](Channel& ch) {
                            ch.pipeline().add_last("http2", std::make_shared<http2::ServerCodec>(settings));
                          })
                          .bind(SocketAddress::loopback(0))
                          .get();
  const std::string out = test::run_shell("timeout 120 /usr/bin/python3 " + here + "/reflection_client.py " + gen +
                                              " " + std::to_string(server->local_address().port()) + " 2>&1",
                                          status);
  server->close().wait();
  test::run_shell("rm -rf " + gen, status);
  EXPECT_EQ(out, "OK\n");
}

}  // namespace
}  // namespace weft::grpc
#endif  // WEFT_HAVE_TEST_PROTOS
