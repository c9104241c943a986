// client::HttpClient::stream on every transport, over HTTP/1.1 (content-length, chunked,
// close-delimited), h2c and h2 over TLS: a large body read as it comes, every byte checked, the
// client's memory bounded while it is read (release: 64 MiB, RSS within +16 MiB); trailers; a
// server that stalls mid-body (the idle timeout fires, typed); one that closes or resets mid-body
// (a typed failure, never a truncated success); the reader cancelling mid-body (HTTP/1.1: the
// connection is not reused; HTTP/2: the stream is reset, its connection serves the next request).

#include <gtest/gtest.h>

#include <atomic>
#include <string>

#include "client/origin_servers.h"
#include "support/blocking_client.h"
#include "support/resident_memory.h"
#include "support/sanitizers.h"
#include "weft/codec/http2/stream_channel.h"
#include "weft/core/spawn.h"
#include "weft/core/task.h"

namespace weft {
namespace {

using client::ClientOptions;
using client::HttpClient;
using client::ResponseBody;
using client::StreamedResponse;

#if defined(WEFT_TEST_SANITIZED)
constexpr std::size_t kLarge = std::size_t{4} << 20;
constexpr bool kMeasureRss = false;  // the sanitizers' own allocations make RSS meaningless
#else
constexpr std::size_t kLarge = std::size_t{64} << 20;
constexpr bool kMeasureRss = true;
#endif
constexpr std::size_t kSmall = std::size_t{1} << 20;

// Every body the servers send is the same pattern, of period kPeriod: built of slices of one block
// (a whole number of periods), so that a 64 MiB body costs the servers no memory.
constexpr std::size_t kPeriod = 71;
constexpr std::size_t kBlock = kPeriod * 923;  // 65,533 bytes

// The pattern from its start: a block and one period more, for checking bytes at any offset.
std::string_view reference() {
  static const std::string bytes = [] {
    std::string s(kBlock + kPeriod, '\0');
    for (std::size_t i = 0; i < s.size(); ++i) s[i] = static_cast<char>('0' + i % kPeriod);
    return s;
  }();
  return bytes;
}

// Whether `bytes` are the pattern's from offset `at`.
bool matches(std::string_view bytes, std::size_t at) {
  while (!bytes.empty()) {
    const std::size_t n = std::min(bytes.size(), kBlock);
    if (bytes.substr(0, n) != reference().substr(at % kPeriod, n)) return false;
    bytes.remove_prefix(n);
    at += n;
  }
  return true;
}

// What the servers keep across connections: the block (sent by reference) and what they saw.
struct Bodies {
  explicit Bodies(std::size_t large_size) : large(large_size) {}
  const std::size_t large;
  ByteBuf block = ByteBuf::copy_of(reference().substr(0, kBlock));
  std::atomic<int> connections{0};
  std::atomic<int> resets{0};  // HTTP/2 streams the client reset

  // The first `n` bytes of the pattern, as slices of at most a block each, to `write`.
  template <class F>
  void pieces(std::size_t n, F&& write) const {
    for (std::size_t at = 0; at < n; at += kBlock) write(block.slice(block.reader_index(), std::min(kBlock, n - at)));
  }
};

// HTTP/1.1, by the request line's path: /large and /small (Content-Length), /chunked (64 KiB chunks
// and a trailer), /bytewise (a chunked body a byte at a time), /close (no framing: the close ends it), /stall (1 MiB
// declared, 1,000 bytes sent, then nothing), /partial (1 MiB declared, 64 KiB sent, then the connection closes); else
// "ok".
class Http1Bodies final : public InboundHandler<ByteBuf> {
 public:
  explicit Http1Bodies(std::shared_ptr<Bodies> bodies) : bodies_(std::move(bodies)) {}
  void channel_read(Context& ctx, ByteBuf&& bytes) override {
    seen_ += std::string(bytes.view());
    std::size_t end;
    while ((end = seen_.find("\r\n\r\n")) != std::string::npos) {
      const std::string line = seen_.substr(0, seen_.find("\r\n"));
      seen_.erase(0, end + 4);
      answer(ctx, line.substr(line.find(' ') + 1, line.rfind(' ') - line.find(' ') - 1));
    }
  }

 private:
  void answer(Context& ctx, const std::string& path) {
    auto head = [&](const std::string& fields) {
      ctx.write(ByteBuf::copy_of("HTTP/1.1 200 OK\r\n" + fields + "\r\n"));
    };
    auto write = [&](ByteBuf piece) { ctx.write(std::move(piece)); };
    if (path == "/large" || path == "/small") {
      const std::size_t n = path == "/large" ? bodies_->large : kSmall;
      head("Content-Length: " + std::to_string(n) + "\r\n");
      bodies_->pieces(n, write);
      ctx.flush();
    } else if (path == "/chunked") {
      head("Transfer-Encoding: chunked\r\n");
      bodies_->pieces(kSmall, [&](ByteBuf piece) {
        char size[32];
        std::snprintf(size, sizeof size, "%zx\r\n", piece.readable_bytes());
        ctx.write(ByteBuf::copy_of(size));
        ctx.write(std::move(piece));
        ctx.write(ByteBuf::copy_of("\r\n"));
      });
      ctx.write_and_flush(ByteBuf::copy_of("0\r\nX-Total: 1048576\r\n\r\n"));
    } else if (path == "/bytewise") {
      // Chunked, a byte at a time: chunk lines, data, CRLFs and trailers each split everywhere.
      std::string all = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
      for (std::size_t at = 0; at < 300; at += 100)
        all += "64;ext=1\r\n" + std::string(reference().substr(at % kPeriod, 100)) + "\r\n";
      all += "0\r\nX-Total: 300\r\n\r\n";
      for (char c : all) ctx.write_and_flush(ByteBuf::copy_of(std::string_view(&c, 1)));
    } else if (path == "/close") {
      head("Connection: close\r\n");
      bodies_->pieces(kSmall, write);
      ctx.flush();
      ctx.channel().close_after_flush();
    } else if (path == "/stall" || path == "/partial") {
      head("Content-Length: " + std::to_string(kSmall) + "\r\n");
      bodies_->pieces(path == "/stall" ? 1000 : 65536, write);
      ctx.flush();
      if (path == "/partial") ctx.channel().close_after_flush();
    } else {
      ctx.write_and_flush(ByteBuf::copy_of("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"));
    }
  }

  void exception_caught(Context&, std::exception_ptr) override {}  // a client that let go resets

  std::shared_ptr<Bodies> bodies_;
  std::string seen_;
};

// HTTP/2, each stream a channel: /large, /small (with a trailer x-total), /stall, /partial (64 KiB,
// then the stream is reset); else "ok". Counts the streams the client reset.
class Http2Bodies final : public InboundHandler<http2::StreamMessage> {
 public:
  explicit Http2Bodies(std::shared_ptr<Bodies> bodies) : bodies_(std::move(bodies)) {}
  void channel_read(Context& ctx, http2::StreamMessage&& message) override {
    const auto* head = std::get_if<http2::StreamHeaders>(&message);
    if (head == nullptr) return;
    const std::string path(head->request.path());
    ctx.write(http2::ResponseHeaders{http::HttpResponse(200), false});
    auto write = [&](ByteBuf piece) { ctx.write(http2::StreamData{std::move(piece), false}); };
    if (path == "/large") {
      bodies_->pieces(bodies_->large, write);
      ctx.write_and_flush(http2::StreamData{ByteBuf(), true});
    } else if (path == "/small") {
      bodies_->pieces(kSmall, write);
      ctx.write_and_flush(http2::StreamTrailers{http2::Fields().add("x-total", std::to_string(kSmall))});
    } else if (path == "/stall" || path == "/partial") {
      bodies_->pieces(path == "/stall" ? 1000 : 65536, write);
      ctx.flush();
      if (path == "/partial") ctx.channel().close();  // before the end: RST_STREAM
    } else {
      ctx.write_and_flush(http2::StreamData{ByteBuf::copy_of("ok"), true});
    }
  }
  void exception_caught(Context&, std::exception_ptr error) override {
    try {
      std::rethrow_exception(error);
    } catch (const http2::StreamResetError&) {
      bodies_->resets.fetch_add(1);
    } catch (...) {
    }
  }

 private:
  std::shared_ptr<Bodies> bodies_;
};

enum class Protocol { http1, h2c, h2_tls };

const char* name_of(Protocol p) { return p == Protocol::http1 ? "http1" : p == Protocol::h2c ? "h2c" : "h2_tls"; }

ChannelPtr serve_bodies(EventLoopGroup& group, Protocol protocol, std::shared_ptr<Bodies> bodies) {
  TlsContextPtr context;
  if (protocol == Protocol::h2_tls) context = test::test_server_context(test::test_pki().localhost, {"h2"});
  return ServerBootstrap()
      .group(group)
      .child_handler([protocol, bodies, context](Channel& ch) {
        bodies->connections.fetch_add(1);
        if (protocol == Protocol::http1) {
          ch.pipeline().add_last("bodies", std::make_shared<Http1Bodies>(bodies));
          return;
        }
        if (context) ch.pipeline().add_last("tls", std::make_shared<TlsHandler>(context));
        http2::Settings settings;
        settings.stream_initializer = [bodies](const http::RequestHead&) -> http2::StreamInitializer {
          return [bodies](http2::StreamChannel& stream) {
            stream.pipeline().add_last("bodies", std::make_shared<Http2Bodies>(bodies));
          };
        };
        ch.pipeline().add_last("http2", std::make_shared<http2::ServerCodec>(settings));
      })
      .bind(SocketAddress::loopback(0))
      .get();
}

ClientOptions options_for(Protocol protocol) {
  ClientOptions options;
  options.http2_prior_knowledge = protocol == Protocol::h2c;
  if (protocol == Protocol::h2_tls) {
    options.tls = TlsContext::client().trust_pem(test::test_pki().ca.cert_pem).application_protocols({"h2"}).build();
  }
  return options;
}

std::string url_for(const ChannelPtr& server, Protocol protocol, const std::string& path) {
  return test::url_of(server, protocol == Protocol::h2_tls ? "https" : "http", path);
}

template <class T>
T await_value(const Future<T>& f) {
  if (!f.wait_for(std::chrono::seconds(60))) throw std::runtime_error("no answer within 60 s");
  return f.take();
}

// Reads `body` to its end from this thread, checking every byte against the pattern; the count.
std::size_t read_checked(ResponseBody& body) {
  std::size_t at = 0;
  while (std::optional<ByteBuf> chunk = await_value(body.next())) {
    const std::string_view bytes = chunk->view();
    if (!matches(bytes, at)) {
      ADD_FAILURE() << "the bytes from " << at << " differ";
      return at;
    }
    at += bytes.size();
  }
  return at;
}

Task<StreamedResponse> stream_task(HttpClient& client, std::string url) {
  co_return co_await client.stream("GET", url);
}

// From `loop`, so that the requests made there share its pool.
StreamedResponse stream_from(EventLoop& loop, HttpClient& client, const std::string& url) {
  return await_value(spawn(loop, stream_task(client, url)));
}

// The failure of the body's next() calls, read to the end, as an E.
template <class E>
bool body_fails_with(ResponseBody& body, std::size_t* read = nullptr) {
  std::size_t n = 0;
  try {
    while (std::optional<ByteBuf> chunk = await_value(body.next())) n += chunk->readable_bytes();
  } catch (const E&) {
    if (read != nullptr) *read = n;
    return true;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "failed otherwise: " << e.what();
    return false;
  }
  ADD_FAILURE() << "ended as a success after " << n << " bytes";
  return false;
}

class StreamedBodyTest : public test::ClientTest {
 protected:
  // /large: past every bound of the client's buffering (the 64 MiB one has its own test).
  std::shared_ptr<Bodies> bodies_ = std::make_shared<Bodies>(4 * kSmall);
};

TEST_P(StreamedBodyTest, LargeBodyReadAsItComesIsExactAndBounded) {
  bodies_ = std::make_shared<Bodies>(kLarge);
  for (Protocol protocol : {Protocol::http1, Protocol::h2c}) {
    SCOPED_TRACE(name_of(protocol));
    ChannelPtr server = serve_bodies(servers_, protocol, bodies_);
    HttpClient client(clients_, options_for(protocol));
    const std::size_t before = test::resident_bytes();
    StreamedResponse r = await_value(client.stream("GET", url_for(server, protocol, "/large")));
    EXPECT_EQ(r.head.status(), 200);
    EXPECT_TRUE(r.head.body_view().empty());
    EXPECT_EQ(read_checked(r.body), kLarge);
    const std::size_t after = test::resident_bytes();
    if (kMeasureRss && before > 0 && after > before) {
      EXPECT_LE(after - before, std::size_t{16} << 20) << "the body was buffered, not streamed";
    }
    server->close().wait();
  }
}

TEST_P(StreamedBodyTest, EveryFramingAndTrailers) {
  {
    ChannelPtr server = serve_bodies(servers_, Protocol::http1, bodies_);
    HttpClient client(clients_);
    for (const char* path : {"/small", "/chunked", "/close"}) {
      SCOPED_TRACE(path);
      StreamedResponse r = stream_from(clients_.at(0), client, url_for(server, Protocol::http1, path));
      EXPECT_EQ(read_checked(r.body), kSmall);
      EXPECT_EQ(r.body.trailers().get("x-total").value_or(""), std::string(path) == "/chunked" ? "1048576" : "");
    }
    // The keep-alive connection served every body but the last, which closed it.
    EXPECT_EQ(client.stats().connections_opened, 1u);
    EXPECT_EQ(client.stats().connections_reused, 2u);
    StreamedResponse r = stream_from(clients_.at(0), client, url_for(server, Protocol::http1, "/bytewise"));
    EXPECT_EQ(read_checked(r.body), 300u);
    EXPECT_EQ(r.body.trailers().get("x-total").value_or(""), "300");
    server->close().wait();
  }
  for (Protocol protocol : {Protocol::h2c, Protocol::h2_tls}) {
    SCOPED_TRACE(name_of(protocol));
    ChannelPtr server = serve_bodies(servers_, protocol, bodies_);
    HttpClient client(clients_, options_for(protocol));
    StreamedResponse r = await_value(client.stream("GET", url_for(server, protocol, "/small")));
    EXPECT_EQ(read_checked(r.body), kSmall);
    EXPECT_EQ(r.body.trailers().get("x-total").value_or(""), std::to_string(kSmall));
    server->close().wait();
  }
}

TEST_P(StreamedBodyTest, ServerStallingMidBodyFiresTheIdleTimeout) {
  for (Protocol protocol : {Protocol::http1, Protocol::h2c}) {
    SCOPED_TRACE(name_of(protocol));
    ChannelPtr server = serve_bodies(servers_, protocol, bodies_);
    ClientOptions options = options_for(protocol);
    options.idle_timeout = std::chrono::milliseconds(100);
    HttpClient client(clients_, options);
    StreamedResponse r = await_value(client.stream("GET", url_for(server, protocol, "/stall")));
    try {
      while (await_value(r.body.next())) {
      }
      ADD_FAILURE() << "a stalled body ended as a success";
    } catch (const client::TimeoutError& e) {
      EXPECT_EQ(e.kind(), client::TimeoutError::Kind::idle);
    }
    server->close().wait();
  }
}

TEST_P(StreamedBodyTest, ServerClosingOrResettingMidBodyFailsTyped) {
  {
    ChannelPtr server = serve_bodies(servers_, Protocol::http1, bodies_);
    HttpClient client(clients_);
    StreamedResponse r = await_value(client.stream("GET", url_for(server, Protocol::http1, "/partial")));
    std::size_t read = 0;
    EXPECT_TRUE(body_fails_with<ChannelClosedError>(r.body, &read));
    EXPECT_LT(read, kSmall);
    server->close().wait();
  }
  ChannelPtr server = serve_bodies(servers_, Protocol::h2c, bodies_);
  HttpClient client(clients_, options_for(Protocol::h2c));
  StreamedResponse r = await_value(client.stream("GET", url_for(server, Protocol::h2c, "/partial")));
  EXPECT_TRUE(body_fails_with<http2::ClientStreamError>(r.body));
}

TEST_P(StreamedBodyTest, ReaderCancellingMidBody) {
  {
    ChannelPtr server = serve_bodies(servers_, Protocol::http1, bodies_);
    ClientOptions options;
    options.max_connections_per_origin = 1;
    HttpClient client(clients_, options);
    const std::string url = url_for(server, Protocol::http1, "/large");
    StreamedResponse r = stream_from(clients_.at(0), client, url);
    ASSERT_TRUE(await_value(r.body.next()).has_value());
    r.body.cancel();
    EXPECT_TRUE(body_fails_with<client::ClientClosedError>(r.body));
    // Its unread bytes are not taken for the next answer: a new connection serves it.
    StreamedResponse next = stream_from(clients_.at(0), client, url_for(server, Protocol::http1, "/small"));
    EXPECT_EQ(read_checked(next.body), kSmall);
    EXPECT_EQ(client.stats().connections_opened, 2u);
    EXPECT_EQ(client.stats().connections_reused, 0u);
    server->close().wait();
  }
  for (Protocol protocol : {Protocol::h2c, Protocol::h2_tls}) {
    SCOPED_TRACE(name_of(protocol));
    ChannelPtr server = serve_bodies(servers_, protocol, bodies_);
    const int resets = bodies_->resets.load();
    HttpClient client(clients_, options_for(protocol));
    {
      StreamedResponse r = stream_from(clients_.at(0), client, url_for(server, protocol, "/large"));
      ASSERT_TRUE(await_value(r.body.next()).has_value());
    }  // dropped mid-body: RST_STREAM(CANCEL)
    EXPECT_TRUE(test::eventually([&] { return bodies_->resets.load() == resets + 1; }, std::chrono::seconds(60)));
    // The connection goes on: the next request is a stream on it.
    StreamedResponse next = stream_from(clients_.at(0), client, url_for(server, protocol, "/small"));
    EXPECT_EQ(read_checked(next.body), kSmall);
    EXPECT_EQ(client.stats().connections_opened, 1u);
    server->close().wait();
  }
}

WEFT_ON_EVERY_TRANSPORT(StreamedBodyTest);

}  // namespace
}  // namespace weft
