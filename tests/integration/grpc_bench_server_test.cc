// weft-grpc-bench-server (examples/grpc) as `weft-bench run grpc` runs it, on every transport, with
// its handlers on the loop (--direct true) and on an executor (--direct false, also without executor
// thread caches): grpc++'s reference client (tests/integration/grpc_peer, built once by
// support/grpc_peer.h; the test is skipped, saying why, without grpc++) drives the three methods
// of bench.proto's BenchmarkService -- StreamingFromServer until it cancels, UnaryCall, StreamingCall
// ping-pong -- with 10 calls on one connection, empty and 1000-byte messages, 300 in all each. Every call must
// succeed, and the server must keep serving after each client went away and drain and stop cleanly on
// SIGTERM. With --max-connection-age the server ends every connection after a few milliseconds (two
// GOAWAYs, the calls in flight answered): grpc++ moves its calls to new connections and none fails.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "support/admin_scrape.h"
#include "support/grpc_peer.h"
#include "support/hello_process.h"
#include "support/sanitizers.h"
#include "support/shell.h"

#ifndef WEFT_GRPC_BENCH_SERVER_BIN
#define WEFT_GRPC_BENCH_SERVER_BIN ""  // examples not built: the suite is skipped
#endif

using ::testing::HasSubstr;

namespace weft::test {
namespace {

std::string run(const std::string& command, int& status) { return run_shell(command + " 2>&1", status); }

struct Config {
  const char* transport;
  const char* direct;
  bool executor_thread_cache = true;
  const char* api = "coroutine";
};

std::string config_name(const ::testing::TestParamInfo<Config>& info) {
  return std::string(info.param.transport) + "_direct_" + info.param.direct +
         (info.param.executor_thread_cache ? "" : "_no_executor_thread_cache") + "_" + info.param.api;
}

class GrpcBenchServerTest : public ::testing::TestWithParam<Config> {
 protected:
  void SetUp() override { start(GetParam(), {}); }

  void start(const Config& config, std::vector<std::string> extra) {
    if (std::string(WEFT_GRPC_BENCH_SERVER_BIN).empty()) GTEST_SKIP() << "weft-grpc-bench-server not built";
    const GrpcPeer& peer = grpc_peer();
    if (peer.skip) GTEST_SKIP() << peer.error;
    ASSERT_TRUE(peer.error.empty()) << peer.error;
    client_ = peer.client;
    std::vector<std::string> args{"--transport",
                                  config.transport,
                                  "--direct",
                                  config.direct,
                                  "--loops",
                                  "1",
                                  "--executor-threads",
                                  "2",
                                  "--executor-thread-cache",
                                  config.executor_thread_cache ? "true" : "false",
                                  "--api",
                                  config.api};
    args.insert(args.end(), extra.begin(), extra.end());
    server_.emplace(WEFT_GRPC_BENCH_SERVER_BIN, args);
    ASSERT_TRUE(server_->is_running()) << server_->error();
  }

  // Runs the client: `mode` with 10 calls (threads) on one connection, `size`-byte messages, until
  // kMessages messages or calls have completed (the same work however loaded the machine is).
  void expect_calls(const std::string& mode, int size) {
#if !defined(WEFT_TEST_SANITIZED)
    constexpr long kMessages = 300;
#else
    constexpr long kMessages = 100;  // a sanitizer looks for races and lifetimes, not rates
#endif
    int status = -1;
    const std::string out =
        run("timeout 120 " + client_ + " 127.0.0.1:" + std::to_string(server_->port()) + " " + mode +
                " 10 messages:" + std::to_string(kMessages) + " " + std::to_string(size) + " 1",
            status);
    EXPECT_EQ(status, 0) << out;
    EXPECT_THAT(out, HasSubstr("failures=0"));
    const auto at = out.find("messages=");
    ASSERT_NE(at, std::string::npos) << out;
    EXPECT_GE(std::atol(out.c_str() + at + 9), kMessages) << out;
  }

  void TearDown() override {
    if (!server_ || !server_->is_running()) return;
    const int status = server_->stop();
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "wait status " << status << "\n" << server_->output();
    // Every client has gone: no connection of theirs may be left for the deadline to close.
    EXPECT_THAT(server_->output(), HasSubstr(" 0 closed at the"));
  }

  std::string client_;
  std::optional<HelloProcess> server_;
};

// The three methods one after another on one server: each client cancels or ends its calls, and the
// server serves the next.
TEST_P(GrpcBenchServerTest, ServesTheThreeMethodsToTheGrpcClient) {
  expect_calls("stream", 0);
  expect_calls("unary", 0);
  expect_calls("pingpong", 0);
}

TEST_P(GrpcBenchServerTest, ServesMessagesOfAThousandBytes) {
  expect_calls("stream", 1000);
  expect_calls("unary", 1000);
  expect_calls("pingpong", 1000);
}

// Connections a few milliseconds old are told to go while calls run on them: grpc++ sees the two
// GOAWAYs, finishes the calls in flight there and opens new connections for the next. The admin
// listener (--admin-port) counts the connections and answers ready while the server serves.
class GrpcBenchServerAgeTest : public GrpcBenchServerTest {
 protected:
  void SetUp() override { start(GetParam(), {"--max-connection-age", "20", "--admin-port", "0"}); }
};

TEST_P(GrpcBenchServerAgeTest, ClientsMoveToNewConnectionsWithoutAFailedCall) {
  expect_calls("unary", 100);
  expect_calls("pingpong", 100);
  const std::uint16_t admin = admin_port(*server_);
  ASSERT_NE(admin, 0) << server_->output();
  EXPECT_EQ(admin_get(admin, "/readyz").status, 200);
  const std::string text = admin_get(admin, "/metrics").body;
  const std::string transport = GetParam().transport;
  EXPECT_GE(metric_sample(text, "weft_server_connections_opened_total{transport=\"" + transport + "\"}"),
            transport == "epoll" ? 3 : 2)  // (and on epoll, the scrape's own)
      << text;
}

INSTANTIATE_TEST_SUITE_P(On, GrpcBenchServerAgeTest,
                         ::testing::Values(Config{"epoll", "true"}, Config{"io_uring", "false"}), config_name);

std::vector<Config> bench_server_configs() {
  std::vector<Config> configs{Config{"epoll", "true"},
                              Config{"epoll", "false"},
                              Config{"epoll", "false", false},
                              Config{"io_uring", "true"},
                              Config{"io_uring", "false"},
                              Config{"blocking", "true"},
                              Config{"blocking", "false"},
                              Config{"epoll", "true", true, "reactor"},
                              Config{"io_uring", "true", true, "reactor"},
                              Config{"blocking", "true", true, "reactor"}};
#ifdef WEFT_HAVE_TEST_PROTOS  // built with protoc-gen-weft: the server has --api generated
  for (const char* transport : {"epoll", "io_uring", "blocking"})
    configs.push_back(Config{transport, "true", true, "generated"});
#endif
  return configs;
}

INSTANTIATE_TEST_SUITE_P(On, GrpcBenchServerTest, ::testing::ValuesIn(bench_server_configs()), config_name);

}  // namespace
}  // namespace weft::test
