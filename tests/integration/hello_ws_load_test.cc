// weft-load ws against weft-hello's /ws, in the callback (loop) and coroutine forms on every
// transport: text and binary messages of a count all echoed and checked, permessage-deflate agreed
// on every connection when offered and used both ways (the echoes come back compressed), and never
// agreed with --no-ws-deflate (the same load then goes uncompressed).

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <string>

#include "support/hello_process.h"
#include "support/shell.h"

#ifndef WEFT_HELLO_BIN
#define WEFT_HELLO_BIN ""  // examples not built: the suite is skipped
#endif
#ifndef WEFT_LOAD_BIN
#define WEFT_LOAD_BIN ""  // tools not built: the suite is skipped
#endif

using ::testing::HasSubstr;

namespace weft::test {
namespace {

struct WsConfig {
  const char* transport;
  const char* mode;
};

std::string ws_config_name(const ::testing::TestParamInfo<WsConfig>& info) {
  return std::string(info.param.transport) + "_" + info.param.mode;
}

class HelloWsLoadTest : public ::testing::TestWithParam<WsConfig> {
 protected:
  void SetUp() override {
    if (std::string(WEFT_HELLO_BIN).empty() || std::string(WEFT_LOAD_BIN).empty()) {
      GTEST_SKIP() << "weft-hello or weft-load is not built";
    }
  }
  HelloProcess start_hello(std::vector<std::string> extra = {}) {
    return HelloProcess(WEFT_HELLO_BIN, GetParam().transport, GetParam().mode, std::move(extra));
  }
  std::string load(const HelloProcess& server, const std::string& args, int& status) {
    return run_shell(
        std::string(WEFT_LOAD_BIN) + " ws 'ws://127.0.0.1:" + std::to_string(server.port()) + "/ws' " + args + " 2>&1",
        status);
  }
};

TEST_P(HelloWsLoadTest, TextAndBinaryMessagesOfACountAreAllEchoed) {
  HelloProcess server = start_hello();
  ASSERT_TRUE(server.is_running()) << server.error();
  for (const char* kind : {"--text", "--binary"}) {
    int status = -1;
    const std::string out = load(server, std::string("-c 3 -m 2 -s 200 -n 300 ") + kind, status);
    ASSERT_EQ(status, 0) << out;
    EXPECT_THAT(out, HasSubstr("300 messages sent, 300 echoed (0 compressed)")) << out;
    EXPECT_THAT(out, ::testing::Not(HasSubstr("Errors:"))) << out;
  }
}

TEST_P(HelloWsLoadTest, DeflateIsAgreedWhenOfferedAndNeverWithNoWsDeflate) {
  HelloProcess server = start_hello();
  ASSERT_TRUE(server.is_running()) << server.error();
  int status = -1;
  std::string out = load(server, "-c 2 -m 2 -s 2000 --text -n 200 --deflate", status);
  ASSERT_EQ(status, 0) << out;
  EXPECT_THAT(out, HasSubstr("permessage-deflate on 2 connections")) << out;
  EXPECT_THAT(out, HasSubstr("200 messages sent, 200 echoed (200 compressed)")) << out;

  HelloProcess plain = start_hello({"--no-ws-deflate"});
  ASSERT_TRUE(plain.is_running()) << plain.error();
  out = load(plain, "-c 2 -m 2 -s 2000 --text -n 200 --deflate", status);
  ASSERT_EQ(status, 0) << out;
  EXPECT_THAT(out, HasSubstr("permessage-deflate on 0 connections")) << out;
  EXPECT_THAT(out, HasSubstr("200 messages sent, 200 echoed (0 compressed)")) << out;
}

INSTANTIATE_TEST_SUITE_P(Modes, HelloWsLoadTest,
                         ::testing::Values(WsConfig{"epoll", "loop"}, WsConfig{"epoll", "coroutine"},
                                           WsConfig{"io_uring", "loop"}, WsConfig{"io_uring", "coroutine"},
                                           WsConfig{"blocking", "loop"}, WsConfig{"blocking", "coroutine"}),
                         ws_config_name);

}  // namespace
}  // namespace weft::test
