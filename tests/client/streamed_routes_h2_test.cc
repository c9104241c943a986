// A Router's streamed routes over h2c (docs/streaming.md), with weft's own client and with nghttp,
// on every transport, the router on the channel's loop and on an executor group: a 2 MiB upload
// reaches a slow reader as its DATA arrive, byte-exact, within the stream's window; a 2 MiB
// download leaves as its producer writes, byte-exact, with its trailers; the client's trailers reach
// the reader; a client that resets its stream fails the reader or the writer with
// ChannelClosedError and the connection serves on; an unread body ends its stream, not the
// connection; limit() gets 413; a producer that ends without
// finish() resets the stream; a slow streamed route does not hold a fast request on its connection;
// with a short Settings::request_timeout, a stalled upload fails its reader with 408 while a reader
// that holds a full window is never timed.

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>

#include "support/shell.h"
#include "support/transports.h"
#include "weft/client/http_client.h"
#include "weft/codec/http1/body_writer.h"
#include "weft/codec/http1/client_codec.h"
#include "weft/codec/http1/query.h"
#include "weft/codec/http1/router.h"
#include "weft/codec/http2/client_stream.h"
#include "weft/codec/http2/server_codec.h"
#include "weft/core/awaitables.h"
#include "weft/core/executor_group.h"
#include "weft/core/loop_signal.h"
#include "weft/core/spawn.h"
#include "weft/weft.h"

using namespace std::chrono_literals;

namespace weft::streamed_routes_h2_test {

using client::ClientOptions;
using client::HttpClient;
using client::StreamedResponse;
using client::Upload;
using http::BodyReader;
using http::BodyWriter;
using http::HttpResponse;
using http::Request;

constexpr std::size_t kBody = std::size_t{2} << 20;  // past the stream's window and Settings::max_body
constexpr std::size_t kPiece = 65'521;               // a prime: pieces never line up with frames
constexpr std::size_t kChunk = 64 * 1024;            // the producer's writes
constexpr auto kWait = 60s;                          // a bound for a hang, never reached when it works

char byte_at(std::uint64_t i) { return static_cast<char>((i * 7 + 3) % 251); }
std::string pattern(std::size_t from, std::size_t n) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = byte_at(from + i);
  return s;
}
std::uint64_t fnv(std::string_view s, std::uint64_t h = 14695981039346656037ull) {
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

std::string error_name(std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const ChannelClosedError&) {
    return "ChannelClosedError";
  } catch (const http::HttpProtocolError& e) {
    return "HttpProtocolError " + std::to_string(e.status());
  } catch (const std::exception& e) {
    return std::string("other: ") + e.what();
  }
}

void note_max(std::atomic<std::size_t>& peak, std::size_t value) {
  std::size_t seen = peak.load();
  while (value > seen && !peak.compare_exchange_weak(seen, value)) {
  }
}

// What the routes saw (written on the server's loop, read by the test thread).
struct Observed {
  std::atomic<std::size_t> peak_buffered{0};  // the upload reader's peak_buffered_bytes
  std::atomic<std::size_t> peak_unsent{0};    // the download's channel pending bytes after a write
  std::atomic<std::uint64_t> upload_channel{0};
  std::atomic<std::uint64_t> plain_channel{0};
  Promise<std::string> error;  // the typed error a route or producer met, by name
  Promise<void> reading;       // the upload route has its first chunk
  std::atomic<bool> reading_set{false};
  Promise<void> released;  // /fast has answered: /hold's producer may end
  std::atomic<bool> released_set{false};
  std::mutex mutex;
  std::string trailers;  // the upload's trailer block (under mutex)
};

std::shared_ptr<http::Router> routes(Observed& seen) {
  auto router = std::make_shared<http::Router>();
  // Reads the body a chunk a loop turn, answers "<bytes> <hash>".
  router->post("/upload", [&seen](Request& request, BodyReader& body) -> Task<HttpResponse> {
    seen.upload_channel = request.channel().id();
    EventLoop& loop = request.channel().loop();
    std::uint64_t hash = fnv({});
    std::uint64_t bytes = 0;
    try {
      while (std::optional<ByteBuf> chunk = co_await body.next()) {
        if (!seen.reading_set.exchange(true)) seen.reading.set_value();
        hash = fnv(chunk->view(), hash);
        bytes += chunk->readable_bytes();
        co_await weft::next_turn(loop);
      }
    } catch (...) {
      seen.error.set_value(error_name(std::current_exception()));
      throw;
    }
    note_max(seen.peak_buffered, body.peak_buffered_bytes());
    {
      std::lock_guard lock(seen.mutex);
      seen.trailers = std::string(body.trailer_block());
    }
    co_return HttpResponse(200).body(std::to_string(bytes) + " " + std::to_string(hash));
  });
  router->post("/ignore",
               [](Request&, BodyReader&) -> Task<HttpResponse> { co_return HttpResponse(200).body_view("ignored"); });
  router->post("/limited", [](Request&, BodyReader& body) -> Task<HttpResponse> {
    body.limit(1000);
    while (co_await body.next()) {
    }
    co_return HttpResponse(200);
  });
  // /download?bytes=N[&length][&unfinished]: N bytes in kChunk writes, then the trailer x-bytes.
  router->get("/download", [&seen](Request& request) -> Task<HttpResponse> {
    const http::QueryParams query = http::QueryParams::parse(request.query()).value();
    const std::uint64_t n = std::stoull(std::string(query.get("bytes").value_or("0")));
    const bool unfinished = query.get("unfinished").has_value();
    std::optional<std::uint64_t> length;
    if (query.get("length")) length = n;
    Channel& channel = request.channel();
    co_return HttpResponse(200).stream(
        [&seen, &channel, n, unfinished](BodyWriter& body) -> Task<void> {
          try {
            for (std::uint64_t at = 0; at < n; at += kChunk) {
              if (unfinished && at >= n / 2) co_return;
              const std::size_t size = static_cast<std::size_t>(std::min<std::uint64_t>(kChunk, n - at));
              co_await body.write(ByteBuf::copy_of(pattern(at, size)));
              note_max(seen.peak_unsent, channel.pending_write_bytes());
            }
            co_await body.finish(http::HeaderBlock().add("X-Bytes", std::to_string(n)));
          } catch (...) {
            seen.error.set_value(error_name(std::current_exception()));
          }
        },
        length);
  });
  // /hold: a first chunk, then the end once /fast has answered (on the same connection).
  router->get("/hold", [&seen](Request&) -> Task<HttpResponse> {
    Future<void> released = seen.released.future();
    co_return HttpResponse(200).stream([released](BodyWriter& body) -> Task<void> {
      co_await body.write(ByteBuf::copy_of("first "));
      co_await released;
      co_await body.finish();
    });
  });
  router->get("/fast", [&seen](Request&) {
    if (!seen.released_set.exchange(true)) seen.released.set_value();
    return HttpResponse(200).body_view("fast");
  });
  router->get("/plain", [&seen](Request& request) {
    seen.plain_channel = request.channel().id();
    return HttpResponse(200).body_view("plain");
  });
  return router;
}

// Client calls made on the client's first loop: its pool holds the one HTTP/2 connection.
Task<StreamedResponse> stream_of(HttpClient& client, std::string url) { co_return co_await client.stream("GET", url); }
Task<Upload> upload_to(HttpClient& client, std::string url) { co_return client.upload("POST", url); }
Task<http::HttpClientResponse> get_of(HttpClient& client, std::string url) { co_return co_await client.get(url); }
Task<http::HttpClientResponse> head_of(HttpClient& client, std::string url) {
  co_return co_await client.request("HEAD", url);
}

// A body read to its end (or its failure), on the test thread, a chunk per wait.
struct Drained {
  std::string bytes;
  std::string error;  // empty: it ended
};
Drained drain(client::ResponseBody& body) {
  Drained d;
  for (;;) {
    Future<std::optional<ByteBuf>> next = body.next();
    if (!next.wait_for(kWait)) {
      d.error = "hang";
      return d;
    }
    if (next.error()) {
      d.error = "failed";
      return d;
    }
    std::optional<ByteBuf> chunk = next.take();
    if (!chunk) return d;
    d.bytes += chunk->view();
  }
}

enum class RouterOn { loop, executor };

class StreamedRoutesH2Test : public ::testing::TestWithParam<std::tuple<Transport*, RouterOn>> {
 protected:
  // The server's HTTP/2 settings (the defaults; a timeout test shortens request_timeout).
  virtual http2::Settings server_settings() const { return {}; }
  Transport& transport() const { return *std::get<0>(GetParam()); }
  bool blocking() const { return transport().name() == "blocking"; }

  void SetUp() override {
    servers_ = std::make_unique<EventLoopGroup>(transport(), blocking() ? 8 : 1);
    clients_ = std::make_unique<EventLoopGroup>(transport(), blocking() ? 8 : 1);
    if (std::get<1>(GetParam()) == RouterOn::executor)
      executors_.emplace(ExecutorGroup::Options{.threads = 2, .name = "h2-stream-exec"});
    std::shared_ptr<http::Router> router = routes(seen_);
    ExecutorGroup* executors = executors_ ? &*executors_ : nullptr;
    server_ = ServerBootstrap()
                  .group(*servers_)
                  .child_handler([router, executors, settings = server_settings()](Channel& ch) {
                    ch.pipeline().add_last("http2", std::make_shared<http2::ServerCodec>(settings));
                    if (executors != nullptr) {
                      ch.pipeline().add_last(*executors, "router", router);
                    } else {
                      ch.pipeline().add_last("router", router);
                    }
                  })
                  .bind(SocketAddress::loopback(0))
                  .get();
    ClientOptions options;
    options.http2_prior_knowledge = true;
    client_.emplace(*clients_, options);
  }
  void TearDown() override {
    client_.reset();
    server_->close().wait();
    clients_->shutdown_gracefully(Duration::zero(), 100ms).wait();
    servers_->shutdown_gracefully(Duration::zero(), 100ms).wait();
    if (executors_) executors_->shutdown_gracefully(Duration::zero(), 100ms).wait();
  }
  std::string url(const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(server_->local_address().port()) + path;
  }
  template <class T>
  T on_client(Task<T> task) {
    Future<T> done = spawn(clients_->at(0), std::move(task));
    EXPECT_TRUE(done.wait_for(kWait));
    return done.take();
  }
  std::string route_error() {
    Future<std::string> error = seen_.error.future();
    EXPECT_TRUE(error.wait_for(kWait));
    return error.is_done() && !error.error() ? error.get() : "none";
  }
  // GET /plain answers on the same connection as the upload (the one the client pools).
  void expect_the_connection_serves_on() {
    http::HttpClientResponse plain = on_client(get_of(*client_, url("/plain")));
    EXPECT_EQ(plain.status(), 200);
    EXPECT_EQ(plain.body().view(), "plain");
  }

  Observed seen_;
  std::unique_ptr<EventLoopGroup> servers_;
  std::unique_ptr<EventLoopGroup> clients_;
  std::optional<ExecutorGroup> executors_;
  ChannelPtr server_;
  std::optional<HttpClient> client_;
};

// 2 MiB (twice max_body, 32 stream windows) through a reader slower than the client: byte-exact,
// and never more than the stream's window buffered.
TEST_P(StreamedRoutesH2Test, AnUploadReachesASlowReaderAsItArrives) {
  Upload up = on_client(upload_to(*client_, url("/upload")));
  for (std::size_t at = 0; at < kBody; at += kPiece) {
    ASSERT_TRUE(up.body.write(ByteBuf::copy_of(pattern(at, std::min(kPiece, kBody - at)))).wait_for(kWait));
  }
  ASSERT_TRUE(up.body.finish().wait_for(kWait));
  ASSERT_TRUE(up.response.wait_for(kWait));
  StreamedResponse response = up.response.take();
  EXPECT_EQ(response.head.status(), 200);
  EXPECT_EQ(drain(response.body).bytes, std::to_string(kBody) + " " + std::to_string(fnv(pattern(0, kBody))));
  EXPECT_GT(seen_.peak_buffered.load(), 0u);
  EXPECT_LE(seen_.peak_buffered.load(), http2::Settings{}.initial_window_size);
}

// 2 MiB read a chunk per wait by the client: byte-exact, the trailer after it, and the server's
// channel never far past its high water mark (the producer waits for the windows).
TEST_P(StreamedRoutesH2Test, ADownloadLeavesAsItIsWrittenWithItsTrailers) {
  StreamedResponse response = on_client(stream_of(*client_, url("/download?bytes=" + std::to_string(kBody))));
  EXPECT_EQ(response.head.status(), 200);
  const Drained got = drain(response.body);
  EXPECT_EQ(got.error, "");
  EXPECT_EQ(got.bytes.size(), kBody);
  EXPECT_TRUE(got.bytes == pattern(0, kBody));
  EXPECT_EQ(response.body.trailers().get("x-bytes").value_or(""), std::to_string(kBody));
  EXPECT_LE(seen_.peak_unsent.load(), 256u * 1024);
}

// The client resets its stream mid-upload: the reader's next() fails with ChannelClosedError, and
// the connection serves the next stream.
TEST_P(StreamedRoutesH2Test, AResetMidUploadFailsTheReader) {
  Upload up = on_client(upload_to(*client_, url("/upload")));
  ASSERT_TRUE(up.body.write(ByteBuf::copy_of(pattern(0, 200 * 1024))).wait_for(kWait));
  ASSERT_TRUE(seen_.reading.future().wait_for(kWait));
  up.body.abandon();
  EXPECT_EQ(route_error(), "ChannelClosedError");
  expect_the_connection_serves_on();
  EXPECT_EQ(seen_.plain_channel.load(), seen_.upload_channel.load());
}

// The client resets its stream mid-download: the producer's write() fails with
// ChannelClosedError, and the connection serves the next stream.
TEST_P(StreamedRoutesH2Test, AResetMidDownloadFailsTheWriter) {
  StreamedResponse response = on_client(stream_of(*client_, url("/download?bytes=67108864")));
  Future<std::optional<ByteBuf>> first = response.body.next();
  ASSERT_TRUE(first.wait_for(kWait));
  ASSERT_FALSE(first.error());
  response.body.cancel();
  EXPECT_EQ(route_error(), "ChannelClosedError");
  expect_the_connection_serves_on();
}

// A body past the route's limit() gets 413 (max_body does not apply to a streamed body, limit() does).
TEST_P(StreamedRoutesH2Test, ABodyPastTheRoutesLimitGets413) {
  Upload up = on_client(upload_to(*client_, url("/limited")));
  (void)up.body.write(ByteBuf::copy_of(pattern(0, 5000)));
  (void)up.body.finish();
  ASSERT_TRUE(up.response.wait_for(kWait));
  EXPECT_EQ(up.response.take().head.status(), 413);
  expect_the_connection_serves_on();
}

// A route that answers without reading its body: the answer arrives, the upload ends (its writes
// complete or fail, never hang: the rest is dropped, the stream reset with NO_ERROR after the
// answer), and the connection serves on.
TEST_P(StreamedRoutesH2Test, AnUnreadBodyEndsItsStreamNotTheConnection) {
  Upload up = on_client(upload_to(*client_, url("/ignore")));
  for (std::size_t at = 0; at < 256 * 1024; at += kPiece) {
    Future<void> written = up.body.write(ByteBuf::copy_of(pattern(at, kPiece)));
    ASSERT_TRUE(written.wait_for(kWait));
    if (written.error()) break;
  }
  ASSERT_TRUE(up.response.wait_for(kWait));
  StreamedResponse response = up.response.take();
  EXPECT_EQ(response.head.status(), 200);
  EXPECT_EQ(drain(response.body).bytes, "ignored");
  up.body.abandon();
  expect_the_connection_serves_on();
}

// HEAD of a streamed GET: the head only, its content-length when the route gave one; the producer
// does not run, and the connection serves on.
TEST_P(StreamedRoutesH2Test, HeadGetsTheHeadOnly) {
  http::HttpClientResponse head = on_client(head_of(*client_, url("/download?bytes=100000&length")));
  EXPECT_EQ(head.status(), 200);
  EXPECT_EQ(head.header("content-length").value_or(""), "100000");
  EXPECT_EQ(head.body().readable_bytes(), 0u);
  expect_the_connection_serves_on();
}

// A producer that ends without finish(): the stream is reset, never a complete-looking body.
TEST_P(StreamedRoutesH2Test, AnUnfinishedBodyIsNeverASuccess) {
  StreamedResponse response = on_client(stream_of(*client_, url("/download?bytes=262144&unfinished")));
  const Drained got = drain(response.body);
  EXPECT_EQ(got.error, "failed");
  EXPECT_LT(got.bytes.size(), 262144u);
  expect_the_connection_serves_on();
}

// A streamed answer that waits is no wait for the other streams of its connection: /hold ends only
// once /fast, sent after it on the same connection, has answered.
TEST_P(StreamedRoutesH2Test, ASlowStreamedRouteDoesNotHoldTheOthers) {
  StreamedResponse held = on_client(stream_of(*client_, url("/hold")));
  Future<std::optional<ByteBuf>> first = held.body.next();
  ASSERT_TRUE(first.wait_for(kWait));
  ASSERT_FALSE(first.error());
  http::HttpClientResponse fast = on_client(get_of(*client_, url("/fast")));
  EXPECT_EQ(fast.body().view(), "fast");
  const Drained rest = drain(held.body);
  EXPECT_EQ(rest.error, "");
  std::optional<ByteBuf> head = first.take();
  ASSERT_TRUE(head.has_value());
  EXPECT_EQ(std::string(head->view()) + rest.bytes, "first ");
}

// nghttp on the wire: its upload (DATA frames, then trailing HEADERS) reaches the reader whole, with
// the trailer; its download arrives byte-exact.
TEST_P(StreamedRoutesH2Test, NghttpUploadsWithTrailersAndDownloads) {
  const std::string body = pattern(0, 1 << 20);
  char file[] = "/tmp/weft-h2-stream-XXXXXX";
  const int fd = ::mkstemp(file);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, body.data(), body.size()), static_cast<ssize_t>(body.size()));
  ::close(fd);
  int status = 0;
  const std::string uploaded = test::run_shell(
      "nghttp --no-dep -d " + std::string(file) + " --trailer 'x-checksum: yes' " + url("/upload"), status);
  ::unlink(file);
  EXPECT_EQ(status, 0);
  EXPECT_EQ(uploaded, std::to_string(body.size()) + " " + std::to_string(fnv(body)));
  {
    std::lock_guard lock(seen_.mutex);
    EXPECT_EQ(seen_.trailers, "x-checksum: yes\r\n");
  }
  const std::string downloaded = test::run_shell("nghttp --no-dep '" + url("/download?bytes=1000000") + "'", status);
  EXPECT_EQ(status, 0);
  EXPECT_EQ(downloaded.size(), 1000000u);
  EXPECT_TRUE(downloaded == pattern(0, 1000000));
}

// Settings::request_timeout for a streamed route's body: a client that stalls mid-body fails the
// reader. (That a reader leaving bytes unread is not timed is tested on a manual clock, in
// tests/codec/http2/route_body_timeout_test.cc: over a real connection it would assume the
// client's DATA arrive within the timeout, which a loaded machine does not promise.)
class StreamedRoutesH2TimeoutTest : public StreamedRoutesH2Test {
 protected:
  http2::Settings server_settings() const override {
    http2::Settings settings;
    settings.request_timeout = 200ms;
    return settings;
  }
};

// HEADERS and 1000 bytes, then nothing: the reader's next() fails with HttpProtocolError(408), which
// the route lets go: the stream is answered 408 (and reset, CANCEL), the client's next write fails,
// and the connection serves on.
TEST_P(StreamedRoutesH2TimeoutTest, AStalledUploadFailsItsReaderWith408) {
  Upload up = on_client(upload_to(*client_, url("/upload")));
  ASSERT_TRUE(up.body.write(ByteBuf::copy_of(pattern(0, 1000))).wait_for(kWait));
  EXPECT_EQ(route_error(), "HttpProtocolError 408");
  ASSERT_TRUE(up.response.wait_for(kWait));
  ASSERT_FALSE(up.response.error());
  StreamedResponse response = up.response.take();
  EXPECT_EQ(response.head.status(), 408);
  Future<void> more = up.body.write(ByteBuf::copy_of(pattern(1000, 1000)));
  ASSERT_TRUE(more.wait_for(kWait));
  EXPECT_TRUE(more.error());
  expect_the_connection_serves_on();
  EXPECT_EQ(seen_.plain_channel.load(), seen_.upload_channel.load());
}

std::string config_name(const ::testing::TestParamInfo<std::tuple<Transport*, RouterOn>>& info) {
  return std::string(std::get<0>(info.param)->name()) +
         (std::get<1>(info.param) == RouterOn::loop ? "_loop" : "_executor");
}

INSTANTIATE_TEST_SUITE_P(On, StreamedRoutesH2Test,
                         ::testing::Combine(::testing::Values(&epoll(), &io_uring(), &blocking()),
                                            ::testing::Values(RouterOn::loop, RouterOn::executor)),
                         config_name);

INSTANTIATE_TEST_SUITE_P(On, StreamedRoutesH2TimeoutTest,
                         ::testing::Combine(::testing::Values(&epoll(), &io_uring(), &blocking()),
                                            ::testing::Values(RouterOn::loop, RouterOn::executor)),
                         config_name);

}  // namespace weft::streamed_routes_h2_test
