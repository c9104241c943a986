// Files served by weft (FileResponse, StaticFiles) to real clients on every transport, over
// cleartext and TLS on one port (OptionalTlsHandler), HTTP/1.1 and h2: curl downloads byte-exact,
// ranges, conditionals and path traversal; a raw socket pipelines behind a file; a large file to a
// slow reader holds bounded memory; a file that shrinks while served closes the connection. On
// io_uring, cleartext bodies go through the channel's pipe (splice), TLS bodies are read and encrypted.

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <utility>

#include "../src/transport/io_uring/io_uring_driver.h"
#include "support/blocking_client.h"
#include "support/resident_memory.h"
#include "support/sanitizers.h"
#include "support/shell.h"
#include "support/tls_certs.h"
#include "support/tls_client_socket.h"
#include "support/transports.h"
#include "weft/weft.h"

using namespace std::chrono_literals;
using ::testing::HasSubstr;
using ::testing::Not;

namespace weft::http {
namespace {

namespace fs = std::filesystem;

#if defined(WEFT_TEST_SANITIZED)
constexpr std::size_t kLargeFile = std::size_t{4} << 20;
#else
constexpr std::size_t kLargeFile = std::size_t{64} << 20;
#endif
constexpr std::size_t kDataFile = 300 * 1024 + 7;          // several chunks, not a multiple of one
constexpr std::size_t kShrinking = std::size_t{32} << 20;  // sparse: cheap to make

std::string random_bytes(std::size_t n, unsigned seed) {
  std::string out(n, '\0');
  std::mt19937 rng(seed);
  for (char& c : out) c = static_cast<char>(rng());
  return out;
}

void write_file(const fs::path& path, std::string_view bytes) {
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// A directory of files, made once for the suite: <base>/root is served, <base>/secret.txt is not.
struct Tree {
  fs::path base, root;
  std::string data;  // root/data.bin
  std::string ca_file;
  Tree() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/weft-files-XXXXXX";
    base = ::mkdtemp(pattern.data());
    root = base / "root";
    fs::create_directories(root / "sub");
    write_file(base / "secret.txt", "SECRET");
    write_file(root / "hello.txt", "Hello, file!\n");
    write_file(root / "sub" / "index.html", "<p>index</p>");
    data = random_bytes(kDataFile, 7);
    write_file(root / "data.bin", data);
    fs::create_symlink(base / "secret.txt", root / "escape.txt");  // leads out of the root
    fs::create_symlink("../secret.txt", root / "sub" / "up.txt");  // relative, out of the root
    fs::create_symlink("hello.txt", root / "inside.txt");          // stays inside
    ca_file = test::write_temp_file(test::test_pki().ca.cert_pem, ".pem");
  }
  ~Tree() {
    std::error_code ignored;
    fs::remove_all(base, ignored);
  }
};

Tree& tree() {
  static Tree t;
  return t;
}

std::string run(const std::string& command, int& status) { return test::run_shell(command, status); }

// Header names differ in case between HTTP/1.1 and h2: compare heads lower-cased.
std::string lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

class StaticFilesTest : public test::TransportTest {
 protected:
  void SetUp() override {
    // Named before the server starts: its routes read it on the loops (a test writes the file only).
    std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::replace(name.begin(), name.end(), '/', '-');
    large_path_ = (tree().base / name).string();
    auto router = std::make_shared<Router>();
    router->get("/one", [](Context& ctx, HttpRequest& request) {
      ctx.write(FileResponse::make(request, (tree().root / "hello.txt").string(),
                                   {.content_type = "text/x-one", .cache_control = "max-age=60"}));
    });
    router->get("/large",
                [this](Context& ctx, HttpRequest& request) { ctx.write(FileResponse::make(request, large_path_)); });
    router->get("/shrinking", [this](Context& ctx, HttpRequest& request) {
      // A file of kShrinking bytes when the answer is made, 64 KiB right after: its body ends early.
      const int fd = ::open(large_path_.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
      if (fd < 0 || ::ftruncate(fd, static_cast<off_t>(kShrinking)) != 0) std::abort();
      HttpResponse response = FileResponse::make(request, large_path_);
      if (::ftruncate(fd, 64 * 1024) != 0) std::abort();
      ::close(fd);
      ctx.write(std::move(response));
    });
    // The StaticFiles is gone once the handler is made: the handler keeps the directory open.
    router->fallback(StaticFiles(tree().root.string()).handler("/"));
    auto tls = test::test_server_context(test::test_pki().localhost, {"h2", "http/1.1"});
    server_ =
        ServerBootstrap()
            .group(loops_)
            .child_handler([router, tls](Channel& ch) {
              ch.pipeline().add_last(
                  "tls-or-not", std::make_shared<OptionalTlsHandler>(tls, [](Context& ctx, bool encrypted) {
                    if (!encrypted) {
                      ctx.pipeline().add_after(ctx.name(), "detect", std::make_shared<http2::CleartextDetector>());
                      return;
                    }
                    ctx.pipeline().add_after(
                        ctx.name(), "alpn",
                        std::make_shared<ApplicationProtocolNegotiationHandler>(
                            "http/1.1", [](Context& c, std::string_view protocol) {
                              if (protocol == "h2") {
                                c.pipeline().add_after(c.name(), "http2", std::make_shared<http2::ServerCodec>());
                              } else {
                                c.pipeline().add_after(c.name(), "http1", std::make_shared<ServerCodec>());
                              }
                            }));
                  }));
              ch.pipeline().add_last("router", router);
            })
            .bind(SocketAddress::loopback(0))
            .get();
    port_ = server_->local_address().port();
  }
  void TearDown() override {
    server_->close().wait();
    if (!large_path_.empty()) ::unlink(large_path_.c_str());
  }

  std::string url(std::string_view scheme, std::string_view path) const {
    return std::string(scheme) + "://localhost:" + std::to_string(port_) + std::string(path);
  }
  // curl with the test CA trusted and localhost pinned to 127.0.0.1; `args` before the URL.
  std::string curl(const std::string& args, const std::string& target, int& status) const {
    return run("curl -s --max-time 20 --cacert " + tree().ca_file + " --resolve localhost:" + std::to_string(port_) +
                   ":127.0.0.1 " + args + " '" + target + "'",
               status);
  }

  // io_uring: the bytes of files the group's loops sent through a pipe (first) and read (second).
  std::pair<std::uint64_t, std::uint64_t> file_paths() {
    std::pair<std::uint64_t, std::uint64_t> sum{0, 0};
    for (std::size_t i = 0; i < loops_.size(); ++i) {
      if (const auto* driver = dynamic_cast<IoUringDriver*>(&loops_.at(i).driver())) {
        sum.first += driver->file_bytes_spliced();
        sum.second += driver->file_bytes_read();
      }
    }
    return sum;
  }

  ChannelPtr server_;
  std::uint16_t port_ = 0;
  std::string large_path_;  // a file of the test's own (the /large and /shrinking routes serve it)
  // Last, so destroyed first: the loops stop before what their routes read is freed.
  EventLoopGroup loops_{transport(), loops(1, 6)};
};

// http:// and https:// to the same port, HTTP/1.1 and h2: the file arrives byte-exact.
TEST_P(StaticFilesTest, CurlDownloadsByteExactOverEveryProtocolOnOnePort) {
  const std::string out_file = (tree().base / ("download-" + std::string(transport().name()))).string();
  const struct {
    const char* scheme;
    const char* version;
    const char* expect_version;
  } cases[] = {{"http", "--http1.1", "1.1"},
               {"http", "--http2-prior-knowledge", "2"},
               {"https", "--http1.1", "1.1"},
               {"https", "--http2", "2"}};
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(c.scheme) + " " + c.version);
    const auto paths_before = file_paths();
    int status = -1;
    const std::string out =
        curl(std::string(c.version) + " -o " + out_file + " -w '%{http_code}|%{http_version}|%{content_type}'",
             url(c.scheme, "/data.bin"), status);
    ASSERT_EQ(status, 0) << out;
    EXPECT_EQ(out, std::string("200|") + c.expect_version + "|application/octet-stream");
    std::ifstream in(out_file, std::ios::binary);
    const std::string got((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(got.size(), tree().data.size());
    EXPECT_TRUE(got == tree().data);
    if (transport().name() == "io_uring") {
      // curl has the whole body: the loop counted it (eventually: the completion may still be queued).
      // HTTP/1.1 in cleartext hands the file to the channel; TLS encrypts and h2 frames it, so both read it.
      const bool whole = std::string_view(c.scheme) == "http" && std::string_view(c.expect_version) == "1.1";
      const std::uint64_t want = paths_before.first + (whole ? kDataFile : 0);
      EXPECT_TRUE(test::eventually([&] { return file_paths().first == want; }, 5000ms))
          << (whole ? "sent through the pipe" : "read by the codec or TLS") << ": spliced "
          << file_paths().first - paths_before.first;
      EXPECT_EQ(file_paths().second, 0u) << "never read into buffers by the transport";
    }
    // HEAD: the GET's headers, no body.
    const std::string head = lower(curl(std::string(c.version) + " -I", url(c.scheme, "/data.bin"), status));
    ASSERT_EQ(status, 0);
    EXPECT_THAT(head, HasSubstr("content-length: " + std::to_string(kDataFile)));
    EXPECT_THAT(head, HasSubstr("accept-ranges: bytes"));
  }
  ::unlink(out_file.c_str());
}

TEST_P(StaticFilesTest, RangesAndConditionalsAgainstCurl) {
  for (const char* scheme : {"http", "https"}) {
    SCOPED_TRACE(scheme);
    int status = -1;
    // One range: 206 with Content-Range and exactly those bytes.
    std::string out = curl("-i -r 100-199", url(scheme, "/data.bin"), status);
    ASSERT_EQ(status, 0);
    EXPECT_THAT(out, HasSubstr(" 206"));
    EXPECT_THAT(lower(out), HasSubstr("content-range: bytes 100-199/" + std::to_string(kDataFile)));
    EXPECT_EQ(out.substr(out.find("\r\n\r\n") + 4), tree().data.substr(100, 100));
    // A suffix range and an open one.
    out = curl("-r -6", url(scheme, "/hello.txt"), status);
    EXPECT_EQ(out, "file!\n");
    out = curl("-r 7-", url(scheme, "/hello.txt"), status);
    EXPECT_EQ(out, "file!\n");
    // Past the end: 416 with the size; several ranges: the whole file (200).
    out = curl("-i -r 5000-6000", url(scheme, "/hello.txt"), status);
    EXPECT_THAT(out, HasSubstr(" 416"));
    EXPECT_THAT(lower(out), HasSubstr("content-range: bytes */13"));
    out = curl("-w '|%{http_code}' -r 0-1,4-5", url(scheme, "/hello.txt"), status);
    EXPECT_EQ(out, "Hello, file!\n|200");
    // Validators: the ETag and Last-Modified it sends make it answer 304.
    out = curl("-i", url(scheme, "/one"), status);
    EXPECT_THAT(lower(out), HasSubstr("content-type: text/x-one"));
    EXPECT_THAT(lower(out), HasSubstr("cache-control: max-age=60"));
    const std::size_t etag_at = lower(out).find("etag: ") + 1;
    ASSERT_NE(etag_at, 0u) << out;
    const std::string etag = out.substr(etag_at + 5, out.find("\r\n", etag_at) - etag_at - 5);
    const std::size_t lm_at = lower(out).find("last-modified: ") + 1;
    ASSERT_NE(lm_at, 0u);
    const std::string last_modified = out.substr(lm_at + 14, out.find("\r\n", lm_at) - lm_at - 14);
    out = curl("-o /dev/null -w '%{http_code}' -H 'If-None-Match: " + etag + "'", url(scheme, "/one"), status);
    EXPECT_EQ(out, "304");
    out = curl("-o /dev/null -w '%{http_code}' -H 'If-None-Match: \"other\", W/" + etag + "'", url(scheme, "/one"),
               status);
    EXPECT_EQ(out, "304");
    out = curl("-o /dev/null -w '%{http_code}' -H 'If-None-Match: \"other\"'", url(scheme, "/one"), status);
    EXPECT_EQ(out, "200");
    out = curl("-o /dev/null -w '%{http_code}' -H 'If-Modified-Since: " + last_modified + "'", url(scheme, "/one"),
               status);
    EXPECT_EQ(out, "304");
    out = curl("-o /dev/null -w '%{http_code}' -H 'If-Modified-Since: Thu, 01 Jan 1970 00:00:00 GMT'",
               url(scheme, "/one"), status);
    EXPECT_EQ(out, "200");
    // If-Range with a stale validator: the whole file.
    out = curl("-w '|%{http_code}' -r 0-1 -H 'If-Range: \"stale\"'", url(scheme, "/hello.txt"), status);
    EXPECT_EQ(out, "Hello, file!\n|200");
    // Content types by extension; a directory's index.html.
    out = curl("-o /dev/null -w '%{content_type}'", url(scheme, "/hello.txt"), status);
    EXPECT_EQ(out, "text/plain; charset=utf-8");
    out = curl("-w '|%{content_type}'", url(scheme, "/sub/"), status);
    EXPECT_EQ(out, "<p>index</p>|text/html; charset=utf-8");
    out = curl("-o /dev/null -w '%{http_code}' -X POST", url(scheme, "/one"), status);
    EXPECT_EQ(out, "405");
  }
}

// No request path reaches a file outside the root: 404, and never the secret's bytes.
TEST_P(StaticFilesTest, PathTraversalIsRefused) {
  const char* paths[] = {"/../secret.txt",
                         "/%2e%2e/secret.txt",
                         "/sub/..%2f..%2fsecret.txt",
                         "/sub/%2E%2E/%2e%2e/secret.txt",
                         "/escape.txt",
                         "/sub/up.txt",
                         "//etc/passwd",
                         "/hello.txt%00.png",
                         "/%2fetc%2fpasswd",
                         "/bad%zzescape",
                         "/sub/../../secret.txt"};
  for (const char* scheme : {"http", "https"}) {
    SCOPED_TRACE(scheme);
    // One curl, one connection, every path: each answer's body, then "|code" on a line of its own.
    std::string targets;
    for (const char* path : paths) targets += " -w '|%{http_code}\\n' '" + url(scheme, path) + "'";
    int status = -1;
    const std::string out = curl("--path-as-is" + targets, url(scheme, "/hello.txt"), status);
    ASSERT_EQ(status, 0) << out;
    EXPECT_THAT(out, Not(HasSubstr("SECRET")));
    EXPECT_THAT(out, Not(HasSubstr("root:")));
    std::size_t refused = 0;
    for (std::size_t at = out.find('|'); at != std::string::npos; at = out.find('|', at + 1)) {
      const std::string code = out.substr(at + 1, 3);
      if (code == "200") continue;  // the last target: /hello.txt, a control
      EXPECT_TRUE(code == "404" || code == "403") << out;
      ++refused;
    }
    EXPECT_EQ(refused, std::size(paths));
    EXPECT_TRUE(out.ends_with("Hello, file!\n|200\n")) << out;
    // A symlink that stays inside the root is followed.
    EXPECT_EQ(curl("", url(scheme, "/inside.txt"), status), "Hello, file!\n");
  }
}

// A connection that ends before sending a byte is closed; one that sends a byte that starts no TLS
// record is cleartext (here: a request the HTTP/1.1 codec answers), sent one byte at a time.
TEST_P(StaticFilesTest, OnePortChoosesFromTheFirstBytesSentOneAtATime) {
  test::BlockingClient quiet(port_);
  ASSERT_TRUE(quiet.is_open());
  quiet.shutdown_write();
  EXPECT_EQ(quiet.recv_until_end(nullptr, 10000ms), test::StreamEnd::eof);
  test::BlockingClient slow(port_);
  ASSERT_TRUE(slow.is_open());
  for (char c : std::string_view("GET /hello.txt HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")) {
    ASSERT_TRUE(slow.send_all(std::string_view(&c, 1)));
  }
  std::string answer;
  EXPECT_EQ(slow.recv_until_end(&answer, 10000ms), test::StreamEnd::eof);
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 200 OK")) << answer;
  EXPECT_TRUE(answer.ends_with("\r\n\r\nHello, file!\n")) << answer;
}

// Pipelined requests on a raw socket: the answers behind a file leave after all of its bytes.
TEST_P(StaticFilesTest, RawSocketPipelinesBehindAFile) {
  test::BlockingClient client(port_);
  ASSERT_TRUE(client.is_open());
  ASSERT_TRUE(
      client.send_all("GET /data.bin HTTP/1.1\r\nHost: x\r\n\r\n"
                      "GET /hello.txt HTTP/1.1\r\nHost: x\r\n\r\n"
                      "HEAD /data.bin HTTP/1.1\r\nHost: x\r\n\r\n"
                      "GET /hello.txt HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
  std::string all;
  EXPECT_EQ(client.recv_until_end(&all, 10000ms), test::StreamEnd::eof);
  std::size_t at = all.find("\r\n\r\n");
  ASSERT_NE(at, std::string::npos);
  EXPECT_THAT(all.substr(0, at), HasSubstr("Content-Length: " + std::to_string(kDataFile)));
  ASSERT_GE(all.size(), at + 4 + kDataFile);
  EXPECT_TRUE(all.compare(at + 4, kDataFile, tree().data) == 0);
  const std::string rest = all.substr(at + 4 + kDataFile);
  EXPECT_EQ(rest.find("HTTP/1.1 200 OK"), 0u) << rest.substr(0, 200);
  EXPECT_THAT(rest, HasSubstr("\r\n\r\nHello, file!\nHTTP/1.1 200 OK"));
  EXPECT_TRUE(rest.ends_with("\r\n\r\nHello, file!\n")) << rest;
  EXPECT_EQ(std::count(rest.begin(), rest.end(), 'H') >= 3, true);
}

// HEAD, a Range and a whole GET of one file pipelined on a keep-alive connection: each answer in
// its turn, the HEAD without a body, the range's bytes only, the whole file byte-exact.
TEST_P(StaticFilesTest, PipelinedHeadRangeAndGetOfAFileOnKeepAlive) {
  test::BlockingClient client(port_);
  ASSERT_TRUE(client.is_open());
  ASSERT_TRUE(
      client.send_all("HEAD /data.bin HTTP/1.1\r\nHost: x\r\n\r\n"
                      "GET /data.bin HTTP/1.1\r\nHost: x\r\nRange: bytes=100-70099\r\n\r\n"
                      "GET /data.bin HTTP/1.1\r\nHost: x\r\n\r\n"
                      "GET /data.bin HTTP/1.1\r\nHost: x\r\nRange: bytes=-5\r\nConnection: close\r\n\r\n"));
  std::string all;
  EXPECT_EQ(client.recv_until_end(&all, 10000ms), test::StreamEnd::eof);
  std::string_view rest(all);
  // The next answer's head, and its body of `length` bytes.
  auto next = [&rest](std::size_t length, std::string& head, std::string& body) {
    const std::size_t end = rest.find("\r\n\r\n");
    if (end == std::string_view::npos || rest.size() < end + 4 + length) return false;
    head = std::string(rest.substr(0, end));
    body = std::string(rest.substr(end + 4, length));
    rest.remove_prefix(end + 4 + length);
    return true;
  };
  const std::string& data = tree().data;
  std::string head, body;
  ASSERT_TRUE(next(0, head, body)) << all.substr(0, 300);
  EXPECT_THAT(head, HasSubstr("HTTP/1.1 200 OK"));
  EXPECT_THAT(head, HasSubstr("Content-Length: " + std::to_string(kDataFile)));
  ASSERT_TRUE(next(70000, head, body));
  EXPECT_THAT(head, HasSubstr("HTTP/1.1 206 Partial Content"));
  EXPECT_THAT(head, HasSubstr("Content-Range: bytes 100-70099/" + std::to_string(kDataFile)));
  EXPECT_TRUE(body == data.substr(100, 70000));
  ASSERT_TRUE(next(kDataFile, head, body));
  EXPECT_THAT(head, HasSubstr("HTTP/1.1 200 OK"));
  EXPECT_TRUE(body == data);
  ASSERT_TRUE(next(5, head, body));
  EXPECT_THAT(head, HasSubstr("HTTP/1.1 206 Partial Content"));
  EXPECT_EQ(body, data.substr(kDataFile - 5));
  EXPECT_TRUE(rest.empty()) << rest.size() << " bytes after the last answer";
}

// A large file to a reader slower than the server: the server's memory stays bounded (a chunk and
// the write queue's water mark, not the file), and every byte arrives in order. Cleartext and TLS.
TEST_P(StaticFilesTest, LargeFileToASlowReaderHoldsBoundedMemory) {
  {
    // A sparse file reads as zeros but for a marker every MiB: cheap to make, checkable on arrival.
    const int fd = ::open(large_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::ftruncate(fd, static_cast<off_t>(kLargeFile)), 0);
    for (std::size_t mib = 0; mib < kLargeFile >> 20; ++mib) {
      const std::string mark = "MiB " + std::to_string(mib);
      ASSERT_EQ(::pwrite(fd, mark.data(), mark.size(), static_cast<off_t>(mib << 20)),
                static_cast<ssize_t>(mark.size()));
    }
    ::close(fd);
  }
  // The bytes at `at` should be the marker of their MiB, then zeros.
  auto check_body = [](std::string_view body, std::size_t at, std::size_t& mismatches) {
    while (!body.empty()) {
      const std::size_t in_mib = at & ((std::size_t{1} << 20) - 1);
      const std::size_t n = std::min(body.size(), (std::size_t{1} << 20) - in_mib);
      const std::string mark = "MiB " + std::to_string(at >> 20);
      for (std::size_t i = 0; i < n; ++i) {
        const char want = in_mib + i < mark.size() ? mark[in_mib + i] : '\0';
        mismatches += body[i] != want;
      }
      body.remove_prefix(n);
      at += n;
    }
  };
  for (bool tls : {false, true}) {
    SCOPED_TRACE(tls ? "TLS" : "cleartext");
    const std::size_t rss_before = test::resident_bytes();
    std::size_t rss_peak = rss_before;
    std::unique_ptr<test::BlockingClient> plain;
    std::unique_ptr<test::TlsClientSocket> secure;
    const std::string request = "GET /large HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    if (tls) {
      secure = std::make_unique<test::TlsClientSocket>(port_, std::vector<std::string>{"http/1.1"}, 10000ms, 16 * 1024);
      ASSERT_TRUE(secure->is_open()) << secure->error();
      ASSERT_TRUE(secure->send_all(request));
    } else {
      plain = std::make_unique<test::BlockingClient>(port_, test::BlockingClient::Options{.receive_buffer = 16 * 1024});
      ASSERT_TRUE(plain->is_open());
      ASSERT_TRUE(plain->send_all(request));
    }
    std::string head;
    std::size_t received = 0, mismatches = 0, next_sample = 0;
    test::StreamEnd end = test::StreamEnd::eof;
    for (;;) {
      // Small reads: the server is always ahead, held back by writability.
      const std::string piece = tls ? secure->recv_some(64 * 1024, &end) : plain->recv_some(64 * 1024, 10000ms, &end);
      if (piece.empty()) break;
      std::string_view body(piece);
      if (head.empty() || !head.ends_with("\r\n\r\n")) {
        const std::size_t before = head.size();
        head += piece;
        const std::size_t at = head.find("\r\n\r\n");
        if (at == std::string::npos) continue;
        body.remove_prefix(at + 4 - before);
        head.resize(at + 4);
      }
      check_body(body, received, mismatches);
      received += body.size();
      if (received >= next_sample) {
        rss_peak = std::max(rss_peak, test::resident_bytes());
        next_sample += 1 << 20;
      }
    }
    EXPECT_EQ(end, test::StreamEnd::eof) << test::to_string(end);
    EXPECT_THAT(head, HasSubstr("Content-Length: " + std::to_string(kLargeFile)));
    EXPECT_EQ(received, kLargeFile);
    EXPECT_EQ(mismatches, 0u);
#if !defined(WEFT_TEST_SANITIZED)
    EXPECT_LT(rss_peak - rss_before, std::size_t{16} << 20) << "the server held the file in memory";
#endif
  }
}

// A file truncated while it is served: the connection closes (short body), nothing hangs.
TEST_P(StaticFilesTest, AFileThatShrinksWhileServedClosesTheConnection) {
  constexpr std::size_t kSize = std::size_t{32} << 20;  // more than the socket buffers hold (sparse: cheap)
  {
    const int fd = ::open(large_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::ftruncate(fd, static_cast<off_t>(kSize)), 0);
    ::close(fd);
  }
  test::BlockingClient client(port_, test::BlockingClient::Options{.receive_buffer = 16 * 1024});
  ASSERT_TRUE(client.is_open());
  ASSERT_TRUE(client.send_all("GET /large HTTP/1.1\r\nHost: x\r\n\r\n"));
  const auto first = client.recv_exact(1024, 10000ms);  // the answer has begun
  ASSERT_TRUE(first.has_value());
  ASSERT_EQ(::truncate(large_path_.c_str(), 64 * 1024), 0);
  std::size_t received = first->size();
  test::StreamEnd end = test::StreamEnd::eof;
  for (;;) {
    const std::string piece = client.recv_some(64 * 1024, 10000ms, &end);
    if (piece.empty()) break;
    received += piece.size();
  }
  EXPECT_TRUE(end == test::StreamEnd::eof || end == test::StreamEnd::reset) << test::to_string(end);
  EXPECT_LT(received, kSize);
}

// The same with curl, over HTTP/1.1 and h2, cleartext and TLS: the file shrinks right after its
// answer was made, so its Content-Length promises more than the file has. curl sees the connection
// end early (an error, not its timeout) and never the promised length.
TEST_P(StaticFilesTest, AFileThatShrinksEndsTheConnectionOverEveryProtocol) {
  const struct {
    const char* scheme;
    const char* version;
  } cases[] = {
      {"http", "--http1.1"}, {"http", "--http2-prior-knowledge"}, {"https", "--http1.1"}, {"https", "--http2"}};
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(c.scheme) + " " + c.version);
    int status = -1;
    const std::string out =
        curl(std::string(c.version) + " -o /dev/null -w '%{size_download}'", url(c.scheme, "/shrinking"), status);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_NE(WEXITSTATUS(status), 0) << out;
    EXPECT_NE(WEXITSTATUS(status), 28) << "curl timed out: the server hung";
    EXPECT_LT(std::stoull(out.empty() ? "0" : out), kShrinking);
  }
}

WEFT_ON_EVERY_TRANSPORT(StaticFilesTest);

}  // namespace
}  // namespace weft::http
