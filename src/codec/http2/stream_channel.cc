// http2::StreamChannel, the child's side: its pipeline's hooks call the codec (server_codec.cc,
// "streams served as channels"), and the codec calls start(), deliver() and finish() from
// ServerCodec::run_children, never from inside the session.

#include "weft/codec/http2/stream_channel.h"

#include <string>

#include "../http1/char_scan.h"
#include "../http1/field_section.h"
#include "weft/channel/events.h"
#include "weft/codec/http1/http_types.h"
#include "weft/codec/http2/server_codec.h"
#include "weft/core/log.h"

namespace weft::http2 {

// ---- Fields, StreamResetError

Fields& Fields::add(std::string_view name, std::string_view value) & {
  if (name.empty() || !http::detail::all_tchar(name)) {
    throw std::invalid_argument("HTTP/2 field name is not a token: '" + std::string(name) + "'");
  }
  if (http::detail::find_invalid_byte_in_value(value.data(), value.size()) != value.size()) {
    throw std::invalid_argument("HTTP/2 field value of '" + std::string(name) +
                                "' contains CR, LF, NUL or another control");
  }
  fields_.push_back({std::string(name), std::string(value)});
  return *this;
}

std::optional<std::string_view> Fields::get(std::string_view name) const noexcept {
  for (const Field& f : fields_) {
    if (http::iequals(f.name, name)) return std::string_view(f.value);
  }
  return std::nullopt;
}

StreamResetError::StreamResetError(std::uint32_t code)
    : Error("HTTP/2 stream reset (error code " + std::to_string(code) + ")"), code_(code) {}

// ---- StreamChannel

StreamChannel::StreamChannel(Private, ServerCodec& codec, Channel& parent, std::int32_t id, StreamInitializer init)
    : Channel(parent.loop(), ChannelConfig{}, parent.allocator()),
      codec_(&codec),
      parent_(&parent),
      id_(id),
      init_(std::move(init)) {}

StreamChannel::~StreamChannel() = default;

// The initializer builds the pipeline; then the child is registered and active (its reading starts
// with auto-read, and deliver() follows).
void StreamChannel::start() {
  started_ = true;
  try {
    StreamInitializer init = std::move(init_);
    init_ = nullptr;
    init(*this);
    register_on_loop();
  } catch (const std::exception& e) {
    log(LogLevel::warn, "channel {}: HTTP/2 stream {}: its initializer failed: {}; stream reset", parent_->id(), id_,
        e.what());
    close_now();  // RST_STREAM(CANCEL) (do_close)
    return;
  }
  activate(parent_->local_address(), parent_->remote_address());
}

// What the codec holds for the child, in order, as long as it reads; the stream's window is
// returned for each chunk it takes.
void StreamChannel::deliver() {
  if (!started_ || !is_open()) return;
  bool any = false;
  while (reading_ && is_open() && !input_closed_) {
    std::size_t n = 0;
    if (in_headers_) {
      StreamMessage message(std::in_place_type<StreamHeaders>, std::move(*in_headers_));
      in_headers_.reset();
      pipeline().fire_read(std::move(message));
    } else if (!in_data_.empty()) {
      StreamData data = in_data_.pop_front();
      if (in_data_.empty()) {
        in_copied_tail_ = false;
        in_retained_ = 0;  // counted until all it held is read (ServerCodec::child_data)
      }
      n = data.data.readable_bytes();
      in_bytes_ -= n;
      StreamMessage message(std::in_place_type<StreamData>, std::move(data));
      pipeline().fire_read(std::move(message));
    } else if (in_trailers_) {
      StreamMessage message(std::in_place_type<StreamTrailers>, std::move(*in_trailers_));
      in_trailers_.reset();
      pipeline().fire_read(std::move(message));
    } else {
      break;
    }
    any = true;
    if (n > 0 && codec_ != nullptr) codec_->consume_stream(id_, n);
  }
  if (any && is_open()) {
    pipeline().fire_read_complete();
    read_batch_done();
  }
  if (in_ended_ && !in_shutdown_fired_ && is_open() && !input_closed_ && !in_headers_ && in_data_.empty() &&
      !in_trailers_) {
    in_shutdown_fired_ = true;
    if (is_output_shutdown()) {  // both sides have ended (a tunnel's graceful close): nothing follows
      close_now();
      return;
    }
    pipeline().fire_user_event(ChannelInputShutdownEvent{});
  }
}

void StreamChannel::do_begin_read() {
  reading_ = true;
  if (!started_ || codec_ == nullptr) return;
  const bool waiting = in_headers_ || !in_data_.empty() || in_trailers_ || (in_ended_ && !in_shutdown_fired_);
  if (!waiting) return;
  if (codec_->running_children_) {
    codec_->queue_child(*this);  // the codec's loop over its children comes to it next
  } else {
    post_delivery();
  }
}

// From a loop callback: do_begin_read may run inside the child's own handler (a coroutine that
// took messages from its full inbox resumes reading), which must not see new reads nested in its
// call. A terminated loop has no later turn: what is held is not delivered (as the codec gives up
// its children's work there, ServerCodec::post_children).
void StreamChannel::post_delivery() {
  if (delivery_later_.is_scheduled()) return;
  if (!delivery_later_.schedule(loop())) {
    log(LogLevel::debug, "channel {}: the loop has terminated; HTTP/2 stream {} is not delivered to", parent_->id(),
        id_);
    return;
  }
  delivery_hold_ = std::static_pointer_cast<StreamChannel>(shared_from_this());
}

void StreamChannel::delivery_posted() {
  const std::shared_ptr<StreamChannel> self = std::move(delivery_hold_);
  if (codec_ == nullptr) return;
  deliver();
  if (codec_ != nullptr) codec_->child_flush(*this);  // the WINDOW_UPDATE it earned
}

// The stream closed: a reset reaches the pipeline as StreamResetError; then the child closes.
void StreamChannel::finish(bool reset, std::uint32_t code) {
  finished_ = true;
  codec_ = nullptr;
  if (!is_open()) return;
  if (reset) pipeline().fire_exception(std::make_exception_ptr(StreamResetError(code)));
  if (is_open()) close_now();
}

void StreamChannel::detach() noexcept {
  codec_ = nullptr;
  stream_closed_ = finished_ = input_closed_ = true;
  in_headers_.reset();
  in_data_.clear();
  in_trailers_.reset();
  in_bytes_ = in_retained_ = 0;
  out_data_.clear();
  out_bytes_ = out_promised_ = 0;
  out_trailers_.reset();
  if (!is_open()) return;
  try {
    close_now();
  } catch (const std::exception& e) {
    log(LogLevel::warn, "HTTP/2 stream {}: closing its channel failed: {}", id_, e.what());
  }
}

void StreamChannel::do_flush() {
  if (codec_ != nullptr) codec_->child_flush(*this);
}

// The response's end (END_STREAM) once what was written has left; the client's end then closes the
// channel (deliver), as a socket's FIN does after ours.
void StreamChannel::do_shutdown_output(Promise<void> promise) {
  if (codec_ != nullptr && !stream_closed_ && !headers_sent_) {
    promise.fail(Error("http2::StreamChannel: shutdown_output before the response's head"));
    return;
  }
  set_output_shutdown();
  if (codec_ != nullptr && !stream_closed_ && !out_ended_) {
    out_ended_ = true;
    codec_->child_flush(*this);
  }
  promise.set_value();
  if (!is_open()) return;
  pipeline().fire_user_event(ChannelOutputShutdownEvent{});
  if (is_open() && (in_shutdown_fired_ || codec_ == nullptr)) close_now();
}

void StreamChannel::do_close() {
  if (codec_ != nullptr) codec_->child_closed(*this);
}

void StreamChannel::do_write_message(MessageRef message) {
  if (codec_ == nullptr) {
    log(LogLevel::debug, "HTTP/2 stream {} has ended; a {} written to it was dropped", id_, type_name(message.type()));
    return;
  }
  codec_->child_write(*this, message);
}

}  // namespace weft::http2
