// OriginConnection over HTTP/2 (h2 by ALPN, h2c by prior knowledge): requests are streams, up to
// the server's SETTINGS_MAX_CONCURRENT_STREAMS at once.

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "body_stream.h"
#include "exchange.h"
#include "origin_connection.h"
#include "origin_pool.h"
#include "tunnel_opener.h"
#include "upload_stream.h"
#include "weft/client/client_errors.h"
#include "weft/codec/http2/client_codec.h"
#include "weft/core/spawn.h"
#include "weft/core/task.h"

namespace weft::client::detail {
namespace {

// After the codec: its exception events are the failures of the requests it fails (each request
// learns its own), so they end here instead of in a warning from the pipeline's tail.
class CodecFailures final : public Handler {
 public:
  void exception_caught(Context&, std::exception_ptr) override {}
};

}  // namespace

void OriginConnection::install_http2(Channel& ch) {
  http2::ClientSettings settings;
  settings.max_response_body = options_.max_response_body;
  settings.stream_idle_timeout = options_.idle_timeout;  // whole answers; streamed ones time their body
  settings.authority = origin_.authority();
  settings.scheme = std::string(origin_.scheme_name());
  auto codec = std::make_shared<http2::ClientCodec>(settings);
  ChannelPtr channel = ch.shared_from_this();
  auto connection = std::make_shared<Http2Connection>(channel, codec);
  ch.pipeline().add_last("http2", codec);
  ch.pipeline().add_last("failures", std::make_shared<CodecFailures>());
  auto self = std::static_pointer_cast<OriginConnection>(shared_from_this());
  // Both listeners run on the channel's loop (the codec's promises are its loop's).
  codec->ready().add_listener([self, connection, channel](const Future<void>& settled) {
    if (auto error = settled.error()) {
      self->report_failure(channel, error);
      return;
    }
    const std::size_t limit = connection->codec().peer_max_concurrent_streams();
    self->on_pool_loop([self, connection, channel, limit]() mutable {
      Early report;
      report.channel = std::move(channel);
      report.capacity = limit;
      report.http2 = true;
      report.h2 = std::move(connection);
      self->attempt_ready(std::move(report));
    });
  });
  const Channel* raw = &ch;  // compared only: capturing the channel in its own close future would keep it
  channel->close_future().add_listener([self, raw](const Future<void>&) {
    self->on_pool_loop([self, raw] {
      if (!self->reported_) return;             // the ready listener reports the failure
      if (self->channel_.get() != raw) return;  // an attempt that lost (Happy Eyeballs closed it)
      self->dead = true;
      if (auto p = self->pool()) p->connection_closed(*self);
    });
  });
}

void OriginConnection::send_http2(std::shared_ptr<Exchange> x) {
  if (x->tunnel) {
    tunnel_http2(std::move(x));
    return;
  }
  if (x->streamed) {
    stream_http2(std::move(x));
    return;
  }
  ++in_flight;
  x->on = this;
  x->h2_call = ++h2_calls_made_;
  auto self = std::static_pointer_cast<OriginConnection>(shared_from_this());
  const bool reused = served > 0;
  Promise<http::HttpClientResponse> done(&http2_->loop());
  Future<http::HttpClientResponse> answer = done.future();
  if (!http2_->loop().try_execute([self, call = x->h2_call, request = x->wire_request(), done]() mutable {
        const std::int32_t stream = self->http2_->codec().request(std::move(request), done);
        if (stream > 0) self->h2_calls_.opened(call, stream);
      })) {
    done.fail(ChannelClosedError("the HTTP/2 connection's loop has terminated"));
  }
  answer.add_listener([self, x, reused, call = x->h2_call](const Future<http::HttpClientResponse>& f) {
    if (self->http2_->loop().in_loop()) self->h2_calls_.ended(call);  // (not when its loop had terminated)
    std::exception_ptr error = f.error();
    std::optional<http::HttpClientResponse> response;
    if (!error) response.emplace(f.take());
    self->on_pool_loop([self, x, reused, error, response = std::move(response)]() mutable {
      --self->in_flight;
      self->idle_since = self->pool_loop().now();
      auto p = self->pool();
      if (!p) {
        x->fail_closed(self->pool_loop());
        return;
      }
      if (!error) {
        ++self->served;
        p->answered(*self, x, std::move(*response));
        return;
      }
      self->http2_failed(x, error, reused);
    });
  });
}

void OriginConnection::http2_failed(const std::shared_ptr<Exchange>& x, std::exception_ptr error, bool reused) {
  auto p = pool();
  if (!p) {
    x->fail_closed(pool_loop());
    return;
  }
  bool retryable = false;
  std::exception_ptr failure = error;
  try {
    std::rethrow_exception(error);
  } catch (const http2::StreamIdleError&) {
    failure = std::make_exception_ptr(TimeoutError(TimeoutError::Kind::idle, x->url.to_string()));
  } catch (const http2::ClientStreamError& e) {
    if (e.refused()) {
      retryable = true;  // the server did not process it (REFUSED_STREAM, GOAWAY)
      dead = true;       // after GOAWAY: no new streams here
    } else if (std::string_view(e.what()).find("max_response_body") != std::string_view::npos) {
      failure = std::make_exception_ptr(ResponseTooLargeError(x->url.to_string(), options_.max_response_body));
    }
  } catch (const ChannelClosedError&) {
    retryable = reused && x->idempotent();
    dead = true;
  } catch (...) {
  }
  p->failed(*this, x, failure, retryable);
}

namespace {

// What a streamed HTTP/2 request sends, copied off the pool loop's Exchange.
struct StreamedCall {
  explicit StreamedCall(Url u) : url(std::move(u)) {}
  std::string method;
  std::string target;
  std::string header_block;
  ByteBuf body;
  Url url;
  Duration idle;
  bool upload = false;                         // the body is written as it goes
  std::optional<std::uint64_t> upload_length;  // its declared length
  // upload: the stream, and where its answer's status will be (0 until the head), on its loop
  std::function<void(std::shared_ptr<http2::ClientStream>, std::shared_ptr<int>)> opened;
  // where its stream is noted while it waits for its head (OriginConnection::abandon), its number there
  Http2Calls* calls = nullptr;
  std::uint64_t number = 0;
  std::shared_ptr<void> keep;  // the connection `calls` is in, until the coroutine's frame goes
};

struct StreamedHead {
  http::HttpClientResponse head;
  std::shared_ptr<BodyStream> body;
};

// A stream shared by its response's body and its request's streamed body, destroyed on `loop`.
std::shared_ptr<http2::ClientStream> share_on(EventLoop& loop, http2::ClientStream stream) {
  return {new http2::ClientStream(std::move(stream)), [&loop](http2::ClientStream* s) {
            if (loop.in_loop() || !loop.try_execute([s] { delete s; })) delete s;  // a terminated loop runs nothing
          }};
}

// A streamed request body of HTTP/2: each chunk waits for the stream's and the connection's
// windows (ClientStream::write); a wait longer than the idle timeout fails the upload, which then
// resets the stream. Everything but push() runs on the connection's loop. A chunk costs its two
// futures' states (the caller's write() and push()) and pooled coroutine frames, nothing else from
// the heap: the window's timer is one per upload, armed when a wait begins and none is pending.
class Http2Upload final : public UploadSink, public std::enable_shared_from_this<Http2Upload> {
 public:
  Http2Upload(EventLoop& pool_loop, EventLoop& loop, std::shared_ptr<http2::ClientStream> stream,
              std::shared_ptr<int> status, Duration idle, std::string url)
      : pool_loop_(pool_loop),
        loop_(loop),
        stream_(std::move(stream)),
        status_(std::move(status)),
        idle_(idle),
        url_(std::move(url)) {}
  Future<void> push(ByteBuf chunk) override {
    Promise<void> done(&pool_loop_);
    Future<void> future = done.future();
    if (loop_.in_loop()) {
      spawn_detached(loop_, write_one(shared_from_this(), std::move(chunk), std::move(done)));
    } else if (!loop_.try_execute([self = shared_from_this(), chunk = std::move(chunk), done]() mutable {
                 spawn_detached(self->loop_, write_one(self, std::move(chunk), std::move(done)));
               })) {
      done.fail(ChannelClosedError("the request body's connection has ended (its loop terminated)"));
    }
    return future;
  }
  void end() override {
    loop_.try_execute([stream = stream_] { stream->end(); });
  }
  void abort() override {
    loop_.try_execute([stream = stream_] { stream->reset(); });  // RST_STREAM(CANCEL)
  }
  void stopped() override {
    // An answer that has ended before the body's: RST_STREAM(NO_ERROR) (RFC 9113 8.1), which also
    // frees a write waiting for a window that will not open. (Otherwise the request's failure
    // reset the stream already, or the response goes on, for its reader.)
    loop_.try_execute([stream = stream_] {
      if (stream->response_ended()) stream->reset(0);
    });
  }

 private:
  // One chunk at a time (UploadStream pushes the next once this one is done).
  static Task<> write_one(std::shared_ptr<Http2Upload> self, ByteBuf chunk, Promise<void> done) {
    self->waiting_.emplace(done);
    self->wait_since_ = self->loop_.now();
    if (self->idle_ > Duration::zero() && !self->timer_armed_) self->arm(self->idle_);
    std::exception_ptr error;
    try {
      co_await self->stream_->write(std::move(chunk));
    } catch (...) {
      error = std::current_exception();
    }
    if (!self->waiting_) co_return;  // settled by the window's timer
    self->waiting_.reset();
    if (error && self->stream_->response_ended() && *self->status_ >= 300) {
      // The server answered and ended the stream before the body's end (RFC 9113 8.1): the rest
      // is dropped, whichever of the answer and this write the pool hears of first.
      error = std::make_exception_ptr(RequestBodyError(RequestBodyError::Kind::answered, self->url_));
    }
    if (error) {
      done.set_error(error);
    } else {
      done.set_value();
    }
  }

  // The window's timer: left pending when a wait ends, looked at when it fires (BodyStream's way).
  void arm(Duration in) {
    timer_armed_ = true;
    loop_.schedule(in, [weak = weak_from_this()] {
      if (auto self = weak.lock()) {
        self->timer_armed_ = false;
        self->window_due();
      }
    });
  }

  // A wait is idle once it has lasted `idle_` since it began and since its stream's HEADERS left
  // (a stream held by the server's concurrency limit waits for the other streams, not its window).
  void window_due() {
    if (!waiting_) return;  // the next wait arms the timer again
    const TimePoint sent = stream_->headers_sent_at();
    if (sent == TimePoint{}) {
      arm(idle_);
      return;
    }
    const TimePoint from = std::max(wait_since_, sent);
    const TimePoint now = loop_.now();
    if (now - from < idle_) {
      arm(from + idle_ - now);
      return;
    }
    // The upload learns of its timeout before anything else hears of the stream's end: its
    // failure (UploadStream::fail_request) is the request's, and resets the stream (CANCEL).
    std::exchange(waiting_, std::nullopt)->fail(TimeoutError(TimeoutError::Kind::idle, url_));
  }

  EventLoop& pool_loop_;
  EventLoop& loop_;
  std::shared_ptr<http2::ClientStream> stream_;
  std::shared_ptr<int> status_;  // the answer's, once its head came (connection loop)
  const Duration idle_;
  const std::string url_;
  // connection loop: the chunk waiting for the windows (its push's promise), since when; the timer
  std::optional<Promise<void>> waiting_;
  TimePoint wait_since_{};
  bool timer_armed_ = false;
};

// HTTP/2 field names are lowercase (RFC 9113 8.2.1); an HttpClientRequest keeps them as written,
// for HTTP/1.1. Lowercases the names of `block`'s lines in place.
void lowercase_names(std::string& block) {
  bool in_name = true;
  for (char& c : block) {
    if (in_name && c == ':')
      in_name = false;
    else if (c == '\n')
      in_name = true;
    else if (in_name && c >= 'A' && c <= 'Z')
      c = static_cast<char>(c - 'A' + 'a');
  }
}

// The fields of HTTP/1.1's connection that HTTP/2 does not carry (RFC 9113 8.2.2); TE only as "trailers".
bool connection_specific(std::string_view name, std::string_view value) {
  return name == "connection" || name == "keep-alive" || name == "proxy-connection" || name == "transfer-encoding" ||
         name == "upgrade" || (name == "te" && value != "trailers");
}

// On the connection's loop: opens the stream, sends the request (or hands the stream to its
// streamed body), waits for the response's head.
Task<StreamedHead> open_streamed(std::shared_ptr<Http2Connection> h2, StreamedCall call) {
  std::vector<http::Header> headers;
  lowercase_names(call.header_block);
  for_each_header_line(call.header_block, [&headers](std::string_view name, std::string_view value) {
    if (!connection_specific(name, value)) headers.push_back({name, value});
  });
  const std::string length = call.upload_length ? std::to_string(*call.upload_length) : std::string();
  if (call.upload_length) headers.push_back({"content-length", length});
  std::shared_ptr<http2::ClientStream> stream = share_on(h2->loop(), h2->open(call.method, call.target, headers));
  call.calls->opened(call.number, stream->id());
  struct Ended {  // however the coroutine ends: the head came, or the stream failed
    Http2Calls* calls;
    std::uint64_t number;
    ~Ended() { calls->ended(number); }
  } ended{call.calls, call.number};
  auto status = std::make_shared<int>(0);
  if (call.upload) {
    call.opened(stream, status);
  } else {
    if (call.body.is_readable()) co_await stream->write(std::move(call.body));
    stream->end();
  }
  *status = co_await stream->response();
  StreamedHead out;
  out.head = stream->take_head();
  out.body = std::make_shared<Http2Body>(h2->loop(), std::move(stream), call.idle, std::move(call.url));
  co_return out;
}

}  // namespace

void OriginConnection::stream_http2(std::shared_ptr<Exchange> x) {
  ++in_flight;
  x->on = this;
  x->h2_call = ++h2_calls_made_;
  auto self = std::static_pointer_cast<OriginConnection>(shared_from_this());
  const bool reused = served > 0;
  StreamedCall call(x->url);
  call.calls = &h2_calls_;
  call.number = x->h2_call;
  call.keep = self;
  call.method = x->method;
  call.target = x->url.target();
  call.header_block = x->header_block;
  call.body = x->body.slice();
  call.idle = options_.idle_timeout;
  if (x->upload) {
    call.upload = true;
    call.upload_length = x->upload->length();
    EventLoop& loop = http2_->loop();
    call.opened = [self, x, &loop, idle = options_.idle_timeout](std::shared_ptr<http2::ClientStream> stream,
                                                                 std::shared_ptr<int> status) {
      auto sink = std::make_shared<Http2Upload>(self->pool_loop(), loop, std::move(stream), std::move(status), idle,
                                                x->url.to_string());
      self->on_pool_loop([x, sink] { x->upload->attach(sink); });
    };
  }
  spawn(http2_->loop(), open_streamed(http2_, std::move(call)))
      .add_listener([self, x, reused](const Future<StreamedHead>& f) {
        std::exception_ptr error = f.error();
        std::optional<StreamedHead> head;
        if (!error) head.emplace(f.take());
        self->on_pool_loop([self, x, reused, error, head = std::move(head)]() mutable {
          // The stream's slot is given back at its head: the codec itself holds streams past the
          // server's limit until others close, so a long body never stalls the pool.
          --self->in_flight;
          self->idle_since = self->pool_loop().now();
          if (error) {
            self->http2_failed(x, error, reused);
            return;
          }
          auto p = self->pool();
          if (!p) {
            BodyStream::let_go(std::move(head->body));
            x->fail_closed(self->pool_loop());
            return;
          }
          ++self->served;
          x->body_stream = std::move(head->body);
          p->answered(*self, x, std::move(head->head));
        });
      });
}

namespace {

// On the connection's loop: the extended CONNECT, its answer's head, and a 2xx's stream handed to
// the opener. Only on a connection whose server enabled extended CONNECT (RFC 8441 3).
struct TunnelHead {
  http::HttpClientResponse head;
  std::optional<Future<void>> ended;  // the tunnel's end, when it opened
};

Task<TunnelHead> open_tunnel(std::shared_ptr<Http2Connection> h2, std::shared_ptr<TunnelOpener> opener,
                             std::string path, Http2Calls* calls, std::uint64_t number, std::shared_ptr<void> keep) {
  (void)keep;  // the connection `calls` is in, until the coroutine's frame goes
  if (!h2->codec().peer_enable_connect_protocol()) {
    throw TunnelUnavailableError("the server's SETTINGS did not enable extended CONNECT (RFC 8441)");
  }
  std::vector<http::Header> headers;
  headers.reserve(opener->fields().size());
  for (const auto& [name, value] : opener->fields()) headers.push_back({name, value});
  http2::ClientStream stream = h2->codec().open_extended_connect(opener->protocol(), path, headers);
  calls->opened(number, stream.id());
  struct Ended {  // however the coroutine ends: the head came, or the stream failed
    Http2Calls* calls;
    std::uint64_t number;
    ~Ended() { calls->ended(number); }
  } ended{calls, number};
  const int status = co_await stream.response();
  TunnelHead out;
  out.head = stream.take_head();
  if (status >= 200 && status < 300) out.ended = opener->opened(h2->channel(), std::move(stream), out.head);
  co_return out;  // (another answer: the stream is reset as the handle goes, unless it has ended)
}

}  // namespace

void OriginConnection::tunnel_http2(std::shared_ptr<Exchange> x) {
  ++in_flight;
  x->on = this;
  x->h2_call = ++h2_calls_made_;
  auto self = std::static_pointer_cast<OriginConnection>(shared_from_this());
  const bool reused = served > 0;
  spawn(http2_->loop(), open_tunnel(http2_, x->tunnel, x->url.target(), &h2_calls_, x->h2_call, self))
      .add_listener([self, x, reused](const Future<TunnelHead>& f) {
        std::exception_ptr error = f.error();
        std::optional<TunnelHead> head;
        if (!error) head.emplace(f.take());
        if (head && head->ended) {
          // An open tunnel holds its stream until it ends: then the slot is the pool's again.
          head->ended->add_listener([self](const Future<void>&) {
            self->on_pool_loop([self] {
              --self->in_flight;
              self->idle_since = self->pool_loop().now();
              if (auto p = self->pool()) p->released(*self);
            });
          });
        }
        self->on_pool_loop([self, x, reused, error, head = std::move(head)]() mutable {
          if (!head || !head->ended) {  // no tunnel: the stream's slot is free now
            --self->in_flight;
            self->idle_since = self->pool_loop().now();
          }
          if (error) {
            self->http2_failed(x, error, reused);
            return;
          }
          auto p = self->pool();
          if (!p) {
            x->fail_closed(self->pool_loop());
            return;
          }
          ++self->served;
          p->answered(*self, x, std::move(head->head));
        });
      });
}

}  // namespace weft::client::detail
