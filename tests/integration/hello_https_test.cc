// weft-hello --tls-cert/--tls-key: every route over HTTPS, in every mode and on every transport,
// with curl as the client (one connection, keep-alive, the test CA trusted).

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <optional>
#include <string>

#include "support/hello_process.h"
#include "support/tls_certs.h"

#ifndef WEFT_HELLO_BIN
#define WEFT_HELLO_BIN ""  // examples not built: the suite is skipped
#endif

namespace weft::test {
namespace {

struct HttpsConfig {
  const char* transport;
  const char* mode;
};

std::string https_config_name(const ::testing::TestParamInfo<HttpsConfig>& info) {
  std::string name = std::string(info.param.transport) + "_" + info.param.mode;
  for (char& c : name) {
    if (c == '-') c = '_';
  }
  return name;
}

std::string run(const std::string& command, int& status) {
  std::string out;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return out;
  std::array<char, 4096> buf;
  while (std::size_t n = std::fread(buf.data(), 1, buf.size(), pipe)) out.append(buf.data(), n);
  status = ::pclose(pipe);
  return out;
}

class HelloHttpsTest : public ::testing::TestWithParam<HttpsConfig> {};

TEST_P(HelloHttpsTest, EveryRouteOverHttps) {
  if (std::string(WEFT_HELLO_BIN).empty()) GTEST_SKIP() << "weft-hello is not built (WEFT_BUILD_EXAMPLES=OFF)";
  const TestPki& pki = test_pki();
  const std::string cert = write_temp_file(pki.localhost.cert_pem + pki.ca.cert_pem, ".pem");
  const std::string key = write_temp_file(pki.localhost.key_pem, ".pem");
  const std::string ca = write_temp_file(pki.ca.cert_pem, ".pem");
  HelloProcess server(WEFT_HELLO_BIN, GetParam().transport, GetParam().mode, {"--tls-cert", cert, "--tls-key", key});
  ASSERT_TRUE(server.is_running()) << server.error();
  EXPECT_THAT(server.output(), ::testing::HasSubstr(", HTTPS (HTTP/1.1)"));
  const std::string base = "https://localhost:" + std::to_string(server.port());
  int status = -1;
  const std::string out =
      run("curl -s --max-time 20 --cacert " + ca + " --resolve localhost:" + std::to_string(server.port()) +
              ":127.0.0.1 -w '|%{http_code}\\n' " + base + "/plaintext " + base + "/json " + base + "/plaintext-async " +
              base + "/json-async 2>&1",
          status);
  EXPECT_EQ(status, 0) << out;
  EXPECT_EQ(out,
            "Hello, World!|200\n"
            "{\"message\":\"Hello, World!\"}|200\n"
            "Hello, World!|200\n"
            "{\"message\":\"Hello, World!\"}|200\n");
  const int exit_status = server.stop();
  EXPECT_TRUE(WIFEXITED(exit_status) && WEXITSTATUS(exit_status) == 0)
      << "weft-hello did not exit cleanly (status " << exit_status << "):\n" << server.output();
}

INSTANTIATE_TEST_SUITE_P(Modes, HelloHttpsTest,
                         ::testing::Values(HttpsConfig{"epoll", "loop"}, HttpsConfig{"epoll", "loop-async"},
                                           HttpsConfig{"epoll", "offload"}, HttpsConfig{"epoll", "coroutine"},
                                           HttpsConfig{"epoll", "coroutine-async"}, HttpsConfig{"io_uring", "loop"},
                                           HttpsConfig{"io_uring", "loop-async"}, HttpsConfig{"io_uring", "offload"},
                                           HttpsConfig{"io_uring", "coroutine"},
                                           HttpsConfig{"io_uring", "coroutine-async"}, HttpsConfig{"blocking", "loop"},
                                           HttpsConfig{"blocking", "loop-async"}, HttpsConfig{"blocking", "offload"},
                                           HttpsConfig{"blocking", "coroutine"},
                                           HttpsConfig{"blocking", "coroutine-async"}),
                         https_config_name);

}  // namespace
}  // namespace weft::test
