// http2::ClientStream, and the parts of http2::ClientCodec that carry streamed requests.

#include "weft/codec/http2/client_stream.h"

#include <stdexcept>
#include <string>
#include <utility>

#include "client_stream_state.h"
#include "frame.h"
#include "session.h"
#include "weft/core/event_loop.h"
#include "weft/core/log.h"

namespace weft::http2 {

namespace {

// Parks the awaiting coroutine in `slot`; the codec resumes it (ClientCodec::run_wakes) when the
// stream changes. The waits re-check their condition, so a spurious resumption is harmless.
struct Park {
  std::coroutine_handle<>& slot;
  bool await_ready() const noexcept { return false; }
  void await_suspend(std::coroutine_handle<> handle) noexcept { slot = handle; }
  void await_resume() const noexcept {}
};

std::exception_ptr closed_error() {
  return std::make_exception_ptr(
      ClientStreamError("the HTTP/2 stream is closed", detail::ErrorCode::stream_closed, false));
}

}  // namespace

// ---- ClientCodec: streamed requests ---------------------------------------------------------------

void ClientCodec::stream_queued(StreamState& state) {
  if (state.data_deferred) {
    state.data_deferred = false;
    session_->resume_data(state.id);
  }
  want_send();
}

void ClientCodec::want_send() {
  if (pumping_ || ctx_ == nullptr) return;  // a pump is running: the frames leave at its end
  // The frames of every stream written in this turn of the loop leave together, from one callback.
  if (!pump_later_.schedule(ctx_->loop())) {
    log(LogLevel::debug, "channel {}: the loop has terminated; HTTP/2 frames are not sent", ctx_->channel().id());
  }
}

void ClientCodec::pump_posted() {
  if (pumping_) return;
  pumping_ = true;
  pump();
  pumping_ = false;
}

void ClientCodec::pump() {
  // Resumed coroutines queue frames; sending them lets waiting writers go on: until both settle.
  for (;;) {
    run_wakes();
    send_pending();
    if (wakes_.empty()) break;
  }
}

void ClientCodec::stream_read(StreamState& state, std::size_t bytes) {
  if (bytes == 0 || state.closed) return;
  session_->consume_stream(state.id, bytes);
  want_send();  // a WINDOW_UPDATE once half the window was read
}

void ClientCodec::stream_reset(const std::shared_ptr<StreamState>& state, std::uint32_t error_code) {
  const std::int32_t id = state->id;
  fail_stream(state, std::make_exception_ptr(ClientStreamError(
                         "the stream was reset (HTTP/2 error code " + std::to_string(error_code) + ")", error_code, false)));
  session_->submit_rst_stream(id, error_code);  // (a stream still waiting to open ends here)
  want_send();
}

void ClientCodec::fail_stream(const std::shared_ptr<StreamState>& state, std::exception_ptr error) {
  if (!state->error && !(state->closed && state->ended)) state->error = std::move(error);
  state->closed = true;
  state->codec = nullptr;
  state->upload.clear();
  state->queued = 0;
  wake(state);
}

void ClientCodec::wake(const std::shared_ptr<StreamState>& state) {
  if (state->wake_queued || (!state->reader && !state->writer)) return;
  state->wake_queued = true;
  wakes_.push_back(state);
}

void ClientCodec::run_wakes() {
  if (running_wakes_) return;  // the outer loop takes the new ones
  running_wakes_ = true;
  while (!wakes_.empty()) {
    waking_.swap(wakes_);
    for (auto& state : waking_) {
      state->wake_queued = false;
      if (auto reader = std::exchange(state->reader, {})) reader.resume();
      if (auto writer = std::exchange(state->writer, {})) writer.resume();
    }
    waking_.clear();
  }
  running_wakes_ = false;
}

// ---- ClientStream ---------------------------------------------------------------------------------

namespace {
// A handle let go: a stream whose response has ended only needs its request ended (END_STREAM
// closes it); one still receiving is reset.
void let_go(ClientStream& stream, const ClientStream::State& state) {
  if (state.closed) return;
  if (state.ended) {
    stream.end();
  } else {
    stream.reset();
  }
}
}  // namespace

ClientStream& ClientStream::operator=(ClientStream&& other) noexcept {
  if (this != &other) {
    if (state_) let_go(*this, *state_);
    state_ = std::move(other.state_);
  }
  return *this;
}

ClientStream::~ClientStream() {
  if (state_) let_go(*this, *state_);
}

std::int32_t ClientStream::id() const noexcept { return state_->id; }

Task<> ClientStream::write(ByteBuf chunk) { return write(ByteBuf(), std::move(chunk)); }

Task<> ClientStream::write(ByteBuf prefix, ByteBuf chunk) {
  State& st = *state_;
  if (st.end_requested) throw std::logic_error("http2::ClientStream::write after end()");
  if (st.error) std::rethrow_exception(st.error);
  if (st.closed || st.codec == nullptr) std::rethrow_exception(closed_error());
  const std::size_t n = prefix.readable_bytes() + chunk.readable_bytes();
  if (n == 0) co_return;
  st.queued += n;
  if (prefix.is_readable()) st.upload.push_back(std::move(prefix));
  if (chunk.is_readable()) st.upload.push_back(std::move(chunk));
  const std::size_t bound = st.codec->settings_.max_buffered_upload;
  st.codec->stream_queued(st);
  std::shared_ptr<State> keep = state_;  // the handle may move while this waits
  while (!keep->closed && keep->queued > bound) co_await Park{keep->writer};
  if (keep->error) std::rethrow_exception(keep->error);
  // The stream closed cleanly (the server's response ended, then its RST_STREAM(NO_ERROR)) while
  // these bytes waited: they were never sent.
  if (keep->upload_error) std::rethrow_exception(keep->upload_error);
}

void ClientStream::end() {
  State& st = *state_;
  if (st.end_requested || st.closed || st.codec == nullptr) return;
  st.end_requested = true;
  st.codec->stream_queued(st);
}

Task<int> ClientStream::response() {
  std::shared_ptr<State> keep = state_;
  while (!keep->head_done && !keep->closed) co_await Park{keep->reader};
  if (!keep->head_done) std::rethrow_exception(keep->error ? keep->error : closed_error());
  co_return keep->head.status();
}

const http::HttpClientResponse& ClientStream::head() const noexcept { return state_->head; }

http::HttpClientResponse ClientStream::take_head() noexcept { return std::move(state_->head); }

bool ClientStream::head_ended() const noexcept { return state_->head_ended; }

Task<std::optional<ByteBuf>> ClientStream::read() {
  std::shared_ptr<State> keep = state_;
  for (;;) {
    if (!keep->chunks.empty()) {
      ByteBuf chunk = keep->chunks.pop_front();
      if (keep->codec != nullptr) keep->codec->stream_read(*keep, chunk.readable_bytes());
      co_return std::optional<ByteBuf>(std::move(chunk));
    }
    if (keep->ended) co_return std::nullopt;
    if (keep->error) std::rethrow_exception(keep->error);
    if (keep->closed) std::rethrow_exception(closed_error());
    co_await Park{keep->reader};
  }
}

const Fields& ClientStream::trailers() const noexcept { return state_->trailers; }

TimePoint ClientStream::headers_sent_at() const noexcept { return state_->headers_sent_at; }

bool ClientStream::response_ended() const noexcept { return state_->ended || state_->error != nullptr; }

void ClientStream::reset(std::uint32_t error_code) {
  State& st = *state_;
  if (st.closed) return;
  if (st.codec == nullptr) {
    st.closed = true;
    return;
  }
  st.codec->stream_reset(state_, error_code);
}

}  // namespace weft::http2
