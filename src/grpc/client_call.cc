// grpc::ClientCall: one call of the gRPC client on an http2::ClientStream.

#include <charconv>
#include <exception>
#include <stdexcept>

#include "../codec/http2/client_stream_state.h"
#include "client_call_state.h"
#include "message_copy.h"
#include "weft/core/error.h"
#include "weft/core/loop_signal.h"
#include "weft/grpc/metadata.h"

namespace weft::grpc {

namespace {

constexpr std::uint32_t kReadsPerTurn = 64;  // messages read in a row before the loop takes a turn

const http2::Fields& no_fields() {
  static const http2::Fields empty;
  return empty;
}

// Whether a write failed because the stream had ended cleanly with the message still queued.
bool upload_dropped(std::exception_ptr failure) {
  try {
    std::rethrow_exception(failure);
  } catch (const http2::UploadDroppedError&) {
    return true;
  } catch (...) {
    return false;
  }
}

// The status a failed stream or connection means for the call.
// `refused`: set when the server did not process the call (safe to send again).
Status status_from_failure(std::exception_ptr failure, bool& refused) {
  try {
    std::rethrow_exception(failure);
  } catch (const http2::ClientStreamError& e) {
    if (e.refused()) {
      refused = true;
      return Status(StatusCode::unavailable, e.what());
    }
    switch (e.error_code()) {
      case 0x8: return Status(StatusCode::cancelled, e.what());             // CANCEL
      case 0xb: return Status(StatusCode::resource_exhausted, e.what());    // ENHANCE_YOUR_CALM
      case 0xc: return Status(StatusCode::permission_denied, e.what());     // INADEQUATE_SECURITY
      default: return Status(StatusCode::internal, e.what());
    }
  } catch (const ChannelClosedError& e) {
    return Status(StatusCode::unavailable, e.what());
  } catch (const std::exception& e) {
    return Status(StatusCode::unavailable, e.what());
  }
}

// grpc-status and grpc-message through `get` (the trailers, or a Trailers-Only head).
template <class Get>
Status status_from_fields(int http_status, Get get) {
  const std::optional<std::string_view> code = get("grpc-status");
  if (!code) {
    if (http_status != 200) return status_from_http(http_status);
    return Status(StatusCode::unknown, "the response has no grpc-status");
  }
  int value = -1;
  const auto [end, ec] = std::from_chars(code->data(), code->data() + code->size(), value);
  if (ec != std::errc() || end != code->data() + code->size() || value < 0 || value > 16) {
    return Status(StatusCode::unknown, "grpc-status '" + std::string(*code) + "' is not a status code");
  }
  const std::optional<std::string_view> message = get("grpc-message");
  return Status(static_cast<StatusCode>(value), message ? percent_decode(*message) : std::string());
}

// A -bin header of the response's head that is not base64, as the call's status (INTERNAL).
std::optional<Status> bad_binary_metadata(const http::ResponseHead& head) {
  for (std::size_t i = 0; i < head.header_count; ++i) {
    if (std::optional<Status> bad = check_binary_metadata(head.inline_headers[i].name, head.inline_headers[i].value)) {
      return bad;
    }
  }
  return std::nullopt;
}

}  // namespace

void ClientCall::State::end_locally(Status why) {
  if (status) return;
  status = std::move(why);
  stop_deadline();
  if (stream.valid()) stream.reset();  // RST_STREAM CANCEL
  wake_waiters();
  tell_end();
}

void ClientCall::State::end_with(Status why) {
  if (status) return;
  status = std::move(why);
  stop_deadline();
  wake_waiters();
  tell_end();
}

void ClientCall::State::end_after_parked_write(State& st) {
  if (!st.pending || !st.writes_done || st.pending->ended) return;
  st.pending->ended = true;
  if (!st.status && st.stream.valid()) st.stream.end();
}

void ClientCall::State::wake_waiters() noexcept {
  if (!pending) return;
  pending->writer.notify();
  pending->reader.notify();
}

void ClientCall::State::tell_end() noexcept {
  if (!on_end) return;
  UniqueFunction<void()> listener = std::move(on_end);
  on_end = nullptr;
  listener();
}

void ClientCall::State::stop_deadline() noexcept {
  if (!deadline) return;
  loop->cancel(*deadline);
  deadline.reset();
}

ClientCall& ClientCall::operator=(ClientCall&& other) noexcept {
  if (this != &other) {
    if (state_) cancel();
    state_ = std::move(other.state_);
  }
  return *this;
}

ClientCall::~ClientCall() {
  if (state_) {
    cancel();
    state_->stop_deadline();
  }
}

Task<bool> ClientCall::write(ByteBuf message) {
  std::shared_ptr<State> st = state_;
  bool parked = false;
  if (st->waiting_for_stream()) {
    if (st->writes_done) throw std::logic_error("grpc::ClientCall::write after writes_done()");
    // A writes_done() from another coroutine meanwhile follows this message (end_after_parked_write).
    parked = st->pending->writer_parked = true;
    while (st->waiting_for_stream()) co_await st->pending->writer.wait();
    st->pending->writer_parked = false;
  }
  if (st->status || st->stream.response_ended()) {
    State::end_after_parked_write(*st);
    co_return false;
  }
  if (st->writes_done && !parked) throw std::logic_error("grpc::ClientCall::write after writes_done()");
  const std::size_t n = message.readable_bytes();
  std::exception_ptr failure;
  try {
    if (st->compression.algorithm != Compression::identity && n >= st->compression.min_bytes) {
      // Compressed (or, when it does not shrink, flag 0) into one new buffer.
      co_await st->stream.write(frame_compressed(message, st->compression, *st->loop_allocator));
    } else {
      // One unit: an end() (finish(), writes_done() from another coroutine) follows the whole message.
      detail::FramedMessage framed = detail::frame_for_send(std::move(message), *st->loop_allocator);
      co_await st->stream.write(std::move(framed.prefix), std::move(framed.body));
    }
  } catch (...) {
    failure = std::current_exception();
  }
  State::end_after_parked_write(*st);
  if (failure) {
    // The server's response ended (then its stream, RST_STREAM(NO_ERROR)) before this message
    // left: the call's status is its trailers', which read() gives.
    if (!upload_dropped(failure)) st->end_with(status_from_failure(failure, st->refused));
    co_return false;
  }
  co_return !st->status.has_value();
}

Task<> ClientCall::writes_done() {
  std::shared_ptr<State> st = state_;
  if (!st->writes_done) {
    st->writes_done = true;
    if (!st->status && st->stream.valid()) {
      if (st->pending) st->pending->ended = true;
      st->stream.end();
    }  // else: when the stream opens, or after the write() waiting for it
  }
  co_return;
}

Task<std::optional<ByteBuf>> ClientCall::read() {
  std::shared_ptr<State> st = state_;
  for (;;) {
    if (st->status) co_return std::nullopt;
    if (st->waiting_for_stream()) {
      co_await st->pending->reader.wait();
      continue;
    }
    if (std::optional<ByteBuf> message = st->deframer.next()) {
      // Thousands of buffered messages read back to back: the loop takes a turn every so often
      // (loop_signal.h).
      if (++st->reads_this_turn >= kReadsPerTurn) {
        st->reads_this_turn = 0;
        auto turn = next_turn(*st->loop);  // named: g++ 12 destroys a temporary twice when it throws
        co_await turn;
      }
      co_return message;
    }
    if (st->deframer.error()) {
      st->end_locally(*st->deframer.error());
      continue;
    }
    std::exception_ptr failure;
    if (!st->head_seen) {
      try {
        co_await st->stream.response();
      } catch (...) {
        failure = std::current_exception();
      }
      if (failure) {
        st->end_with(status_from_failure(failure, st->refused));
        continue;
      }
      st->head_seen = true;
      const http::HttpClientResponse& head = st->stream.head();
      if (std::optional<Status> bad = bad_binary_metadata(head.head())) {
        st->end_locally(std::move(*bad));
        continue;
      }
      if (st->stream.head_ended()) {  // Trailers-Only
        st->end_with(status_from_fields(head.status(), [&head](std::string_view name) { return head.header(name); }));
        continue;
      }
      if (std::optional<std::string_view> encoding = head.header("grpc-encoding")) {
        st->deframer = DecompressingDeframer(st->max_receive_bytes, *encoding);
      }
      continue;
    }
    std::optional<ByteBuf> chunk;
    try {
      chunk = co_await st->stream.read();
    } catch (...) {
      failure = std::current_exception();
    }
    if (failure) {
      st->end_with(status_from_failure(failure, st->refused));
      continue;
    }
    if (!chunk) {  // the response ended: the status is in the trailers
      if (st->deframer.has_partial()) {
        st->end_with(Status(StatusCode::internal, "the response ended inside a message"));
      } else {
        const http2::Fields& trailers = st->stream.trailers();
        std::optional<Status> bad;
        for (const http2::Fields::Field& field : trailers) {
          if ((bad = check_binary_metadata(field.name, field.value))) break;
        }
        st->end_with(bad ? std::move(*bad)
                         : status_from_fields(st->stream.head().status(),
                                              [&trailers](std::string_view name) { return trailers.get(name); }));
      }
      continue;
    }
    st->deframer.feed(std::move(*chunk));
  }
}

Task<Status> ClientCall::finish() {
  std::shared_ptr<State> st = state_;
  while (!st->status) (void)co_await read();
  // The server has ended the call: end the request too, so that the stream closes.
  if (!st->writes_done) {
    st->writes_done = true;
    if (st->stream.valid()) {
      if (st->pending) st->pending->ended = true;
      st->stream.end();
    }
  }
  co_return *st->status;
}

void ClientCall::cancel() {
  if (state_) state_->end_locally(Status(StatusCode::cancelled, "Cancelled"));
}

bool ClientCall::refused() const noexcept { return state_ && state_->refused; }

bool ClientCall::last_read_compressed() const noexcept { return state_ && state_->deframer.last_compressed(); }

const http::HttpClientResponse* ClientCall::initial_metadata() const noexcept {
  return state_ && state_->head_seen ? &state_->stream.head() : nullptr;
}

std::optional<std::string> ClientCall::initial_metadata_value(std::string_view key) const {
  const http::HttpClientResponse* head = initial_metadata();
  return head != nullptr ? decode_first_metadata_value(key, head->header(key)) : std::nullopt;
}

std::optional<std::string> ClientCall::trailing_metadata_value(std::string_view key) const {
  // A Trailers-Only response carries its trailing metadata in its only head.
  if (state_ && state_->head_seen && state_->stream.head_ended()) {
    return decode_first_metadata_value(key, state_->stream.head().header(key));
  }
  return decode_first_metadata_value(key, trailing_metadata().get(key));
}

const http2::Fields& ClientCall::trailing_metadata() const noexcept {
  return state_ && state_->stream.valid() && state_->stream.response_ended() ? state_->stream.trailers() : no_fields();
}

}  // namespace weft::grpc
