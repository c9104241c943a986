// Streamed request and response bodies on HTTP/1.1 (body_reader.h, body_writer.h), over sockets on
// every transport, with the router on the channel's loop and on an executor group: uploads through
// a slow reader and downloads to a slow client stay within their bounds and arrive byte-exact;
// chunked and Content-Length; a peer that goes away mid-body fails the reader or the writer with a
// typed error; pipelined requests behind a streamed one, an unread body, 100 Continue, HEAD, a
// producer that never finishes, a route's cap.

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>

#include "support/blocking_client.h"
#include "support/shell.h"
#include "support/transports.h"
#include "weft/codec/http1/body_writer.h"
#include "weft/codec/http1/query.h"
#include "weft/codec/http1/router.h"
#include "weft/codec/http1/server_codec.h"
#include "weft/codec/http2/server_codec.h"
#include "weft/core/awaitables.h"
#include "weft/core/executor_group.h"
#include "weft/core/loop_signal.h"
#include "weft/weft.h"

using namespace std::chrono_literals;

namespace weft::http {
namespace streamed_body_test {

using test::BlockingClient;
using test::StreamEnd;

constexpr std::size_t kChunk = 64 * 1024;

// The test bodies' bytes: position i holds byte(i).
char byte_at(std::uint64_t i) { return static_cast<char>((i * 7 + 3) % 251); }

std::string body_of(std::size_t n) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = byte_at(i);
  return s;
}

// FNV-1a, 64 bits: the byte-exact check of a body.
struct Fnv {
  std::uint64_t h = 14695981039346656037ull;
  void add(std::string_view s) {
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  }
};
std::string hash_of(std::string_view s) {
  Fnv f;
  f.add(s);
  return std::to_string(f.h);
}

// What the routes saw, for the test to check.
struct Observed {
  std::atomic<std::size_t> peak_buffered{0};  // the upload reader's peak_buffered_bytes
  std::atomic<std::size_t> peak_unsent{0};    // the download's channel pending bytes after a write
  std::optional<Promise<std::string>> error;  // the typed error a route met, by name
  std::optional<Promise<void>> reading;       // the upload route has its first chunk
  std::atomic<bool> reading_set{false};

  // The upload route's last trailer block: written on the route's loop, read by the test thread
  // (the reply it waits for is no synchronisation TSan can see).
  void set_trailers(std::string block) {
    std::lock_guard lock(mutex_);
    trailers_ = std::move(block);
  }
  std::string trailers() const {
    std::lock_guard lock(mutex_);
    return trailers_;
  }

 private:
  mutable std::mutex mutex_;
  std::string trailers_;
};

std::string error_name(std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const ChannelClosedError&) {
    return "ChannelClosedError";
  } catch (const HttpProtocolError&) {
    return "HttpProtocolError";
  } catch (const std::exception& e) {
    return std::string("other: ") + e.what();
  }
}

void note_max(std::atomic<std::size_t>& peak, std::size_t value) {
  std::size_t seen = peak.load();
  while (value > seen && !peak.compare_exchange_weak(seen, value)) {
  }
}

std::shared_ptr<Router> routes(Observed& seen) {
  auto router = std::make_shared<Router>();
  // Reads the whole body slowly (a turn of the loop between chunks, a pause first), answers
  // "<bytes> <hash>".
  router->post("/upload", [&seen](Request& request, BodyReader& body) -> Task<HttpResponse> {
    EventLoop& loop = request.channel().loop();
    Fnv hash;
    std::uint64_t bytes = 0;
    try {
      co_await weft::sleep(20ms);  // slowness, not synchronisation: the client gets ahead
      while (std::optional<ByteBuf> chunk = co_await body.next()) {
        if (bytes == 0 && !seen.reading_set.exchange(true)) seen.reading->set_value();
        hash.add(chunk->view());
        bytes += chunk->readable_bytes();
        co_await weft::next_turn(loop);
      }
    } catch (...) {
      seen.error->set_value(error_name(std::current_exception()));
      throw;
    }
    note_max(seen.peak_buffered, body.peak_buffered_bytes());
    seen.set_trailers(std::string(body.trailer_block()));
    co_return HttpResponse(200).body(std::to_string(bytes) + " " + std::to_string(hash.h));
  });
  router->post("/ignore",
               [](Request&, BodyReader&) -> Task<HttpResponse> { co_return HttpResponse(200).body_view("ignored"); });
  router->post("/limited", [](Request&, BodyReader& body) -> Task<HttpResponse> {
    body.limit(1000);
    while (co_await body.next()) {
    }
    co_return HttpResponse(200);
  });
  // /download?bytes=N[&length][&unfinished]: N bytes in kChunk writes.
  router->get("/download", [&seen](Request& request) -> Task<HttpResponse> {
    const QueryParams query = QueryParams::parse(request.query()).value();
    const std::uint64_t n = std::stoull(std::string(query.get("bytes").value_or("0")));
    const bool unfinished = query.get("unfinished").has_value();
    std::optional<std::uint64_t> length;
    if (query.get("length")) length = n;
    Channel& channel = request.channel();
    co_return HttpResponse(200)
        .content_type("application/octet-stream")
        .stream(
            [&seen, &channel, n, unfinished](BodyWriter& body) -> Task<void> {
              try {
                for (std::uint64_t at = 0; at < n; at += kChunk) {
                  if (unfinished && at >= n / 2) co_return;
                  const std::size_t size = static_cast<std::size_t>(std::min<std::uint64_t>(kChunk, n - at));
                  ByteBuf chunk = channel.allocator().buffer(size);
                  for (std::size_t i = 0; i < size; ++i) chunk.write_u8(static_cast<std::uint8_t>(byte_at(at + i)));
                  co_await body.write(std::move(chunk));
                  note_max(seen.peak_unsent, channel.pending_write_bytes());
                }
                co_await body.finish(HeaderBlock().add("X-Bytes", std::to_string(n)));
              } catch (...) {
                seen.error->set_value(error_name(std::current_exception()));
              }
            },
            length);
  });
  router->get("/plain", [](Request&) { return HttpResponse(200).body_view("plain"); });
  return router;
}

// A response as a client reads it: the head, and the body decoded (Content-Length or chunked).
struct Reply {
  std::string head;
  std::string body;
  bool complete = false;  // the body's framing ended properly
};

class Reader {
 public:
  explicit Reader(BlockingClient& client) : client_(client) {}
  // Reads `n` more bytes into the buffer, in pieces of at most `piece`; false at the end.
  bool fill(std::size_t n, std::size_t piece = 1 << 20) {
    while (buffer_.size() < n) {
      StreamEnd end = StreamEnd::timeout;
      std::string got = client_.recv_some(piece, 20000ms, &end);
      if (got.empty()) return false;
      buffer_ += got;
    }
    return true;
  }
  std::optional<std::string> line() {
    for (;;) {
      const std::size_t at = buffer_.find("\r\n");
      if (at != std::string::npos) {
        std::string l = buffer_.substr(0, at);
        buffer_.erase(0, at + 2);
        return l;
      }
      if (!fill(buffer_.size() + 1)) return std::nullopt;
    }
  }
  std::string take(std::size_t n) {
    std::string s = buffer_.substr(0, n);
    buffer_.erase(0, n);
    return s;
  }
  // One response; `head_only` for HEAD. `piece`: the most read at once (a slow client reads little).
  Reply reply(bool head_only = false, std::size_t piece = 1 << 20) {
    Reply r;
    while (std::optional<std::string> l = line()) {
      if (l->empty()) break;
      r.head += *l + "\n";
    }
    if (head_only) {
      r.complete = true;
      return r;
    }
    if (r.head.find("Transfer-Encoding: chunked") != std::string::npos) {
      for (;;) {
        std::optional<std::string> size_line = line();
        if (!size_line) return r;
        const std::size_t size = std::stoul(*size_line, nullptr, 16);
        if (size == 0) {
          while (std::optional<std::string> t = line()) {
            if (t->empty()) {
              r.complete = true;
              return r;
            }
            r.head += "trailer " + *t + "\n";
          }
          return r;
        }
        if (!fill(size + 2, piece)) return r;
        r.body += take(size);
        take(2);
      }
    }
    const std::size_t at = r.head.find("Content-Length: ");
    const std::size_t n = at == std::string::npos ? 0 : std::stoul(r.head.substr(at + 16));
    if (!fill(n, piece)) return r;
    r.body = take(n);
    r.complete = true;
    return r;
  }

 private:
  BlockingClient& client_;
  std::string buffer_;
};

std::string post_head(std::string_view path, std::size_t length, std::string_view extra = {}) {
  return "POST " + std::string(path) + " HTTP/1.1\r\nHost: t\r\nContent-Length: " + std::to_string(length) + "\r\n" +
         std::string(extra) + "\r\n";
}

// Where the router runs: on the channel's loop, or on an executor group (weft-hello's offload mode).
enum class RouterOn { loop, executor };

class StreamedBodyTest : public ::testing::TestWithParam<std::tuple<Transport*, RouterOn>> {
 protected:
  Transport& transport() const { return *std::get<0>(GetParam()); }
  bool on_executor() const { return std::get<1>(GetParam()) == RouterOn::executor; }

  void SetUp() override {
    seen_.error.emplace();
    error_ = seen_.error->future();
    seen_.reading.emplace();
    reading_ = seen_.reading->future();
    group_ = std::make_unique<EventLoopGroup>(transport(), transport().name() == "blocking" ? 8 : 1);
    if (on_executor()) executors_.emplace(ExecutorGroup::Options{.threads = 2, .name = "stream-exec"});
    std::shared_ptr<Router> router = routes(seen_);
    ExecutorGroup* executors = executors_ ? &*executors_ : nullptr;
    server_ = ServerBootstrap()
                  .group(*group_)
                  .child_handler([router, executors](Channel& ch) {
                    ch.pipeline().add_last("http", std::make_shared<ServerCodec>());
                    if (executors != nullptr) {
                      ch.pipeline().add_last(*executors, "router", router);
                    } else {
                      ch.pipeline().add_last("router", router);
                    }
                  })
                  .bind(SocketAddress::loopback(0))
                  .get();
  }
  void TearDown() override {
    server_->close().wait();
    group_->shutdown_gracefully(Duration::zero(), 100ms).wait();
    if (executors_) executors_->shutdown_gracefully(Duration::zero(), 100ms).wait();
  }
  std::uint16_t port() const { return server_->local_address().port(); }
  // The error a route met, by name.
  std::string route_error() {
    EXPECT_TRUE(test::eventually([&] { return error_.is_done(); }, 20000ms));
    return error_.is_done() ? error_.get() : "none";
  }

  // Waits until the upload route reads (the request has reached it, on an executor too).
  void wait_until_reading() {
    ASSERT_TRUE(test::eventually([&] { return reading_.is_done(); }, 20000ms));
  }

  Observed seen_;
  Future<std::string> error_;
  Future<void> reading_;
  std::unique_ptr<EventLoopGroup> group_;
  std::optional<ExecutorGroup> executors_;
  ChannelPtr server_;
};

// 1 MiB with Content-Length, then 512 KiB chunked with a trailer, through a reader that is slower
// than the client: byte-exact, and never more than the bound (and one socket read) buffered.
TEST_P(StreamedBodyTest, UploadsReachASlowReaderWhole) {
  BlockingClient client(port());
  Reader reader(client);
  const std::string body = body_of(1 << 20);
  ASSERT_TRUE(client.send_all(post_head("/upload", body.size()) + body, 30000ms));
  Reply r = reader.reply();
  EXPECT_EQ(r.body, std::to_string(body.size()) + " " + hash_of(body));
  EXPECT_GT(seen_.peak_buffered.load(), 0u);
  EXPECT_LE(seen_.peak_buffered.load(), kStreamBodyBufferBound + 64 * 1024);

  const std::string second = body_of(512 << 10);
  std::string chunked = "POST /upload HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n";
  for (std::size_t at = 0, size = 1; at < second.size(); at += size, size = size * 3 + 1) {
    const std::size_t n = std::min(size, second.size() - at);
    char hex[32];
    std::snprintf(hex, sizeof hex, "%zx\r\n", n);
    chunked += hex + second.substr(at, n) + "\r\n";
  }
  chunked += "0\r\nX-Checksum: yes\r\n\r\n";
  ASSERT_TRUE(client.send_all(chunked, 30000ms));
  r = reader.reply();
  EXPECT_EQ(r.body, std::to_string(second.size()) + " " + hash_of(second));
  EXPECT_EQ(seen_.trailers(), "X-Checksum: yes\r\n");
}

// 1 MiB chunked, then 512 KiB with Content-Length, to a client that reads 16 KiB at a time: the
// producer waits for the channel, and the bytes arrive whole, the trailer after them.
TEST_P(StreamedBodyTest, DownloadsReachASlowClientWhole) {
  BlockingClient client(port(), BlockingClient::Options{.receive_buffer = 32 * 1024});
  Reader reader(client);
  ASSERT_TRUE(client.send_all("GET /download?bytes=1048576 HTTP/1.1\r\nHost: t\r\n\r\n"));
  Reply r = reader.reply(false, 16 * 1024);
  ASSERT_TRUE(r.complete);
  EXPECT_NE(r.head.find("Transfer-Encoding: chunked"), std::string::npos) << r.head;
  EXPECT_NE(r.head.find("trailer X-Bytes: 1048576"), std::string::npos) << r.head;
  EXPECT_EQ(hash_of(r.body), hash_of(body_of(1 << 20)));
  EXPECT_EQ(r.body.size(), 1u << 20);
  // The channel's high water mark and one chunk at most wait to be sent.
  EXPECT_LE(seen_.peak_unsent.load(), 64 * 1024 + kChunk + 1024);

  ASSERT_TRUE(client.send_all("GET /download?bytes=524288&length HTTP/1.1\r\nHost: t\r\n\r\n"));
  r = reader.reply(false, 16 * 1024);
  ASSERT_TRUE(r.complete);
  EXPECT_NE(r.head.find("Content-Length: 524288"), std::string::npos) << r.head;
  EXPECT_EQ(hash_of(r.body), hash_of(body_of(512 << 10)));
}

// A client that resets the connection mid-upload: the reader's next() fails with ChannelClosedError.
TEST_P(StreamedBodyTest, AResetMidUploadFailsTheReader) {
  BlockingClient client(port());
  ASSERT_TRUE(client.send_all(post_head("/upload", 4 << 20) + body_of(100 * 1024)));
  wait_until_reading();
  client.reset();
  EXPECT_EQ(route_error(), "ChannelClosedError");
}

// A client that ends its input (FIN) mid-upload: the same, never a short body taken for whole.
TEST_P(StreamedBodyTest, AnInputEndedMidUploadFailsTheReader) {
  BlockingClient client(port());
  ASSERT_TRUE(client.send_all(post_head("/upload", 4 << 20) + body_of(100 * 1024)));
  wait_until_reading();
  client.shutdown_write();
  EXPECT_EQ(route_error(), "ChannelClosedError");
}

// A client that goes away mid-download: the producer's write fails with ChannelClosedError.
TEST_P(StreamedBodyTest, AClientGoneMidDownloadFailsTheWriter) {
  BlockingClient client(port());
  ASSERT_TRUE(client.send_all("GET /download?bytes=67108864 HTTP/1.1\r\nHost: t\r\n\r\n"));
  ASSERT_FALSE(client.recv_some(1024, 20000ms).empty());
  client.reset();
  EXPECT_EQ(route_error(), "ChannelClosedError");
}

// A producer that ends without finish(): the connection closes before the last chunk, so the
// client cannot take the body for whole.
TEST_P(StreamedBodyTest, AnUnfinishedBodyIsNeverASuccess) {
  BlockingClient client(port());
  Reader reader(client);
  ASSERT_TRUE(client.send_all("GET /download?bytes=262144&unfinished HTTP/1.1\r\nHost: t\r\n\r\n"));
  const Reply r = reader.reply();
  EXPECT_FALSE(r.complete);
  EXPECT_LT(r.body.size(), 262144u);
}

// Requests pipelined behind a streamed upload and a streamed download are answered after them, in order.
TEST_P(StreamedBodyTest, PipelinedRequestsBehindStreamedOnesAnswerInOrder) {
  BlockingClient client(port());
  Reader reader(client);
  const std::string body = body_of(512 << 10);
  const std::string get = "GET /plain HTTP/1.1\r\nHost: t\r\n\r\n";
  ASSERT_TRUE(client.send_all(
      post_head("/upload", body.size()) + body + get + "GET /download?bytes=300000 HTTP/1.1\r\nHost: t\r\n\r\n" + get,
      30000ms));
  EXPECT_EQ(reader.reply().body, std::to_string(body.size()) + " " + hash_of(body));
  EXPECT_EQ(reader.reply().body, "plain");
  const Reply download = reader.reply();
  EXPECT_TRUE(download.complete);
  EXPECT_EQ(hash_of(download.body), hash_of(body_of(300000)));
  EXPECT_EQ(reader.reply().body, "plain");
}

// A route that does not read its body: a short rest is read and dropped and the connection serves
// on; a long one closes the connection after the answer.
TEST_P(StreamedBodyTest, AnUnreadBodyIsDroppedOrEndsTheConnection) {
  BlockingClient client(port());
  Reader reader(client);
  ASSERT_TRUE(client.send_all(post_head("/ignore", 5000) + body_of(5000) + "GET /plain HTTP/1.1\r\nHost: t\r\n\r\n"));
  EXPECT_EQ(reader.reply().body, "ignored");
  EXPECT_EQ(reader.reply().body, "plain");

  BlockingClient second(port());
  Reader second_reader(second);
  ASSERT_TRUE(second.send_all(post_head("/ignore", 64 << 20) + body_of(1000)));
  const Reply r = second_reader.reply();
  EXPECT_EQ(r.body, "ignored");
  EXPECT_NE(r.head.find("Connection: close"), std::string::npos) << r.head;
  EXPECT_EQ(second.recv_until_end(nullptr, 20000ms), StreamEnd::eof);
}

// Expect: 100-continue is answered once the route asks for the body; then the body comes.
TEST_P(StreamedBodyTest, ContinueIsSentWhenTheReaderAsks) {
  BlockingClient client(port());
  Reader reader(client);
  const std::string body = body_of(300 * 1024);
  ASSERT_TRUE(client.send_all(post_head("/upload", body.size(), "Expect: 100-continue\r\n")));
  EXPECT_EQ(reader.line(), "HTTP/1.1 100 Continue");
  EXPECT_EQ(reader.line(), "");
  ASSERT_TRUE(client.send_all(body, 30000ms));
  EXPECT_EQ(reader.reply().body, std::to_string(body.size()) + " " + hash_of(body));
}

// HEAD of a streamed GET: the head only (the producer does not run); the connection serves on.
TEST_P(StreamedBodyTest, HeadGetsTheHeadOnly) {
  BlockingClient client(port());
  Reader reader(client);
  ASSERT_TRUE(
      client.send_all("HEAD /download?bytes=100000 HTTP/1.1\r\nHost: t\r\n\r\nGET /plain HTTP/1.1\r\nHost: t\r\n\r\n"));
  const Reply head = reader.reply(true);
  EXPECT_NE(head.head.find("200 OK"), std::string::npos);
  EXPECT_EQ(reader.reply().body, "plain");
}

// Bad chunked framing mid-body fails the reader's next() with HttpProtocolError; a route that lets
// it go is answered with its status (400), not as a route's failure (500).
TEST_P(StreamedBodyTest, BadFramingThatEscapesTheRouteIsAnswered400) {
  BlockingClient client(port());
  Reader reader(client);
  ASSERT_TRUE(
      client.send_all("POST /upload HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\nzz\r\n"));
  EXPECT_EQ(route_error(), "HttpProtocolError");
  const Reply r = reader.reply();
  EXPECT_EQ(r.head.substr(0, 12), "HTTP/1.1 400") << r.head;
}

// A body past the route's limit() is answered 413.
TEST_P(StreamedBodyTest, ABodyPastTheRoutesLimitGets413) {
  BlockingClient client(port());
  Reader reader(client);
  ASSERT_TRUE(client.send_all(post_head("/limited", 5000) + body_of(5000)));
  const Reply r = reader.reply();
  EXPECT_NE(r.head.find("413"), std::string::npos) << r.head;
  // A rest still to come is not read: the connection ends (on an executor the body may have
  // arrived whole before the route ran, and the connection may then serve on).
  if (!on_executor()) {
    EXPECT_NE(r.head.find("Connection: close"), std::string::npos) << r.head;
  }
}

// The same routes over h2c with curl: streamed both ways there too (more in
// tests/client/streamed_routes_h2_test.cc), byte-exact both ways.
TEST_P(StreamedBodyTest, Http2WithCurlGetsTheBodiesWhole) {
  if (on_executor()) GTEST_SKIP() << "the router's placement is HTTP/1.1's concern here";
  std::shared_ptr<Router> router = routes(seen_);
  ChannelPtr h2 = ServerBootstrap()
                      .group(*group_)
                      .child_handler([router](Channel& ch) {
                        ch.pipeline().add_last("http2", std::make_shared<http2::ServerCodec>());
                        ch.pipeline().add_last("router", router);
                      })
                      .bind(SocketAddress::loopback(0))
                      .get();
  const std::string url = "http://127.0.0.1:" + std::to_string(h2->local_address().port());
  const std::string body = body_of(512 * 1024);
  char file[] = "/tmp/weft-stream-XXXXXX";
  const int fd = ::mkstemp(file);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, body.data(), body.size()), static_cast<ssize_t>(body.size()));
  ::close(fd);
  int status = 0;
  const std::string uploaded = test::run_shell(
      "curl -s --http2-prior-knowledge --data-binary @" + std::string(file) + " " + url + "/upload", status);
  ::unlink(file);
  EXPECT_EQ(status, 0);
  EXPECT_EQ(uploaded, std::to_string(body.size()) + " " + hash_of(body));
  const std::string downloaded =
      test::run_shell("curl -s --http2-prior-knowledge '" + url + "/download?bytes=1000000'", status);
  EXPECT_EQ(status, 0);
  EXPECT_EQ(downloaded.size(), 1000000u);
  EXPECT_EQ(hash_of(downloaded), hash_of(body_of(1000000)));
  h2->close().wait();
}

std::string config_name(const ::testing::TestParamInfo<std::tuple<Transport*, RouterOn>>& info) {
  return std::string(std::get<0>(info.param)->name()) +
         (std::get<1>(info.param) == RouterOn::loop ? "_loop" : "_executor");
}

INSTANTIATE_TEST_SUITE_P(On, StreamedBodyTest,
                         ::testing::Combine(::testing::Values(&epoll(), &io_uring(), &blocking()),
                                            ::testing::Values(RouterOn::loop, RouterOn::executor)),
                         config_name);

}  // namespace streamed_body_test
}  // namespace weft::http
