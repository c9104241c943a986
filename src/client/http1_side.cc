#include "http1_side.h"

#include <utility>

#include "body_stream.h"
#include "origin_connection.h"
#include "weft/client/client_errors.h"

namespace weft::client::detail {
namespace {

// Before the codec: every read is a sign of life of the answer owed; a probed request's first
// byte is written on its own, with a completion that tells whether it reached the socket.
class ByteActivity final : public DuplexHandler<ByteBuf, ByteBuf, ByteBuf, ByteBuf> {
 public:
  explicit ByteActivity(std::shared_ptr<Http1Side> side) : side_(std::move(side)) {}
  void channel_read(Context& ctx, ByteBuf&& bytes) override {
    side_->bytes_arrived();
    ctx.fire_read(std::move(bytes));
  }
  void write(Context& ctx, ByteBuf&& bytes) override {
    if (!side_->take_probe_arming() || !bytes.is_readable()) {
      ctx.write(std::move(bytes));
      return;
    }
    Promise<void> first_byte(&ctx.channel().loop());
    first_byte.future().add_listener(
        [side = side_](const Future<void>& written) { side->probe_settled(written.is_success()); });
    ctx.write(bytes.read_slice(1), std::move(first_byte));
    if (bytes.is_readable()) ctx.write(std::move(bytes));
  }
  void writability_changed(Context& ctx) override {
    side_->writability_changed(ctx.channel().is_writable());
    ctx.fire_writability_changed();
  }

 private:
  std::shared_ptr<Http1Side> side_;
};

// After the codec: answers, errors (kept; none reaches the pipeline's tail), activity and the close.
class Answers final : public InboundHandler<http::HttpClientResponse> {
 public:
  explicit Answers(std::shared_ptr<Http1Side> side) : side_(std::move(side)) {}
  void channel_read(Context&, http::HttpClientResponse&& response) override { side_->answer(std::move(response)); }
  void channel_active(Context& ctx) override {
    side_->active();
    ctx.fire_channel_active();
  }
  void exception_caught(Context&, std::exception_ptr error) override { side_->error(error); }
  void channel_inactive(Context& ctx) override {
    side_->closed();
    ctx.fire_channel_inactive();
  }

 private:
  std::shared_ptr<Http1Side> side_;
};

}  // namespace

void Http1Side::install(Channel& ch, const http::Limits& limits, const std::string& authority) {
  channel = ch.shared_from_this();
  auto self = shared_from_this();
  ch.pipeline().add_last("activity", std::make_shared<ByteActivity>(self));
  ch.pipeline().add_last("http1", std::make_shared<http::ClientCodec>(limits, authority));
  ch.pipeline().add_last("answers", std::make_shared<Answers>(self));
  if (ch.is_active()) active();
}

void Http1Side::active() {
  if (auto c = connection.lock()) c->http1_ready(shared_from_this(), channel);
}

void Http1Side::send_from_pool(ChannelPtr ch, http::HttpClientRequest&& request, bool probe,
                               std::shared_ptr<Http1Body> body) {
  if (ch->loop().in_loop()) {
    write(ch, std::move(request), probe, std::move(body));
    return;
  }
  auto task = [self = shared_from_this(), ch, request = std::move(request), probe, body = std::move(body)]() mutable {
    self->write(ch, std::move(request), probe, std::move(body));
  };
  if (!ch->loop().try_execute(std::move(task))) {
    if (auto c = connection.lock()) c->http1_closed(ch, nullptr, false, true);
  }
}

void Http1Side::write(const ChannelPtr& ch, http::HttpClientRequest&& request, bool probe,
                      std::shared_ptr<Http1Body> body) {
  if (closed_reported || !ch->is_active()) {
    if (auto c = connection.lock()) c->http1_closed(ch, nullptr, false, true);
    return;
  }
  awaiting = true;
  answer_started = false;
  target = request.target();
  last_read = ch->loop().turn_time();  // activity marks: a turn's clock read will do
  // One timer per connection, not per request: armed, it finds the quiet time from last_read when
  // it fires and waits the rest (idle_due); answered, it lapses at its time.
  if (idle_timeout > Duration::zero() && !idle_timer) arm_idle(idle_timeout);
  streamed_body = std::move(body);
  uploading = request.body_streamed();
  this->probe = probe ? Probe::pending : Probe::none;
  probe_armed = probe;
  ch->write_and_flush(std::move(request));
  probe_armed = false;  // no bytes came of it (the codec refused it): nothing to learn
}

void Http1Side::upload_push(ByteBuf chunk, Promise<void> done) {
  if (closed_reported || !channel || !uploading) {
    done.fail(ChannelClosedError("the connection closed under the request body"));
    return;
  }
  ChannelPtr ch = channel;  // the write may close it, and closed() lets go of `channel`
  ch->write_and_flush(std::move(chunk));
  if (closed_reported) {
    if (first_error) {
      done.set_error(first_error);
    } else {
      done.fail(ChannelClosedError("the connection closed under the request body"));
    }
    return;
  }
  if (ch->is_writable()) {
    done.set_value();
    return;
  }
  upload_blocked.emplace(std::move(done));
  last_read = ch->loop().now();  // the idle clock counts from here (see idle_due)
}

void Http1Side::upload_end() {
  if (closed_reported || !channel || !uploading) return;
  uploading = false;
  last_read = channel->loop().now();  // the answer is owed from here
  ChannelPtr ch = channel;
  ch->write_and_flush(http::RequestBodyEnd{});
}

void Http1Side::writability_changed(bool writable) {
  if (!writable || !upload_blocked) return;
  if (channel) last_read = channel->loop().now();
  std::exchange(upload_blocked, std::nullopt)->set_value();
}

void Http1Side::bytes_arrived() {
  if (!awaiting) return;
  answer_started = true;
  last_read = channel->loop().turn_time();
}

void Http1Side::answer(http::HttpClientResponse&& response) {
  awaiting = false;  // the idle timer, if armed, lapses (idle_due) or serves the next request
  if (auto body = std::move(streamed_body)) body->start();  // its own idle timer from here
  if (auto c = connection.lock()) c->http1_response(std::move(response));
}

void Http1Side::error(std::exception_ptr e) {
  if (!first_error) first_error = e;
}

void Http1Side::closed() {
  if (closed_reported) return;
  closed_reported = true;
  if (upload_blocked) {
    Promise<void> blocked = std::move(*upload_blocked);
    upload_blocked.reset();
    if (first_error) {
      blocked.set_error(first_error);  // the idle timeout's, say
    } else {
      blocked.fail(ChannelClosedError("the connection closed under the request body"));
    }
  }
  if (idle_timer && channel) channel->loop().cancel(*idle_timer);
  idle_timer.reset();
  // A first byte whose completion is still to settle (settling may be posted) decides the report.
  if (probe == Probe::pending) {
    close_awaits_probe = true;
    return;
  }
  report_closed();
}

void Http1Side::probe_settled(bool written) {
  if (probe != Probe::pending) return;
  probe = written ? Probe::written : Probe::unwritten;
  if (std::exchange(close_awaits_probe, false)) report_closed();
}

void Http1Side::report_closed() {
  ChannelPtr keep = std::move(channel);  // the cycle channel -> pipeline -> this ends here
  const bool never_sent = awaiting && probe == Probe::unwritten;
  if (auto c = connection.lock()) c->http1_closed(keep, first_error, answer_started, never_sent);
}

void Http1Side::arm_idle(Duration in) {
  if (idle_timer) channel->loop().cancel(*idle_timer);
  auto self = shared_from_this();
  idle_timer = channel->loop().schedule(in, [self] {
    self->idle_timer.reset();
    self->idle_due();
  });
}

void Http1Side::idle_due() {
  if (!awaiting || !channel) return;
  if (uploading && !upload_blocked) {  // the caller's pace, not the server's: not idle
    last_read = channel->loop().now();
    arm_idle(idle_timeout);
    return;
  }
  const Duration quiet = channel->loop().now() - last_read;
  if (quiet < idle_timeout) {
    arm_idle(idle_timeout - quiet);
    return;
  }
  error(std::make_exception_ptr(TimeoutError(TimeoutError::Kind::idle, origin_text + target)));
  channel->close();
}

}  // namespace weft::client::detail
