// weft-hello --tls-cert/--tls-key: every route over HTTPS, in every mode and on every transport,
// with curl as the client (one connection, keep-alive, the test CA trusted), over HTTP/1.1 and over
// h2, which ALPN chooses; and `Upgrade: h2c` is not honoured over TLS.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <optional>
#include <string>

#include "support/shell.h"
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

std::string run(const std::string& command, int& status) { return test::run_shell(command, status); }

class HelloHttpsTest : public ::testing::TestWithParam<HttpsConfig> {};

TEST_P(HelloHttpsTest, EveryRouteOverHttps) {
  if (std::string(WEFT_HELLO_BIN).empty()) GTEST_SKIP() << "weft-hello is not built (WEFT_BUILD_EXAMPLES=OFF)";
  const TestPki& pki = test_pki();
  const std::string cert = write_temp_file(pki.localhost.cert_pem + pki.ca.cert_pem, ".pem");
  const std::string key = write_temp_file(pki.localhost.key_pem, ".pem");
  const std::string ca = write_temp_file(pki.ca.cert_pem, ".pem");
  HelloProcess server(WEFT_HELLO_BIN, GetParam().transport, GetParam().mode, {"--tls-cert", cert, "--tls-key", key});
  ASSERT_TRUE(server.is_running()) << server.error();
  EXPECT_THAT(server.output(), ::testing::HasSubstr(", HTTPS (h2 and HTTP/1.1 by ALPN)"));
  const std::string port = std::to_string(server.port());
  const std::string base = "https://localhost:" + port;
  for (const char* version : {"--http1.1", "--http2"}) {
    SCOPED_TRACE(version);
    int status = -1;
    const std::string out = run(std::string("curl -s ") + version + " --max-time 20 --cacert " + ca +
                                    " --resolve localhost:" + port + ":127.0.0.1 -w '|%{http_code}|%{http_version}\\n' " +
                                    base + "/plaintext " + base + "/json " + base + "/plaintext-async " + base +
                                    "/json-async 2>&1",
                                status);
    EXPECT_EQ(status, 0) << out;
    const std::string v = std::string(version) == "--http2" ? "2" : "1.1";
    EXPECT_EQ(out, "Hello, World!|200|" + v + "\n{\"message\":\"Hello, World!\"}|200|" + v + "\nHello, World!|200|" + v +
                       "\n{\"message\":\"Hello, World!\"}|200|" + v + "\n");
  }
  // Over TLS the protocol is ALPN's: a request for Upgrade: h2c is answered as HTTP/1.1.
  int status = -1;
  const std::string upgrade =
      run("printf 'GET /plaintext HTTP/1.1\\r\\nHost: localhost\\r\\nConnection: Upgrade, HTTP2-Settings, close\\r\\n"
          "Upgrade: h2c\\r\\nHTTP2-Settings: AAMAAABkAAQAAP__\\r\\n\\r\\n' | timeout 20 openssl s_client -quiet -connect "
          "127.0.0.1:" + port + " -servername localhost -alpn http/1.1 -CAfile " + ca + " 2>/dev/null",
          status);
  EXPECT_THAT(upgrade, ::testing::StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_THAT(upgrade, ::testing::EndsWith("Hello, World!"));
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
