// client::HttpClient::upload over h2c against a server that never opens its flow-control window
// for the request's DATA (SETTINGS_INITIAL_WINDOW_SIZE 0, no WINDOW_UPDATE), on every transport:
// the client queues at most ClientSettings::max_buffered_upload and then its writer waits; with no
// answer, the idle timeout ends the upload (TimeoutError idle, RST_STREAM(CANCEL)); with an early
// answer (413 and END_STREAM), the stream ends at once (RST_STREAM(NO_ERROR), the waiting write
// fails answered, the 413 is delivered). Either way the connection serves the next request.

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "client/origin_servers.h"
#include "support/h2_frames.h"
#include "support/h2_scripted_server.h"
#include "weft/core/spawn.h"
#include "weft/core/task.h"

namespace weft::h2_upload_window_test {

using namespace std::chrono_literals;
using client::ClientOptions;
using client::HttpClient;
using client::RequestBodyError;
using client::StreamedResponse;
using client::Upload;
using test::frame;

constexpr std::uint32_t kUploadStream = 1;  // the first request on the connection
constexpr std::uint32_t kCancel = 0x8;
constexpr std::uint32_t kNoError = 0x0;
constexpr std::size_t kChunk = 16 * 1024;

// HEADERS (END_HEADERS, END_STREAM) with :status `status` (HPACK: 200 indexed, others a literal
// with the static name :status).
std::string answer_head(std::uint32_t stream, int status) {
  const std::string block = status == 200 ? std::string("\x88") : std::string("\x08\x03") + std::to_string(status);
  return frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS | NGHTTP2_FLAG_END_STREAM, stream, block);
}

// A server whose windows for the client's DATA stay closed. The upload (stream 1) gets no answer
// of its own; every later request is answered 200, and with `answer_upload` the first of them also
// answers the upload: `answer_upload` and END_STREAM.
test::ScriptedH2Script closed_window_script(int answer_upload) {
  test::ScriptedH2Script script;
  script.greeting = frame(NGHTTP2_SETTINGS, 0, 0, test::setting(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 0));
  script.answer = [answer_upload](std::uint32_t stream) {
    if (stream == kUploadStream) return std::string();
    std::string out;
    if (answer_upload != 0 && stream == kUploadStream + 2) out += answer_head(kUploadStream, answer_upload);
    return out + answer_head(stream, 200);
  };
  return script;
}

Task<Upload> upload_task(HttpClient& client, std::string url) { co_return client.upload("POST", url); }
Task<http::HttpClientResponse> get_task(HttpClient& client, std::string url) { co_return co_await client.get(url); }

template <class E>
const E* error_as(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const E& e) {
    return &e;
  } catch (...) {
  }
  return nullptr;
}

class Http2UploadWindowTest : public test::ClientTest {
 protected:
  // From the first client loop, so that the requests share its pool (and its one connection).
  Upload upload_from_one_loop(HttpClient& client, const std::string& url) {
    Future<Upload> f = spawn(clients_.at(0), upload_task(client, url));
    if (!f.wait_for(60s)) throw std::runtime_error("no upload within 60 s");
    return f.take();
  }
  Future<http::HttpClientResponse> get_from_one_loop(HttpClient& client, const std::string& url) {
    return spawn(clients_.at(0), get_task(client, url));
  }
  // Writes chunks until one is not taken at once; returns the bytes taken and that write.
  std::size_t fill(Upload& up, Future<void>& waiting) {
    const ByteBuf chunk = ByteBuf::copy_of(std::string(kChunk, 'u'));
    std::size_t accepted = 0;
    // Past the codec's bound a write must wait: a write taken beyond it means the bound failed.
    const std::size_t bound = http2::ClientSettings{}.max_buffered_upload;
    for (;;) {
      waiting = up.body.write(chunk.slice());
      if (accepted + kChunk > bound) return accepted;
      if (!waiting.wait_for(60s)) throw std::runtime_error("a write within the bound waited");
      waiting.get();
      accepted += kChunk;
    }
  }
};

TEST_P(Http2UploadWindowTest, ClosedWindowUploadTimesOutIdleBoundedAndTheConnectionServes) {
  auto log = std::make_shared<test::ScriptedH2Log>();
  ChannelPtr server = test::serve_scripted_h2(servers_, false, closed_window_script(0), log);
  ClientOptions options;
  options.http2_prior_knowledge = true;
  options.idle_timeout = 150ms;
  options.request_timeout = 30s;  // without the window's idle timer: the writer waits this long
  HttpClient client(clients_, options);
  Upload up = upload_from_one_loop(client, test::url_of(server, "http", "/upload"));
  Future<void> waiting;
  const std::size_t accepted = fill(up, waiting);
  EXPECT_EQ(accepted, http2::ClientSettings{}.max_buffered_upload);
  ASSERT_TRUE(waiting.wait_for(60s)) << "the write waiting on the closed window never ended";
  const auto* write_timeout = error_as<client::TimeoutError>(waiting.error());
  ASSERT_NE(write_timeout, nullptr) << error_as<std::exception>(waiting.error())->what();
  EXPECT_EQ(write_timeout->kind(), client::TimeoutError::Kind::idle);
  ASSERT_TRUE(up.response.wait_for(60s));
  const auto* response_timeout = error_as<client::TimeoutError>(up.response.error());
  ASSERT_NE(response_timeout, nullptr);
  EXPECT_EQ(response_timeout->kind(), client::TimeoutError::Kind::idle);
  ASSERT_TRUE(log->wait_for(60s, [](const test::ScriptedH2Seen& s) { return s.resets.count(kUploadStream) > 0; }));
  // The connection goes on: the next request is a stream on it.
  EXPECT_EQ(test::answer_of(get_from_one_loop(client, test::url_of(server, "http", "/next"))).status(), 200);
  const test::ScriptedH2Seen seen = log->snapshot();
  EXPECT_EQ(seen.resets.at(kUploadStream), kCancel);
  EXPECT_EQ(seen.count(NGHTTP2_DATA, kUploadStream), 0u) << "DATA beyond a window of 0";
  EXPECT_FALSE(seen.goaway.has_value());
  EXPECT_EQ(client.stats().connections_opened, 1u);
}

TEST_P(Http2UploadWindowTest, EarlyAnswerEndsTheStreamWhileTheWriterWaitsOnAClosedWindow) {
  auto log = std::make_shared<test::ScriptedH2Log>();
  ChannelPtr server = test::serve_scripted_h2(servers_, false, closed_window_script(413), log);
  ClientOptions options;
  options.http2_prior_knowledge = true;
  options.idle_timeout = Duration::zero();  // nothing but the answer may end the waiting write
  options.request_timeout = Duration::zero();
  HttpClient client(clients_, options);
  Upload up = upload_from_one_loop(client, test::url_of(server, "http", "/upload"));
  Future<void> waiting;
  fill(up, waiting);
  // The next request's answer carries the upload's: 413 and END_STREAM, the window still closed.
  EXPECT_EQ(test::answer_of(get_from_one_loop(client, test::url_of(server, "http", "/next"))).status(), 200);
  ASSERT_TRUE(waiting.wait_for(60s)) << "the write waiting on the closed window outlived the answer";
  const auto* body_error = error_as<RequestBodyError>(waiting.error());
  ASSERT_NE(body_error, nullptr);
  EXPECT_EQ(body_error->kind(), RequestBodyError::Kind::answered);
  ASSERT_TRUE(up.response.wait_for(60s));
  StreamedResponse r = up.response.take();
  EXPECT_EQ(r.head.status(), 413);
  Future<std::optional<ByteBuf>> end = r.body.next();
  ASSERT_TRUE(end.wait_for(60s));
  EXPECT_FALSE(end.take().has_value());
  ASSERT_TRUE(log->wait_for(60s, [](const test::ScriptedH2Seen& s) { return s.resets.count(kUploadStream) > 0; }));
  // Later writes fail at once, typed.
  Future<void> later = up.body.write(ByteBuf::copy_of("more"));
  ASSERT_TRUE(later.wait_for(60s));
  EXPECT_NE(error_as<RequestBodyError>(later.error()), nullptr);
  const test::ScriptedH2Seen seen = log->snapshot();
  EXPECT_EQ(seen.resets.at(kUploadStream), kNoError);
  EXPECT_EQ(seen.count(NGHTTP2_DATA, kUploadStream), 0u);
  EXPECT_FALSE(seen.goaway.has_value());
  EXPECT_EQ(client.stats().connections_opened, 1u);
}

WEFT_ON_EVERY_TRANSPORT(Http2UploadWindowTest);

}  // namespace weft::h2_upload_window_test
