#pragma once
// The servers the client tests talk to, all weft's own, on a kernel-chosen port of 127.0.0.1:
// HTTP/1.1 (keep-alive, or closing after every answer), h2c, h2 and HTTP/1.1 over TLS by ALPN, and
// the careless ones -- a server that never answers, one that stops in the middle of a body, one
// that drops a keep-alive connection instead of answering its second request.

#include <atomic>
#include <memory>
#include <string>

#include "support/tls_certs.h"
#include "weft/codec/http1/router.h"
#include "weft/codec/http1/server_codec.h"
#include "weft/codec/http2/server_codec.h"
#include "weft/codec/tls/tls_handler.h"
#include "weft/weft.h"

namespace weft::test {

// What the HTTP servers answer: GET /hello -> "hello"; POST /echo -> the body; GET /big -> 200,000
// bytes; GET /r/{n} -> 302 to /r/{n-1} until /r/0 -> "done"; POST /see-other -> 303 to /hello;
// GET /header/{name} -> the request's field `name`, or "none".
inline std::shared_ptr<http::Router> origin_routes(bool close_after_each) {
  auto router = std::make_shared<http::Router>();
  auto answer = [close_after_each](http::HttpResponse r) {
    if (close_after_each) r.close_connection();
    return r;
  };
  router->get("/hello",
              [answer](Context& ctx, http::HttpRequest&) { ctx.write(answer(http::HttpResponse(200).body("hello"))); });
  router->post("/echo", [answer](Context& ctx, http::HttpRequest& request) {
    ctx.write(answer(http::HttpResponse(200).body(ByteBuf::copy_of(request.body_view()))));
  });
  router->get("/big", [answer](Context& ctx, http::HttpRequest&) {
    ctx.write(answer(http::HttpResponse(200).body(std::string(200'000, 'x'))));
  });
  router->get("/r/{n}", [answer](Context& ctx, http::HttpRequest&, const http::RouteParams& params) {
    const int n = std::stoi(std::string(*params.get("n")));
    if (n == 0) {
      ctx.write(answer(http::HttpResponse(200).body("done")));
    } else {
      ctx.write(answer(http::HttpResponse(302).header("Location", "/r/" + std::to_string(n - 1))));
    }
  });
  router->get("/header/{name}", [answer](Context& ctx, http::HttpRequest& request, const http::RouteParams& params) {
    const std::optional<std::string_view> value = request.header(*params.get("name"));
    ctx.write(answer(http::HttpResponse(200).body(value ? std::string(*value) : std::string("none"))));
  });
  router->post("/see-other", [answer](Context& ctx, http::HttpRequest&) {
    ctx.write(answer(http::HttpResponse(303).header("Location", "/hello")));
  });
  return router;
}

enum class OriginKind { http1, http1_closing, h2c, h2_tls, http1_tls };

// A server of `kind` on `group`; `accepted` counts its connections.
inline ChannelPtr serve_origin(EventLoopGroup& group, OriginKind kind, std::shared_ptr<std::atomic<int>> accepted,
                               http2::Settings h2_settings = {}) {
  auto router = origin_routes(kind == OriginKind::http1_closing);
  TlsContextPtr context;
  if (kind == OriginKind::h2_tls) context = test_server_context(test_pki().localhost, {"h2"});
  if (kind == OriginKind::http1_tls) context = test_server_context(test_pki().localhost, {"http/1.1"});
  const bool h2 = kind == OriginKind::h2c || kind == OriginKind::h2_tls;
  return ServerBootstrap()
      .group(group)
      .child_handler([router, context, h2, accepted, h2_settings](Channel& ch) {
        accepted->fetch_add(1);
        if (context) ch.pipeline().add_last("tls", std::make_shared<TlsHandler>(context));
        if (h2) {
          ch.pipeline().add_last("http2", std::make_shared<http2::ServerCodec>(h2_settings));
        } else {
          ch.pipeline().add_last("http1", std::make_shared<http::ServerCodec>());
        }
        ch.pipeline().add_last("router", router);
      })
      .bind(SocketAddress::loopback(0))
      .get();
}

// Reads what comes and answers with `reply(ctx, requests_seen_so_far)` at each request head's end.
class RawServer final : public InboundHandler<ByteBuf> {
 public:
  using Reply = std::function<void(Context&, int request_number)>;
  explicit RawServer(Reply reply) : reply_(std::move(reply)) {}
  void channel_read(Context& ctx, ByteBuf&& bytes) override {
    seen_ += std::string(bytes.view());
    std::size_t end;
    while ((end = seen_.find("\r\n\r\n")) != std::string::npos) {
      seen_.erase(0, end + 4);
      reply_(ctx, ++requests_);
    }
  }

 private:
  Reply reply_;
  std::string seen_;
  int requests_ = 0;
};

inline ChannelPtr serve_raw(EventLoopGroup& group, RawServer::Reply reply) {
  return ServerBootstrap()
      .group(group)
      .child_handler([reply](Channel& ch) { ch.pipeline().add_last("raw", std::make_shared<RawServer>(reply)); })
      .bind(SocketAddress::loopback(0))
      .get();
}

inline std::string url_of(const ChannelPtr& server, const char* scheme, const std::string& path) {
  return std::string(scheme) + "://127.0.0.1:" + std::to_string(server->local_address().port()) + path;
}

}  // namespace weft::test

#include <gtest/gtest.h>

#include <chrono>

#include "support/transports.h"
#include "weft/client/http_client.h"

namespace weft::test {

// Servers and clients on groups of their own, on each transport (blocking: a loop per channel).
class ClientTest : public TransportTest {
 protected:
  // Blocking: every client loop's pool may keep a connection to the server, and closed ones linger
  // a moment, so the server has more loops than the client.
  EventLoopGroup servers_{transport(), loops(1, 160)};
  EventLoopGroup clients_{transport(), loops(2, 96)};
  std::shared_ptr<std::atomic<int>> accepted_ = std::make_shared<std::atomic<int>>(0);
};

// The response, once the future completes (a bounded wait turns a hang into a failure).
inline const http::HttpClientResponse& answer_of(const Future<http::HttpClientResponse>& f) {
  if (!f.wait_for(std::chrono::seconds(60))) throw std::runtime_error("no answer within 60 s");
  return f.get();
}

// The failure of `f` as an E; a failure of another type, or a success, fails the test.
template <class E>
std::string failure_of(const Future<http::HttpClientResponse>& f, const E** out = nullptr) {
  if (!f.wait_for(std::chrono::seconds(60))) {
    ADD_FAILURE() << "no answer within 60 s";
    return {};
  }
  if (!f.error()) {
    ADD_FAILURE() << "succeeded with status " << f.get().status();
    return {};
  }
  try {
    std::rethrow_exception(f.error());
  } catch (const E& e) {
    if (out != nullptr) *out = &e;
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "failed with another error: " << e.what();
  }
  return {};
}

// The kind of TimeoutError `f` failed with.
inline std::optional<client::TimeoutError::Kind> timeout_kind(const Future<http::HttpClientResponse>& f) {
  if (!f.wait_for(std::chrono::seconds(60)) || !f.error()) return std::nullopt;
  try {
    std::rethrow_exception(f.error());
  } catch (const client::TimeoutError& e) {
    return e.kind();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "failed with another error: " << e.what();
  }
  return std::nullopt;
}

}  // namespace weft::test
