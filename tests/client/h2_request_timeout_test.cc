// client::HttpClient's request timeout on HTTP/2 (h2c), on every transport, against a server that
// never answers and allows one stream at a time (SETTINGS_MAX_CONCURRENT_STREAMS 1): a whole
// answer, then a streamed one, fail with TimeoutError request, each of their streams is reset
// (RST_STREAM(CANCEL)), which frees the server's one slot, and the next request on the same
// connection is served. The two given up have a short timeout of their own
// (HttpClientRequest::timeout); the served one has the client's long one, so that no deadline
// races its round trip.

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "client/origin_servers.h"
#include "support/h2_frames.h"
#include "support/h2_scripted_server.h"
#include "weft/core/spawn.h"
#include "weft/core/task.h"

namespace weft::h2_request_timeout_test {

using namespace std::chrono_literals;
using client::ClientOptions;
using client::HttpClient;
using test::frame;

constexpr std::uint32_t kWhole = 1;     // the first request on the connection: no answer
constexpr std::uint32_t kStreamed = 3;  // the second: no answer either
constexpr std::uint32_t kCancel = 0x8;

// One stream at a time; the first two requests get nothing, later ones 200 (HPACK: :status 200
// indexed) and END_STREAM.
test::ScriptedH2Script one_slot_script() {
  test::ScriptedH2Script script;
  script.greeting = frame(NGHTTP2_SETTINGS, 0, 0, test::setting(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 1));
  script.answer = [](std::uint32_t stream) {
    if (stream <= kStreamed) return std::string();
    return frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS | NGHTTP2_FLAG_END_STREAM, stream, std::string("\x88"));
  };
  return script;
}

// From the first client loop, so that the requests share its pool (and its one connection).
Task<http::HttpClientResponse> get_task(HttpClient& client, http::HttpClientRequest request) {
  co_return co_await client.request(std::move(request));
}
Task<client::StreamedResponse> stream_task(HttpClient& client, http::HttpClientRequest request) {
  co_return co_await client.stream(std::move(request));
}

std::optional<client::TimeoutError::Kind> timeout_kind(const std::exception_ptr& error) {
  try {
    if (error) std::rethrow_exception(error);
  } catch (const client::TimeoutError& e) {
    return e.kind();
  } catch (...) {
  }
  return std::nullopt;
}

class Http2RequestTimeoutTest : public test::ClientTest {};

TEST_P(Http2RequestTimeoutTest, TimedOutStreamIsResetAndItsSlotServesTheNextRequest) {
  auto log = std::make_shared<test::ScriptedH2Log>();
  ChannelPtr server = test::serve_scripted_h2(servers_, false, one_slot_script(), log);
  ClientOptions options;
  options.http2_prior_knowledge = true;
  options.idle_timeout = Duration::zero();  // only the request timeout may end the unanswered streams
  options.request_timeout = 60s;            // the served request's (the others have their own)
  options.max_connections_per_origin = 1;
  HttpClient client(clients_, options);
  const std::string url = test::url_of(server, "http", "/never");
  auto given_up = [&url] { return http::HttpClientRequest("GET", url).timeout(200ms); };

  Future<http::HttpClientResponse> whole = spawn(clients_.at(0), get_task(client, given_up()));
  ASSERT_TRUE(whole.wait_for(60s));
  EXPECT_EQ(timeout_kind(whole.error()), client::TimeoutError::Kind::request);
  ASSERT_TRUE(log->wait_for(60s, [](const test::ScriptedH2Seen& s) { return s.resets.count(kWhole) > 0; }))
      << "the timed-out request's stream was never reset";

  Future<client::StreamedResponse> streamed = spawn(clients_.at(0), stream_task(client, given_up()));
  ASSERT_TRUE(streamed.wait_for(60s));
  EXPECT_EQ(timeout_kind(streamed.error()), client::TimeoutError::Kind::request);
  ASSERT_TRUE(log->wait_for(60s, [](const test::ScriptedH2Seen& s) { return s.resets.count(kStreamed) > 0; }))
      << "the timed-out streamed request's stream was never reset";

  // The server's one slot is free again: the next request is a stream on the same connection.
  Future<http::HttpClientResponse> next = spawn(clients_.at(0), get_task(client, http::HttpClientRequest("GET", url)));
  EXPECT_EQ(test::answer_of(next).status(), 200);
  const test::ScriptedH2Seen seen = log->snapshot();
  EXPECT_EQ(seen.resets.at(kWhole), kCancel);
  EXPECT_EQ(seen.resets.at(kStreamed), kCancel);
  EXPECT_EQ(seen.count(NGHTTP2_HEADERS), 3u);
  EXPECT_FALSE(seen.goaway.has_value());
  EXPECT_FALSE(seen.closed);
  EXPECT_EQ(client.stats().connections_opened, 1u);
}

WEFT_ON_EVERY_TRANSPORT(Http2RequestTimeoutTest);

}  // namespace weft::h2_request_timeout_test
