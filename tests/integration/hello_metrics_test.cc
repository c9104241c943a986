// weft-hello's admin listener (--admin-port): /metrics counts exactly the requests served, on every
// transport, in text promtool accepts (Prometheus 0.0.4) or OpenMetrics by Accept; /healthz is
// 200; /readyz turns 503 once a SIGTERM starts the drain, while the drain waits for a request in flight.

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>

#include "support/admin_scrape.h"
#include "support/blocking_client.h"
#include "support/h2_socket.h"
#include "support/hello_process.h"

#ifndef WEFT_HELLO_BIN
#define WEFT_HELLO_BIN ""  // examples not built: the suite is skipped
#endif

namespace weft::test {
namespace {

using namespace std::chrono_literals;

// promtool's verdict on `text`: "" when it accepts it; nullopt without promtool.
std::optional<std::string> promtool_check(const std::string& text) {
  if (std::system("command -v promtool >/dev/null 2>&1") != 0) return std::nullopt;
  char path[] = "/tmp/weft-metrics-XXXXXX";
  const int fd = ::mkstemp(path);
  if (fd < 0) return "mkstemp failed";
  ::close(fd);
  std::ofstream(path) << text;
  const std::string out_path = std::string(path) + ".out";
  const int rc = std::system(("promtool check metrics < " + std::string(path) + " > " + out_path + " 2>&1").c_str());
  std::ifstream in(out_path);
  std::string verdict((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ::unlink(path);
  ::unlink(out_path.c_str());
  return rc == 0 ? "" : "promtool: " + verdict;
}

class HelloMetricsTest : public ::testing::TestWithParam<const char*> {};

TEST_P(HelloMetricsTest, CountsEveryRequestServedAndPromtoolAcceptsTheText) {
  if (std::string(WEFT_HELLO_BIN).empty()) GTEST_SKIP() << "weft-hello is not built (WEFT_BUILD_EXAMPLES=OFF)";
  const std::string transport = GetParam();
  HelloProcess server(WEFT_HELLO_BIN, transport, "loop", {"--admin-port", "0"});
  ASSERT_TRUE(server.is_running()) << server.error();
  const std::uint16_t admin = admin_port(server);
  ASSERT_NE(admin, 0) << server.output();

  // 8 GETs pipelined in one write, 2 sent a byte at a time, a POST answered 404: 11 requests.
  constexpr int kPipelined = 8;
  {
    BlockingClient c(server.port());
    std::string burst;
    for (int i = 0; i < kPipelined; ++i) burst += "GET /plaintext HTTP/1.1\r\nHost: t\r\n\r\n";
    ASSERT_TRUE(c.send_all(burst));
    ASSERT_TRUE(c.recv_until_count("HTTP/1.1 200", kPipelined)) << "the answers stopped";
  }
  for (int i = 0; i < 2; ++i) {
    BlockingClient c(server.port());
    for (const char ch : std::string("GET /plaintext HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")) {
      ASSERT_TRUE(c.send_all(std::string(1, ch)));
    }
    std::string all;
    ASSERT_EQ(c.recv_until_end(&all, 20000ms), StreamEnd::eof);
    ASSERT_TRUE(all.starts_with("HTTP/1.1 200")) << all;
  }
  {
    BlockingClient c(server.port());
    ASSERT_TRUE(c.send_all("POST /nowhere HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"));
    std::string all;
    ASSERT_EQ(c.recv_until_end(&all, 20000ms), StreamEnd::eof);
    ASSERT_TRUE(all.starts_with("HTTP/1.1 404")) << all;
  }

  // The scrape itself is counted once its answer is encoded: this one sees the 11 requests only.
  const AdminReply scrape = admin_get(admin, "/metrics");
  ASSERT_EQ(scrape.status, 200) << scrape.head;
  EXPECT_NE(scrape.head.find("Content-Type: text/plain; version=0.0.4; charset=utf-8"), std::string::npos);
  const std::string& text = scrape.body;
  EXPECT_EQ(metric_sample(text, R"(weft_http_server_requests_total{protocol="http1",method="GET",status="2xx"})"),
            kPipelined + 2)
      << text;
  EXPECT_EQ(metric_sample(text, R"(weft_http_server_requests_total{protocol="http1",method="POST",status="4xx"})"), 1)
      << text;
  EXPECT_EQ(metric_sample(
                text, R"(weft_http_server_request_duration_seconds_count{protocol="http1",method="GET",status="2xx"})"),
            kPipelined + 2);
  // Four connections served on the transport (the admin listener's own runs on epoll).
  EXPECT_EQ(metric_sample(text, "weft_server_connections_opened_total{transport=\"" + transport + "\"}"),
            transport == "epoll" ? 5 : 4)
      << text;
  if (transport != "blocking") {
    EXPECT_GT(metric_sample(text, R"(weft_event_loop_turns_total{loop="hello-0"})"), 0) << text;
    // The loop's queue, timers and stalls, and the task delay histogram, in the text promtool checks.
    EXPECT_GE(metric_sample(text, R"(weft_event_loop_stalls_total{loop="hello-0"})"), 0) << text;
    EXPECT_GE(metric_sample(text, R"(weft_event_loop_tasks_queued{loop="hello-0"})"), 0) << text;
    EXPECT_GE(metric_sample(text, R"(weft_event_loop_timers_pending{loop="hello-0"})"), 0) << text;
    EXPECT_GE(metric_sample(text, R"(weft_event_loop_task_delay_seconds_bucket{loop="hello-0",le="+Inf"})"), 0) << text;
  }
  EXPECT_GE(metric_sample(text, "weft_allocator_arenas"), 1) << text;
  EXPECT_GT(metric_sample(text, "weft_allocator_mapped_bytes"), 0) << text;
  // (The blocking transport's connections use the heap allocator, not the pooled one: there only the
  // admin listener's loop allocates from it.)
  if (transport != "blocking") {
    EXPECT_GT(metric_sample(text, "weft_allocator_cache_hits_total"), 0) << text;
  }
  EXPECT_GT(
      metric_sample(text, "weft_allocator_cache_hits_total") + metric_sample(text, "weft_allocator_cache_misses_total"),
      0)
      << text;
  const auto verdict = promtool_check(text);
  if (!verdict) {
    std::fprintf(stderr, "promtool is not installed (Debian: prometheus): the text was not checked by it\n");
  } else {
    EXPECT_EQ(*verdict, "") << text;
  }

  const AdminReply open_metrics =
      admin_get(admin, "/metrics", "application/openmetrics-text;version=1.0.0,text/plain;q=0.5");
  ASSERT_EQ(open_metrics.status, 200);
  EXPECT_NE(open_metrics.head.find("Content-Type: application/openmetrics-text; version=1.0.0; charset=utf-8"),
            std::string::npos)
      << open_metrics.head;
  EXPECT_TRUE(open_metrics.body.ends_with("\n# EOF\n"));
  EXPECT_NE(open_metrics.body.find("\n# TYPE weft_http_server_requests counter\n"), std::string::npos);
  // The first scrape is counted now.
  EXPECT_EQ(metric_sample(open_metrics.body,
                          R"(weft_http_server_requests_total{protocol="http1",method="GET",status="2xx"})"),
            kPipelined + 3);
}

INSTANTIATE_TEST_SUITE_P(Transports, HelloMetricsTest, ::testing::Values("epoll", "io_uring", "blocking"),
                         [](const auto& info) { return std::string(info.param); });

TEST(HelloAdminTest, ReadyzTurns503WhenTheDrainStarts) {
  if (std::string(WEFT_HELLO_BIN).empty()) GTEST_SKIP() << "weft-hello is not built (WEFT_BUILD_EXAMPLES=OFF)";
  HelloProcess server(WEFT_HELLO_BIN, "epoll", "coroutine-async", {"--admin-port", "0", "--drain-timeout", "60"});
  ASSERT_TRUE(server.is_running()) << server.error();
  const std::uint16_t admin = admin_port(server);
  ASSERT_NE(admin, 0) << server.output();
  EXPECT_EQ(admin_get(admin, "/healthz").status, 200);
  EXPECT_EQ(admin_get(admin, "/readyz").status, 200);

  // An HTTP/2 stream in flight holds the drain open: the fast stream sent after it is answered
  // first, so the slow one has been read and is waiting.
  BlockingClient socket(server.port());
  ASSERT_TRUE(socket.is_open());
  H2Client client;
  const std::int32_t slow = client.request("GET", "/downstream?ms=10000");
  const std::int32_t fast = client.request("GET", "/plaintext");
  ASSERT_TRUE(exchange_until_stream_closed(socket, client, fast)) << "error " << client.error();
  EXPECT_EQ(metric_sample(admin_get(admin, "/metrics").body,
                          R"(weft_http_server_requests_total{protocol="http2",method="GET",status="2xx"})"),
            1);

  server.terminate();
  // The drain sets readiness before it closes the listeners; the stream keeps the process alive.
  int status = 0;
  const auto give_up = std::chrono::steady_clock::now() + 20s;  // a bound, not a wait: polled until it turns
  while ((status = admin_get(admin, "/readyz").status) == 200 && std::chrono::steady_clock::now() < give_up) {
  }
  EXPECT_EQ(status, 503) << server.output();
  EXPECT_EQ(admin_get(admin, "/healthz").status, 200) << "alive while draining";
  EXPECT_FALSE(client.response(slow).closed);
  socket.close();  // the drain's last connection: the process exits
  const int exit_status = server.stop();
  EXPECT_TRUE(WIFEXITED(exit_status) && WEXITSTATUS(exit_status) == 0) << exit_status << "\n" << server.output();
}

}  // namespace
}  // namespace weft::test
