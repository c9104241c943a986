#include "http_load.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "servers.h"
#include "support/blocking_client.h"
#include "support/tls_certs.h"
#include "weft/version.h"

namespace weft::load {
namespace {

// Runs a shell command; returns its exit status and what it wrote on stdout and stderr.
std::pair<int, std::string> run_command(const std::string& command) {
  std::FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return {-1, "popen failed"};
  std::string out;
  std::array<char, 4096> buf;
  while (std::size_t n = std::fread(buf.data(), 1, buf.size(), pipe)) out.append(buf.data(), n);
  const int status = ::pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

// -n: exactly that many requests, shared by the loops and connections (a last batch shorter than
// the pipeline), in the closed loop and the open one; the run then ends by itself.
TEST(HttpLoadTest, ARequestCountIsSentExactly) {
  test::TestServers servers;
  const auto port = servers.start_http();
  HttpOptions o;
  o.url = "http://127.0.0.1:" + std::to_string(port) + "/plaintext";
  o.connections = 3;
  o.threads = 2;
  o.pipeline = 4;
  o.duration_s = 0;  // no time limit: the count ends the run
  o.requests = 1001;
  HttpResult closed = run_http(o);
  EXPECT_EQ(closed.requests, 1001u);
  EXPECT_EQ(closed.responses, 1001u);
  EXPECT_EQ(closed.errors.total(), 0u);

  // The open loop cannot send before the schedule. Each of the 2 loops keeps its own at 1,000/s:
  // one of them sends at least 150 of the 300, its last 149 ms after its first.
  o.rate = 2000;
  o.requests = 300;
  HttpResult open = run_http(o);
  EXPECT_EQ(open.requests, 300u);
  EXPECT_EQ(open.responses, 300u);
  EXPECT_EQ(open.latency.count(), 300u);
  EXPECT_GE(open.duration_s, (300.0 / 2 - 1) / (2000.0 / 2));
}

TEST(HttpLoadTest, ClosedLoopKeepsThePipelineFullAndCountsEveryResponse) {
  test::TestServers servers;
  const auto port = servers.start_http();
  HttpOptions o;
  o.url = "http://127.0.0.1:" + std::to_string(port) + "/plaintext";
  o.connections = 4;
  o.pipeline = 8;
  o.duration_s = 1;
  HttpResult r = run_http(o);
  EXPECT_GT(r.responses, 1000u);
  EXPECT_EQ(r.errors.total(), 0u);
  EXPECT_LE(r.requests - r.responses, 4u * 8u);
  EXPECT_EQ(r.latency.count(), r.responses);
  EXPECT_GT(r.bytes_read, r.responses * 13);
  // Against the server's own count: never a response it did not send, at most the batches in flight
  // at the stop missing.
  const std::uint64_t served = servers.served();
  EXPECT_LE(r.responses, served);
  EXPECT_LE(served - r.responses, 4u * 8u);
}

// The warm-up runs first and is not counted: the counted time starts only after it, so the whole run
// takes at least both (without a warm-up the counted time would start with the load).
TEST(HttpLoadTest, AWarmUpRunsBeforeTheCountedTime) {
  test::TestServers servers;
  const auto port = servers.start_http();
  HttpOptions o;
  o.url = "http://127.0.0.1:" + std::to_string(port) + "/plaintext";
  o.connections = 2;
  o.warmup_s = 0.4;
  o.duration_s = 0.2;
  const auto start = Clock::now();
  HttpResult r = run_http(o);
  const double wall = std::chrono::duration<double>(Clock::now() - start).count();
  EXPECT_GE(wall, o.warmup_s + r.duration_s);
  EXPECT_GE(r.duration_s, o.duration_s);
  EXPECT_GT(r.responses, 0u);
  EXPECT_EQ(r.errors.total(), 0u);
  EXPECT_EQ(r.latency.count(), r.responses);
  EXPECT_LE(r.responses, servers.served());
  // Responses to requests sent before the counts were zeroed may arrive after: one per connection.
  EXPECT_LE(r.responses, r.requests + 2);
}

TEST(HttpLoadTest, NonSuccessStatusesAreCountedAsStatusErrors) {
  test::TestServers servers;
  const auto port = servers.start_http();
  HttpOptions o;
  o.url = "http://127.0.0.1:" + std::to_string(port) + "/missing";
  o.connections = 2;
  o.duration_s = 0.5;
  HttpResult r = run_http(o);
  EXPECT_GT(r.responses, 0u);
  EXPECT_EQ(r.errors.status, r.responses);
}

TEST(HttpLoadTest, UnreachableTargetIsOneLineReason) {
  const auto port = weft::test::unused_loopback_port();
  HttpOptions o;
  o.url = "http://127.0.0.1:" + std::to_string(port) + "/";
  o.duration_s = 1;
  try {
    run_http(o);
    FAIL() << "expected LoadError";
  } catch (const LoadError& e) {
    EXPECT_EQ(std::string(e.what()), "cannot connect to 127.0.0.1:" + std::to_string(port) + ": Connection refused");
  }
}

TEST(HttpLoadTest, BadUrlsAndHeadersAreRejected) {
  EXPECT_THROW(parse_http_url("ftp://127.0.0.1/"), LoadError);
  EXPECT_THROW(parse_http_url("127.0.0.1:80/"), LoadError);
  EXPECT_THROW(parse_http_url("http://no-dns.example:80/"), LoadError);
  EXPECT_THROW(encode_request(parse_http_url("http://127.0.0.1:1/"), {"NoColon"}), LoadError);
  const HttpTarget t = parse_http_url("http://127.0.0.1:8080/p?q=1");
  EXPECT_EQ(t.path, "/p?q=1");
  EXPECT_EQ(encode_request(t, {"X-A: b"}), "GET /p?q=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nX-A: b\r\n\r\n");
  EXPECT_EQ(parse_http_url("http://127.0.0.1").address.port(), 80);
  EXPECT_FALSE(t.tls);
  EXPECT_EQ(t.host, "127.0.0.1");
  const HttpTarget secure = parse_http_url("https://localhost/json");
  EXPECT_TRUE(secure.tls);
  EXPECT_EQ(secure.address.port(), 443);
  EXPECT_EQ(secure.host, "localhost");
  EXPECT_EQ(secure.host_header, "localhost");
  const HttpTarget v6 = parse_http_url("https://[::1]:8443/");
  EXPECT_EQ(v6.host, "::1");
  EXPECT_EQ(v6.address.port(), 8443);
  EXPECT_EQ(parse_http_url("http://[::1]/").address.port(), 80);
}

TEST(HttpLoadTest, HttpsWithATrustedCertificateCountsEveryResponse) {
  test::TestServers servers;
  const auto port = servers.start_https(weft::test::test_server_context(weft::test::test_pki().localhost));
  HttpOptions o;
  o.url = "https://localhost:" + std::to_string(port) + "/plaintext";
  o.ca_file = weft::test::write_temp_file(weft::test::test_pki().ca.cert_pem, ".pem");
  o.connections = 4;
  o.pipeline = 8;
  o.duration_s = 1;
  HttpResult r = run_http(o);
  EXPECT_GT(r.responses, 100u);
  EXPECT_EQ(r.errors.total(), 0u);
  const std::uint64_t served = servers.served();
  EXPECT_LE(r.responses, served);
  EXPECT_LE(served - r.responses, 4u * 8u);
  EXPECT_EQ(servers.accepted(), 4u) << "one handshake per connection, no reconnects";
}

TEST(HttpLoadTest, ReconnectMakesANewConnectionForEveryBatch) {
  test::TestServers servers;
  const auto port = servers.start_https(weft::test::test_server_context(weft::test::test_pki().self_signed));
  HttpOptions o;
  o.url = "https://127.0.0.1:" + std::to_string(port) + "/plaintext";
  o.insecure = true;
  o.reconnect = true;
  o.connections = 2;
  o.duration_s = 1;
  HttpResult r = run_http(o);
  EXPECT_GT(r.responses, 10u);
  EXPECT_EQ(r.errors.total(), 0u);
  // Every response had a connection (and a handshake) of its own; at most the last ones in flight
  // at the stop were connected without being answered.
  EXPECT_GE(servers.accepted(), r.responses);
  EXPECT_LE(servers.accepted(), r.responses + 2u * 2u);
}

TEST(HttpLoadTest, AnUntrustedCertificateIsRefusedWithTheReason) {
  test::TestServers servers;
  const auto port = servers.start_https(weft::test::test_server_context(weft::test::test_pki().self_signed));
  HttpOptions o;
  o.url = "https://127.0.0.1:" + std::to_string(port) + "/plaintext";
  o.connections = 2;
  o.duration_s = 0.5;
  try {
    run_http(o);
    FAIL() << "expected LoadError";
  } catch (const LoadError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("TLS handshake with 127.0.0.1:" + std::to_string(port) + " failed"), std::string::npos) << what;
    EXPECT_NE(what.find("certificate"), std::string::npos) << what;
  }
  HttpOptions bad = o;
  bad.reconnect = true;
  bad.rate = 100;
  EXPECT_THROW(run_http(bad), LoadError);
}

TEST(WeftLoadBinaryTest, UnreachableTargetExitsNonZeroWithTheReason) {
  const auto port = weft::test::unused_loopback_port();
  const std::string target = "127.0.0.1:" + std::to_string(port);
  for (const std::string& args : {"http http://" + target + "/ -c 2 -d 1", "h2 http://" + target + "/ -c 2 -d 1",
                                  "h2 https://" + target + "/ -c 2 -n 1", "stream " + target + " -d 1",
                                  "echo " + target + " --threads 2 --rounds 1"}) {
    auto [status, out] = run_command(std::string(WEFT_LOAD_BIN) + " " + args);
    EXPECT_NE(status, 0) << args;
    EXPECT_EQ(out, "weft-load: cannot connect to " + target + ": Connection refused\n") << args;
  }
}

TEST(WeftLoadBinaryTest, WritesTheJsonShape) {
  test::TestServers servers;
  const auto port = servers.start_http();
  const std::string json = ::testing::TempDir() + "weft_load_http." + std::to_string(::getpid()) + ".json";
  auto [status, out] = run_command(std::string(WEFT_LOAD_BIN) + " http http://127.0.0.1:" + std::to_string(port) +
                                   "/plaintext -c 2 -t 1 -d 0.5 --warmup 0.1 --pipeline 4 --latency --json " + json);
  ASSERT_EQ(status, 0) << out;
  EXPECT_NE(out.find("Requests/sec:"), std::string::npos) << out;
  EXPECT_NE(out.find("  Latency distribution (percentile, latency, samples at or below)\n     50.000%"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("\n    100.000%"), std::string::npos) << out;
  EXPECT_NE(out.find("  Connect   min "), std::string::npos) << out;
  EXPECT_NE(out.find("(2 connections)"), std::string::npos) << out;
  std::ifstream in(json);
  std::stringstream text;
  text << in.rdbuf();
  const std::string j = text.str();
  for (const char* key : {"\"tool\":\"weft-load\"",
                          "\"mode\":\"http\"",
                          "\"connections\":2",
                          "\"threads\":1",
                          "\"pipeline\":4",
                          "\"rate\":null",
                          "\"warmup_s\":0.100",
                          "\"duration_s\":",
                          "\"requests\":",
                          "\"responses\":",
                          "\"rps\":",
                          "\"bytes_read\":",
                          "\"latency_us\":{\"p50\":",
                          "\"p90\":",
                          "\"p99\":",
                          "\"p999\":",
                          "\"max\":",
                          "\"mean\":",
                          "\"p75\":",
                          "\"p9999\":",
                          "\"connect_us\":{\"p50\":",
                          "\"errors\":{\"connect\":0,\"read\":0,\"write\":0,\"timeout\":0,\"status\":0,\"parse\":0}"}) {
    EXPECT_NE(j.find(key), std::string::npos) << key << " in " << j;
  }
}

// An open loop against a server that takes connections and never answers: one request leaves (the
// connection's one slot), the rest of the schedule never does, and the report says how short it fell.
TEST(WeftLoadBinaryTest, AnOpenLoopThatFallsShortSaysByHowMuch) {
  const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  ASSERT_EQ(::listen(listener, 8), 0);  // the kernel completes the handshake; nobody reads
  ASSERT_EQ(::getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length), 0);
  const std::string json = ::testing::TempDir() + "weft_load_short." + std::to_string(::getpid()) + ".json";
  auto [status, out] =
      run_command(std::string(WEFT_LOAD_BIN) + " http http://127.0.0.1:" + std::to_string(ntohs(address.sin_port)) +
                  "/ -c 1 --pipeline 1 --rate 1000 -d 0.5 --timeout 60 --json " + json);
  ::close(listener);
  EXPECT_NE(out.find("constant rate: target 1000 req/s, sent "), std::string::npos) << out;
  EXPECT_NE(out.find("WARNING: the target rate was not reached"), std::string::npos) << out;
  std::ifstream in(json);
  std::stringstream text;
  text << in.rdbuf();
  const std::string j = text.str();
  const auto number = [&j](const std::string& key) {
    const auto at = j.find("\"" + key + "\":");
    return at == std::string::npos ? -1.0 : std::strtod(j.c_str() + at + key.size() + 3, nullptr);
  };
  EXPECT_LE(number("requests"), 1.0) << j;
  // Due: rate x duration (the JSON's duration has three decimals: one request either way).
  EXPECT_NEAR(number("unsent") + number("requests"), 1000 * number("duration_s"), 1.0) << j;
  EXPECT_GE(number("unsent"), 400.0) << j;
}

TEST(WeftLoadBinaryTest, AWarmUpCountsTimeSoItCannotGoWithARequestCount) {
  auto [status, out] = run_command(std::string(WEFT_LOAD_BIN) + " h2 http://127.0.0.1:1/ -n 10 --warmup 1");
  EXPECT_EQ(status, 2);
  EXPECT_EQ(out, "weft-load: --warmup counts time, -n requests: use one of them\n");
}

TEST(WeftLoadBinaryTest, VersionIsTheLibrarys) {
  auto [status, out] = run_command(std::string(WEFT_LOAD_BIN) + " --version");
  EXPECT_EQ(status, 0);
  EXPECT_EQ(out, std::string("weft-load ") + WEFT_VERSION_STRING + "\n");
}

}  // namespace
}  // namespace weft::load
