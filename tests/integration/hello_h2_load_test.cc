// weft-load h2 against weft-hello on every transport, over h2c (prior knowledge) and over h2 chosen by
// ALPN: a request count is sent exactly, every request answered, no error -- with several threads and
// connections sharing the count. And the error path: a server that does not speak HTTP/2 (weft-hello
// --http1-only) makes weft-load exit non-zero with the reason, over cleartext and over TLS.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>
#include <sys/wait.h>

#include <fstream>
#include <sstream>
#include <string>

#include "support/hello_process.h"
#include "support/shell.h"
#include "support/tls_certs.h"

#ifndef WEFT_HELLO_BIN
#define WEFT_HELLO_BIN ""  // examples not built: the suite is skipped
#endif
#ifndef WEFT_LOAD_BIN
#define WEFT_LOAD_BIN ""  // tools not built: the suite is skipped
#endif

using ::testing::HasSubstr;

namespace weft::test {
namespace {

struct LoadConfig {
  const char* transport;
  bool tls;
};

std::string load_config_name(const ::testing::TestParamInfo<LoadConfig>& info) {
  return std::string(info.param.transport) + (info.param.tls ? "_h2" : "_h2c");
}

class HelloH2LoadTest : public ::testing::TestWithParam<LoadConfig> {
 protected:
  void SetUp() override {
    if (std::string(WEFT_HELLO_BIN).empty() || std::string(WEFT_LOAD_BIN).empty()) {
      GTEST_SKIP() << "weft-hello or weft-load is not built";
    }
  }

  // weft-hello on this test's transport, HTTPS when the test is for h2 over TLS.
  HelloProcess start_hello(std::vector<std::string> extra = {}) {
    if (GetParam().tls) {
      const TestPki& pki = test_pki();
      extra.insert(extra.end(), {"--tls-cert", write_temp_file(pki.localhost.cert_pem + pki.ca.cert_pem, ".pem"),
                                 "--tls-key", write_temp_file(pki.localhost.key_pem, ".pem")});
    }
    return HelloProcess(WEFT_HELLO_BIN, GetParam().transport, "loop", extra);
  }

  // `weft-load h2 URL args`: its exit status and output.
  std::string load(const HelloProcess& server, const std::string& args, int& status,
                   const std::string& path = "/plaintext") {
    std::string command = std::string(WEFT_LOAD_BIN) + " h2 ";
    if (GetParam().tls) {
      command += "'https://localhost:" + std::to_string(server.port()) + path + "' --cacert " +
                 write_temp_file(test_pki().ca.cert_pem, ".pem");
    } else {
      command += "'http://127.0.0.1:" + std::to_string(server.port()) + path + "'";
    }
    return run_shell(command + " " + args + " 2>&1", status);
  }
};

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST_P(HelloH2LoadTest, ARequestCountIsSentExactlyAndEveryRequestIsAnswered) {
  HelloProcess server = start_hello();
  ASSERT_TRUE(server.is_running()) << server.error();
  const std::string json = ::testing::TempDir() + "weft_load_h2." + std::to_string(::getpid()) + ".json";
  // 2 threads, 5 connections, 8 streams each: the count is shared unevenly, and each connection
  // keeps its streams full until the count runs out.
  int status = -1;
  const std::string out = load(server, "-t 2 -c 5 -m 8 -n 2001 --json " + json, status);
  ASSERT_EQ(status, 0) << out;
  EXPECT_THAT(out, HasSubstr("2001 requests sent, 2001 responses")) << out;
  const std::string j = read_file(json);
  for (const char* key : {"\"tool\":\"weft-load\"", "\"mode\":\"h2\"", "\"connections\":5", "\"threads\":2",
                          "\"streams\":8", "\"requests\":2001,", "\"responses\":2001,", "\"rps\":", "\"latency_us\":{",
                          "\"errors\":{\"connect\":0,\"read\":0,\"write\":0,\"timeout\":0,\"status\":0,\"parse\":0}"}) {
    EXPECT_THAT(j, HasSubstr(key)) << j;
  }
  const int exit_status = server.stop();
  EXPECT_TRUE(WIFEXITED(exit_status) && WEXITSTATUS(exit_status) == 0) << server.output();
}

TEST_P(HelloH2LoadTest, ADurationRunKeepsEveryConnectionsStreamsFull) {
  HelloProcess server = start_hello();
  ASSERT_TRUE(server.is_running()) << server.error();
  const std::string json = ::testing::TempDir() + "weft_load_h2_duration." + std::to_string(::getpid()) + ".json";
  int status = -1;
  const std::string out = load(server, "-c 3 -m 4 -d 0.5 --json " + json, status);
  ASSERT_EQ(status, 0) << out;
  const std::string j = read_file(json);
  EXPECT_THAT(j, HasSubstr("\"errors\":{\"connect\":0,\"read\":0,\"write\":0,\"timeout\":0,\"status\":0,\"parse\":0}"))
      << j;
  // Only the streams open when the run stopped lack a response.
  const auto number = [&j](const std::string& key) {
    const std::size_t at = j.find("\"" + key + "\":");
    return at == std::string::npos ? 0ull : std::stoull(j.substr(at + key.size() + 3));
  };
  EXPECT_GT(number("responses"), 0u) << j;
  EXPECT_LE(number("requests") - number("responses"), 3u * 4u) << j;
}

// --rate: an open loop over the connections' free streams. Requests cannot leave before their
// intended times, so 400 at 2,000/s take at least the schedule's 0.2 s (a slow machine only makes
// it longer); the report names the target rate.
TEST_P(HelloH2LoadTest, AConstantRateSendsEveryRequestNoFasterThanItsSchedule) {
  HelloProcess server = start_hello();
  ASSERT_TRUE(server.is_running()) << server.error();
  const std::string json = ::testing::TempDir() + "weft_load_h2_rate." + std::to_string(::getpid()) + ".json";
  int status = -1;
  const std::string out = load(server, "-t 2 -c 3 -m 4 --rate 2000 -n 400 --json " + json, status);
  ASSERT_EQ(status, 0) << out;
  EXPECT_THAT(out, HasSubstr("400 requests sent, 400 responses")) << out;
  EXPECT_THAT(out, HasSubstr("constant rate: target 2000 req/s")) << out;
  const std::string j = read_file(json);
  EXPECT_THAT(j, HasSubstr("\"rate\":2000.000,")) << j;
  const std::size_t at = j.find("\"duration_s\":");
  ASSERT_NE(at, std::string::npos) << j;
  EXPECT_GE(std::stod(j.substr(at + 13)), 0.199) << j;
}

// An open loop whose server answers each request after 300 ms, on one stream: most of the schedule
// never leaves, and the report says so instead of printing a rate it did not send.
TEST_P(HelloH2LoadTest, AnOpenLoopThatFallsShortSaysByHowMuch) {
  HelloProcess server = start_hello();
  ASSERT_TRUE(server.is_running()) << server.error();
  int status = -1;
  const std::string out = load(server, "-c 1 -m 1 --rate 1000 -d 0.5 --timeout 5", status, "/downstream?ms=300");
  ASSERT_EQ(status, 0) << out;
  EXPECT_THAT(out, HasSubstr("constant rate: target 1000 req/s, sent ")) << out;
  EXPECT_THAT(out, HasSubstr("WARNING: the target rate was not reached")) << out;
}

TEST_P(HelloH2LoadTest, AServerThatDoesNotSpeakHttp2IsAnErrorWithItsReason) {
  HelloProcess server = start_hello({"--http1-only"});
  ASSERT_TRUE(server.is_running()) << server.error();
  int status = -1;
  const std::string out = load(server, "-c 2 -n 10", status);
  EXPECT_NE(status, 0) << out;
  const std::string target = "127.0.0.1:" + std::to_string(server.port());
  if (GetParam().tls) {
    EXPECT_EQ(out, "weft-load: no HTTP/2 connection to " + target +
                       ": the server refused h2 by ALPN (alert no_application_protocol)\n");
  } else {
    EXPECT_EQ(out, "weft-load: no HTTP/2 connection to " + target +
                       ": the server does not speak HTTP/2 with prior knowledge: it answered "
                       "'HTTP/1.1 505 HTTP Version Not Supported'\n");
  }
}

INSTANTIATE_TEST_SUITE_P(Transports, HelloH2LoadTest,
                         ::testing::Values(LoadConfig{"epoll", false}, LoadConfig{"epoll", true},
                                           LoadConfig{"io_uring", false}, LoadConfig{"io_uring", true},
                                           LoadConfig{"blocking", false}, LoadConfig{"blocking", true}),
                         load_config_name);

}  // namespace
}  // namespace weft::test
