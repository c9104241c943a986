// http::HttpClientRequest::timeout(): a request's own request timeout replaces
// ClientOptions::request_timeout, on every transport (HTTP/1.1; h2_request_timeout_test.cc uses it
// on HTTP/2). A short one fails a request the client's long one would let wait; a long one keeps a
// request alive after a request begun later, under the client's short one, has timed out -- an
// order of events, not a measured time.

#include <gtest/gtest.h>

#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "client/origin_servers.h"
#include "weft/core/spawn.h"
#include "weft/core/task.h"

namespace weft::request_own_timeout_test {

using namespace std::chrono_literals;
using client::ClientOptions;
using client::HttpClient;
using client::TimeoutError;
using http::HttpClientRequest;

// From a client loop, so that the requests share its deadlines (and their order).
Task<http::HttpClientResponse> request_task(HttpClient& client, HttpClientRequest request) {
  co_return co_await client.request(std::move(request));
}

std::optional<TimeoutError::Kind> timeout_kind(const Future<client::StreamedResponse>& f) {
  if (!f.wait_for(60s) || !f.error()) return std::nullopt;
  try {
    std::rethrow_exception(f.error());
  } catch (const TimeoutError& e) {
    return e.kind();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "failed with another error: " << e.what();
  }
  return std::nullopt;
}

class RequestOwnTimeoutTest : public test::ClientTest {};

TEST_P(RequestOwnTimeoutTest, AShortOneFailsTheRequestUnderTheClientsLongOne) {
  ChannelPtr silent = test::serve_raw(servers_, [](Context&, int) {});
  ClientOptions options;
  options.request_timeout = std::chrono::hours(1);
  options.idle_timeout = Duration::zero();
  HttpClient client(clients_, options);
  const std::string url = test::url_of(silent, "http", "/");
  EXPECT_EQ(test::timeout_kind(client.request(HttpClientRequest("GET", url).timeout(100ms))),
            TimeoutError::Kind::request);
  EXPECT_EQ(timeout_kind(client.stream(HttpClientRequest("GET", url).timeout(100ms))), TimeoutError::Kind::request);
}

TEST_P(RequestOwnTimeoutTest, ALongOneOutlivesTheClientsShortOne) {
  struct Held {
    std::mutex mutex;
    std::weak_ptr<Channel> first;  // the connection of the first request seen (its answer is held)
    Promise<void> seen;
  };
  auto held = std::make_shared<Held>();
  ChannelPtr server = test::serve_raw(servers_, [held](Context& ctx, int) {
    std::lock_guard lock(held->mutex);
    if (!held->first.expired()) return;  // any later request: never answered
    held->first = ctx.channel().shared_from_this();
    held->seen.set_value();
  });
  ClientOptions options;
  options.request_timeout = 100ms;
  options.idle_timeout = Duration::zero();
  HttpClient client(clients_, options);
  const std::string url = test::url_of(server, "http", "/");

  Future<http::HttpClientResponse> own =
      spawn(clients_.at(0), request_task(client, HttpClientRequest("GET", url).timeout(60s)));
  ASSERT_TRUE(held->seen.future().wait_for(60s));
  // Begun after it, on the same loop, under the client's timeout: this one times out first...
  Future<http::HttpClientResponse> later = spawn(clients_.at(0), request_task(client, HttpClientRequest("GET", url)));
  EXPECT_EQ(test::timeout_kind(later), TimeoutError::Kind::request);
  // ...while the one with its own long timeout still waits, and takes its answer when it comes.
  ASSERT_FALSE(own.is_done());
  ChannelPtr first;
  {
    std::lock_guard lock(held->mutex);
    first = held->first.lock();
  }
  ASSERT_NE(first, nullptr);
  first->write_and_flush(ByteBuf::copy_of("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"));
  const http::HttpClientResponse& answer = test::answer_of(own);
  EXPECT_EQ(answer.status(), 200);
  EXPECT_EQ(answer.body_view(), "ok");
}

WEFT_ON_EVERY_TRANSPORT(RequestOwnTimeoutTest);

}  // namespace weft::request_own_timeout_test
