// weft-fetch: every URL's line and the summary against weft's own servers (keep-alive, closing
// after every answer, h2c), a failure's line and the exit status; URLs by name through a DNS server
// (dnsmasq) given with --dns-server; the binary's command line.

#include "fetch.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <atomic>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "client/origin_servers.h"
#include "support/dns_servers.h"
#include "support/shell.h"

namespace weft {
namespace {

// What run_fetch writes, and its result.
std::pair<int, std::string> fetch_into_string(const fetch::FetchOptions& options) {
  char* text = nullptr;
  std::size_t size = 0;
  std::FILE* out = ::open_memstream(&text, &size);
  const int result = fetch::run_fetch(options, out);
  std::fclose(out);
  std::string written(text, size);
  std::free(text);
  return {result, written};
}

// The lines of `text` whose URL field (the fourth) is `url`.
int lines_for(const std::string& text, const std::string& status, const std::string& url) {
  std::istringstream in(text);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string s, bytes, seconds, u;
    fields >> s >> bytes >> seconds >> u;
    n += (s == status && u == url) ? 1 : 0;
  }
  return n;
}

TEST(WeftFetchTest, FetchesEveryUrlAndSumsUp) {
  EventLoopGroup servers(epoll(), 1);
  auto accepted = std::make_shared<std::atomic<int>>(0);
  ChannelPtr keep_alive = test::serve_origin(servers, test::OriginKind::http1, accepted);
  ChannelPtr closing = test::serve_origin(servers, test::OriginKind::http1_closing, accepted);
  fetch::FetchOptions options;
  options.concurrency = 4;
  const std::string a = test::url_of(keep_alive, "http", "/hello");
  const std::string b = test::url_of(closing, "http", "/hello");
  for (int i = 0; i < 20; ++i) options.urls.push_back(i % 2 ? a : b);
  auto [result, out] = fetch_into_string(options);
  EXPECT_EQ(result, 0) << out;
  EXPECT_EQ(lines_for(out, "200", a), 10) << out;
  EXPECT_EQ(lines_for(out, "200", b), 10) << out;
  EXPECT_NE(out.find("fetched 20 URLs: 20 ok, 0 failed, 100 bytes in "), std::string::npos) << out;
}

TEST(WeftFetchTest, Http2AndFailuresSetTheExitStatus) {
  EventLoopGroup servers(epoll(), 1);
  auto accepted = std::make_shared<std::atomic<int>>(0);
  ChannelPtr h2c = test::serve_origin(servers, test::OriginKind::h2c, accepted);
  ChannelPtr gone = test::serve_origin(servers, test::OriginKind::http1, accepted);
  const std::string refused = test::url_of(gone, "http", "/hello");
  gone->close().get();
  fetch::FetchOptions options;
  options.http2 = true;
  const std::string hello = test::url_of(h2c, "http", "/hello");
  const std::string missing = test::url_of(h2c, "http", "/missing");
  options.urls = {hello, missing, refused};
  auto [result, out] = fetch_into_string(options);
  EXPECT_EQ(result, 1) << out;
  EXPECT_EQ(lines_for(out, "200", hello), 1) << out;
  EXPECT_EQ(lines_for(out, "404", missing), 1) << out;
  EXPECT_EQ(lines_for(out, "ERR", refused), 1) << out;
  EXPECT_NE(out.find("fetched 3 URLs: 1 ok, 2 failed"), std::string::npos) << out;
}

TEST(WeftFetchTest, TheBinary) {
  EventLoopGroup servers(epoll(), 1);
  auto accepted = std::make_shared<std::atomic<int>>(0);
  ChannelPtr server = test::serve_origin(servers, test::OriginKind::http1, accepted);
  const std::string url = test::url_of(server, "http", "/hello");
  int status = 0;
  std::string out =
      test::run_shell(std::string(WEFT_FETCH_BIN) + " --concurrency 2 --timeout 10 " + url + " " + url, status);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << out;
  EXPECT_EQ(lines_for(out, "200", url), 2) << out;
  out = test::run_shell(std::string(WEFT_FETCH_BIN) + " ftp://x/ 2>&1", status);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1) << out;
  EXPECT_NE(out.find("ERR 0 "), std::string::npos) << out;
  EXPECT_NE(out.find("scheme"), std::string::npos) << out;
}

TEST(WeftFetchTest, AListTakesOneUrlALineWithoutBlanksOrComments) {
  const std::string text = "http://a/1\n\n# a comment\n  http://b/2 \t\r\n\t\r\nhttp://c/#frag\nhttp://d/4";
  const std::vector<std::string_view> urls = fetch::url_lines(text);
  EXPECT_EQ(urls, (std::vector<std::string_view>{"http://a/1", "http://b/2", "http://c/#frag", "http://d/4"}));
  EXPECT_TRUE(fetch::url_lines("").empty());
  EXPECT_TRUE(fetch::url_lines("\n# only\n   \n").empty());
}

TEST(WeftFetchTest, TheBinaryReadsItsUrlsFromAFileOrStandardInput) {
  EventLoopGroup servers(epoll(), 1);
  auto accepted = std::make_shared<std::atomic<int>>(0);
  ChannelPtr server = test::serve_origin(servers, test::OriginKind::http1, accepted);
  const std::string url = test::url_of(server, "http", "/hello");
  const std::string list = ::testing::TempDir() + "weft-fetch-urls.txt";
  {
    std::FILE* f = std::fopen(list.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fprintf(f, "# three of them\n%s\n\n%s\r\n%s\n", url.c_str(), url.c_str(), url.c_str());
    std::fclose(f);
  }
  int status = 0;
  // The file's URLs and an argument's, together.
  std::string out = test::run_shell(std::string(WEFT_FETCH_BIN) + " -c 2 --input " + list + " " + url, status);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << out;
  EXPECT_EQ(lines_for(out, "200", url), 4) << out;
  out = test::run_shell(std::string(WEFT_FETCH_BIN) + " -i - < " + list, status);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << out;
  EXPECT_EQ(lines_for(out, "200", url), 3) << out;
  out = test::run_shell(std::string(WEFT_FETCH_BIN) + " --input " + list + ".missing 2>&1", status);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 2) << out;
  EXPECT_NE(out.find("No such file"), std::string::npos) << out;
  out = test::run_shell(std::string(WEFT_FETCH_BIN) + " --input /dev/null 2>&1", status);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 2) << out;
  EXPECT_NE(out.find("no URLs"), std::string::npos) << out;
  std::remove(list.c_str());
}

TEST(WeftFetchTest, FetchesByNameThroughTheGivenDnsServer) {
  WEFT_REQUIRE_DNSMASQ();
  test::Dnsmasq dns;
  ASSERT_TRUE(dns.start({"--host-record=origin.weft.test,127.0.0.1"}));
  EventLoopGroup servers(epoll(), 1);
  auto accepted = std::make_shared<std::atomic<int>>(0);
  ChannelPtr server = test::serve_origin(servers, test::OriginKind::http1, accepted);
  const std::string port = std::to_string(server->local_address().port());
  const std::string url = "http://origin.weft.test:" + port + "/hello";
  const std::string unknown = "http://missing.weft.test:" + port + "/hello";
  fetch::FetchOptions options;
  options.dns_servers = {dns.address().to_string()};
  options.urls = {url, unknown};
  auto [result, out] = fetch_into_string(options);
  EXPECT_EQ(result, 1) << out;
  EXPECT_EQ(lines_for(out, "200", url), 1) << out;
  EXPECT_EQ(lines_for(out, "ERR", unknown), 1) << out;
  EXPECT_NE(out.find("cannot resolve 'missing.weft.test'"), std::string::npos) << out;
  int status = 0;
  out = test::run_shell(std::string(WEFT_FETCH_BIN) + " --dns-server " + dns.address().to_string() + " " + url, status);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << out;
  EXPECT_EQ(lines_for(out, "200", url), 1) << out;
  out = test::run_shell(std::string(WEFT_FETCH_BIN) + " --dns-server not-an-address " + url + " 2>&1", status);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 2) << out;
  EXPECT_NE(out.find("--dns-server"), std::string::npos) << out;
}

}  // namespace
}  // namespace weft
