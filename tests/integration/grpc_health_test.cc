// weft-grpc-bench-server's health service (grpc::HealthService) against a real peer, Python's grpcio
// (Debian python3-grpcio; skipped, saying so, without it), on every transport: stubs made from
// grpc_health/health.proto by protoc and grpc_python_plugin when the test runs, Check of "" and of an
// unknown service, and a Watch across the server's SIGTERM: SERVING, then NOT_SERVING as the drain
// starts, then the stream ends OK and the server exits 0 without waiting for its drain deadline.
// Release only (as the grpc++ peers' builds): the service runs sanitized in weft_grpc_tests.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "support/hello_process.h"
#include "support/sanitizers.h"
#include "support/shell.h"

#ifndef WEFT_GRPC_BENCH_SERVER_BIN
#define WEFT_GRPC_BENCH_SERVER_BIN ""  // examples not built: the test is skipped
#endif

using ::testing::HasSubstr;

namespace weft::test {
namespace {

std::string run(const std::string& command, int& status) { return run_shell(command + " 2>&1", status); }

// python3 with grpcio, looked for once: a Debian package, so the system's python3 first (another
// python3 on PATH may hide it, and a pyenv shim costs a second to start).
const std::string& grpcio_python() {
  static const std::string found = [] {
    for (const char* candidate : {"/usr/bin/python3", "python3"}) {
      int status = -1;
      run(std::string(candidate) + " -c 'import grpc, google.protobuf' 2>/dev/null", status);
      if (status == 0) return std::string(candidate);
    }
    return std::string();
  }();
  return found;
}

class GrpcHealthTest : public ::testing::TestWithParam<const char*> {};

TEST_P(GrpcHealthTest, GrpcioChecksAndWatchesUntilTheDrainEndsTheWatch) {
#if defined(WEFT_TEST_SANITIZED)
  // The service's races and lifetimes are tests/grpc/health_test.cc's, sanitized; a Python peer adds none.
  GTEST_SKIP() << "release only: a Python peer, and the service is tested sanitized in weft_grpc_tests";
#endif
  if (std::string(WEFT_GRPC_BENCH_SERVER_BIN).empty()) GTEST_SKIP() << "weft-grpc-bench-server not built";
  const std::string python = grpcio_python();
  if (python.empty()) GTEST_SKIP() << "python3-grpcio is not installed";
  int status = -1;
  run("command -v protoc && command -v grpc_python_plugin", status);
  if (status != 0) GTEST_SKIP() << "protoc or grpc_python_plugin is not installed (protobuf-compiler-grpc)";

  const char* tmp = std::getenv("TMPDIR");
  std::string stubs = std::string(tmp != nullptr ? tmp : "/tmp") + "/weft-health-stubs-XXXXXX";
  ASSERT_NE(::mkdtemp(stubs.data()), nullptr);
  const std::string made = run(
      "protoc -I " WEFT_GRPC_HEALTH_DIR " --python_out=" + stubs + " --grpc_python_out=" + stubs +
          " --plugin=protoc-gen-grpc_python=$(command -v grpc_python_plugin) " + WEFT_GRPC_HEALTH_DIR "/health.proto",
      status);
  ASSERT_EQ(status, 0) << made;

  // A Watch that held the drain would show as a forced close at the 60 s deadline.
  HelloProcess server(WEFT_GRPC_BENCH_SERVER_BIN, {"--transport", GetParam(), "--loops", "1", "--drain-timeout", "60"});
  ASSERT_TRUE(server.is_running()) << server.error();
  const std::string out = run("timeout 120 " + python + " " WEFT_GRPC_HEALTH_DIR "/health_client.py " +
                                  std::to_string(server.port()) + " " + std::to_string(server.pid()) + " " + stubs,
                              status);
  run("rm -rf " + stubs, status);
  EXPECT_EQ(out,
            "check '': SERVING\n"
            "check no.Such: NOT_FOUND\n"
            "watch: SERVING\n"
            "watch: NOT_SERVING\n"
            "watch ended: OK\n");
  const int exit = server.stop();
  EXPECT_TRUE(WIFEXITED(exit) && WEXITSTATUS(exit) == 0) << "wait status " << exit << "\n" << server.output();
  // The client may have closed its connection (its Watch ended) before the drain reached it: the
  // drain then found none open. Either way nothing waited for the deadline.
  EXPECT_THAT(server.output(), ::testing::ContainsRegex("drained: (0 connection\\(s\\) open, 0|1 connection\\(s\\) "
                                                        "open, 1) ended gracefully, 0 closed at the"));
}

INSTANTIATE_TEST_SUITE_P(On, GrpcHealthTest, ::testing::Values("epoll", "io_uring", "blocking"),
                         [](const ::testing::TestParamInfo<const char*>& info) { return std::string(info.param); });

}  // namespace
}  // namespace weft::test
