// Router's coroutine routes: each request a task of its own on the channel's loop.

#include <coroutine>
#include <exception>
#include <memory>
#include <optional>

#include "body_source.h"
#include "weft/codec/http1/client_codec.h"
#include "weft/codec/http1/router.h"
#include "weft/core/frame_pool.h"
#include "weft/core/log.h"
#include "weft/core/spawn.h"

namespace weft::http {
namespace {

// The body of `message` for a streamed route: as the HTTP/1.1 or HTTP/2 codec streams it, or (a
// router behind neither) the whole body it came with, ended.
std::shared_ptr<detail::BodySource> body_source_of(HttpRequest& message, EventLoop& loop) {
  if (message.body_stream() != nullptr) return std::move(message.body_stream());
  const std::optional<std::uint64_t> length = message.header("transfer-encoding").has_value()
                                                  ? std::nullopt
                                                  : std::optional<std::uint64_t>(message.body().readable_bytes());
  auto source = detail::make_body_source(loop, length);
  if (message.body().is_readable()) source->push(std::move(message.body()));
  source->end({});
  return source;
}

// The status of an HttpProtocolError; 0 for another error.
int protocol_status(const std::exception_ptr& error) noexcept {
  try {
    std::rethrow_exception(error);
  } catch (const HttpProtocolError& e) {
    return e.status();
  } catch (...) {
    return 0;
  }
}

// Set while the router's channel_read that started a task is on the stack: a task that ends
// before it returns answers through the router's context (flushed with the read batch).
struct InlineStart {
  Context* ctx;
  bool finished = false;
};

}  // namespace

// A route's task: starts suspended, frees its frame when it ends; its body lets nothing escape.
struct Router::RouteTask {
  struct promise_type : frame_pool::PooledFrame {
    InlineStart* start = nullptr;
    RouteTask get_return_object() noexcept {
      return RouteTask{std::coroutine_handle<promise_type>::from_promise(*this)};
    }
    std::suspend_always initial_suspend() noexcept { return {}; }
    std::suspend_never final_suspend() noexcept { return {}; }
    void return_void() noexcept {}
    void unhandled_exception() noexcept { std::terminate(); }
  };
  // co_await RouteTask::OwnPromise{} gives the coroutine its promise without suspending.
  struct OwnPromise {
    promise_type* promise = nullptr;
    bool await_ready() const noexcept { return false; }
    bool await_suspend(std::coroutine_handle<promise_type> h) noexcept {
      promise = &h.promise();
      return false;
    }
    promise_type& await_resume() const noexcept { return *promise; }
  };
  std::coroutine_handle<promise_type> handle;
};

// Runs `fn` through the middleware and writes its answer, tagged with the request's sequence: it
// may come after the answers of later requests (the codec puts HTTP/1.1 answers back in order).
// Holds the router, the channel and the request until it ends.
Router::RouteTask Router::run_task(const Router& router, std::shared_ptr<const Router> keep, ChannelPtr channel,
                                   HttpRequest message, RouteParams params, std::string_view pattern,
                                   const Router::Target& target) {
  (void)keep;
  Router::RouteTask::promise_type& self = co_await RouteTask::OwnPromise{};
  Request request(*channel, message, params, pattern);
  BodyReader body;
  std::shared_ptr<detail::BodySource> source;  // (kept to tell the body's own failure from the route's)
  if (target.streamed) {
    source = body_source_of(message, channel->loop());
    body = BodyReader(source);
  }
  if (!router.middleware_.empty()) request.set_received(std::chrono::system_clock::now());
  std::size_t passed = 0;
  std::optional<HttpResponse> response;
  std::exception_ptr error;
  bool too_large = false;
  try {
    response = router.run_before(request, passed);
    // (if/else, not ?: -- g++ 12 evaluates both arms of a conditional that is co_awaited.)
    if (!response && target.streamed) {
      response.emplace(co_await target.streamed(request, body));
    } else if (!response) {
      response.emplace(co_await target.async(request));
    }
  } catch (const BodyTooLargeError&) {
    too_large = true;
  } catch (...) {
    error = std::current_exception();
  }
  if (too_large) response.emplace(router.error_response(413, request));
  // The body's reader failed with the client's fault (408: it stalled, 400: bad chunked framing)
  // and the route let it go: answered with that status, not as the route's failure.
  const int client_fault = error && source != nullptr && source->failed_with(error) ? protocol_status(error) : 0;
  if (client_fault != 0) {
    response.emplace(router.error_response(client_fault, request));
  } else if (error) {
    response.emplace(router.failed(request, error));
  }
  source.reset();
  // Let go of the body before answering: an unread rest decides whether the connection goes on.
  body = BodyReader();
  router.run_after(request, *response, passed);
  response->for_request(message.sequence());
  try {
    if (self.start != nullptr) {
      self.start->finished = true;
      self.start->ctx->write(std::move(*response));
    } else if (channel->loop().in_loop()) {
      channel->write_and_flush(std::move(*response));
    } else {  // resumed by a loop that has terminated: nothing can be written any more
      log(LogLevel::debug, "channel {}: {} {}: answer dropped, the loop has ended", channel->id(), message.method(),
          message.path());
    }
  } catch (const std::exception& e) {
    log(LogLevel::error, "channel {}: {} {}: writing the answer failed: {}", channel->id(), message.method(),
        message.path(), e.what());
  }
}

void Router::start_task(Context& ctx, HttpRequest&& request, const Target& target, const RouteParams& params,
                        std::string_view pattern) const {
  ChannelPtr channel = ctx.channel().shared_from_this();
  EventLoop& loop = channel->loop();
  RouteTask task =
      run_task(*this, weak_from_this().lock(), std::move(channel), std::move(request), params, pattern, target);
  if (!loop.in_loop()) {  // the router runs on an executor: the task runs on the channel's loop
    if (!weft::detail::start_on(loop, task.handle))
      log(LogLevel::debug, "router: a route's task was refused, the loop has ended");
    return;
  }
  InlineStart start{&ctx};
  task.handle.promise().start = &start;
  task.handle.resume();
  if (!start.finished) task.handle.promise().start = nullptr;  // suspended: it answers on its own later
}

}  // namespace weft::http
