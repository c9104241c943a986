#include "weft/codec/http2/client_codec.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <stdexcept>
#include <string_view>
#include <utility>
#include <vector>

#include "client_stream_state.h"
#include "session.h"
#include "weft/buffer/byte_buf_allocator.h"
#include "weft/core/log.h"

namespace weft::http2 {

namespace {

// Header fields HTTP/2 forbids (RFC 9113 8.2.2), TE but "TE: trailers" among them; Host becomes :authority.
bool connection_specific(std::string_view lower_name, std::string_view value) noexcept {
  if (lower_name == "te") {
    return value.size() != 8 || !std::equal(value.begin(), value.end(), "trailers",
                                            [](char a, char b) { return (a >= 'A' && a <= 'Z' ? a + 32 : a) == b; });
  }
  return lower_name == "connection" || lower_name == "keep-alive" || lower_name == "transfer-encoding" ||
         lower_name == "upgrade" || lower_name == "proxy-connection" || lower_name == "host";
}

// A connection error's end: the GOAWAY leaves, then FIN, and what the server still sends is read
// (and dropped) for a while: closing with unread input would reset the connection, and the server
// could lose the GOAWAY that says why.
constexpr Duration kErrorLinger = std::chrono::seconds(2);
constexpr Duration kErrorFlushTimeout = std::chrono::seconds(10);

detail::HeaderField field(const std::string& name, const std::string& value) {
  return {reinterpret_cast<std::uint8_t*>(const_cast<char*>(name.data())),
          reinterpret_cast<std::uint8_t*>(const_cast<char*>(value.data())), name.size(), value.size(),
          detail::HeaderField::indexed};
}

detail::HeaderField ref_field(std::string_view name, std::string_view value) {
  return {reinterpret_cast<std::uint8_t*>(const_cast<char*>(name.data())),
          reinterpret_cast<std::uint8_t*>(const_cast<char*>(value.data())), name.size(), value.size(),
          detail::HeaderField::indexed};
}

bool has_uppercase(std::string_view name) noexcept {
  for (char c : name) {
    if (c >= 'A' && c <= 'Z') return true;
  }
  return false;
}

}  // namespace

struct ClientCodec::Stream {
  Promise<http::HttpClientResponse> done;
  bool fire = false;  // written down the pipeline: the response is fired, not given to `done`
  ByteBuf upload;     // the request body still to send
  int status = 0;
  std::string fields;  // name, '\0', value, '\0' for each field received
  std::size_t field_count = 0;
  std::size_t header_list_size = 0;  // of the header block being received (RFC 9113 6.5.2)
  ByteBuf body;
  const char* failure = nullptr;                           // a limit the response broke, or why it was malformed
  std::uint32_t failure_code = detail::ErrorCode::cancel;  // the reset's code for `failure`
  bool malformed = false;                 // `failure` is the session's: the server broke RFC 9113 (a stream error)
  bool idle = false;                      // `failure` is stream_idle_timeout's
  bool sent = false;                      // its HEADERS left (not waiting for the server's concurrency limit)
  TimePoint last_frame{};                 // a whole request's: when its HEADERS left, then its last frame
  std::shared_ptr<StreamState> streamed;  // a streamed request (ClientCodec::open): its shared state
};

namespace {
constexpr std::size_t kClientOutChunk = 16 * 1024;  // the first size of the output buffer
constexpr std::size_t kClientSpillAt = 64 * 1024;   // output written on to the channel at this size
constexpr std::size_t kCopyUploadBelow = 4096;      // smaller DATA payloads are copied, larger ones sliced
}  // namespace

// The session's hooks: its frames go to out_ (then the channel), its events to the streams.
struct ClientCodec::Hooks final : detail::SessionHooks {
  explicit Hooks(ClientCodec& codec) : c(codec) {}
  ClientCodec& c;

  Stream* stream(std::int32_t id) const {
    auto it = c.streams_.find(id);
    return it == c.streams_.end() ? nullptr : it->second.get();
  }

  int on_begin_headers(std::int32_t id) override {
    if (Stream* s = stream(id)) s->header_list_size = 0;  // each block on its own
    return 0;
  }

  int on_header(const detail::FrameInfo& frame, std::string_view n, std::string_view v) override {
    Stream* s = stream(frame.stream_id);
    if (s == nullptr || s->failure != nullptr) return 0;
    s->header_list_size += n.size() + v.size() + 32;
    if (s->header_list_size > c.settings_.max_header_list_size) {
      // The session decodes the rest of the block for HPACK's state only (the stream is resetting).
      s->failure = "the response's header list is larger than ClientSettings::max_header_list_size";
      s->failure_code = detail::ErrorCode::cancel;
      if (s->streamed) s->streamed->trailers = Fields();
      c.session_->submit_rst_stream(frame.stream_id, detail::ErrorCode::cancel);
      return 0;
    }
    if (frame.head == detail::HeadKind::trailers) {
      if (s->streamed) {  // a streamed response's trailers
        s->streamed->trailers.add_unchecked(n, v);
        return 0;
      }
    } else if (n == ":status") {  // (the session checked it: three digits, first)
      int status = 0;
      std::from_chars(v.data(), v.data() + v.size(), status);
      if (status >= 200 || s->status == 0) {  // a final status replaces an interim one and its fields
        s->fields.clear();
        s->field_count = 0;
      }
      s->status = status;
      return 0;
    } else if (frame.head == detail::HeadKind::interim) {
      return 0;  // an interim response's fields
    }
    if (s->field_count == http::ResponseHead::kInlineHeaders) {
      s->failure = "the response has more header fields than a ResponseHead holds";
      s->failure_code = detail::ErrorCode::internal_error;
      return detail::Result::reset_stream;  // resets the stream
    }
    s->fields.append(n).push_back('\0');
    s->fields.append(v).push_back('\0');
    ++s->field_count;
    return 0;
  }

  int on_data_chunk(const detail::FrameInfo& frame, const std::uint8_t* data, std::size_t length) override {
    const std::int32_t id = frame.stream_id;
    Stream* s = stream(id);
    detail::Session& session = *c.session_;
    if (s != nullptr && s->streamed) {
      // The connection's window returns now; the stream's as the application reads (stream_read).
      session.consume_connection(length);
      StreamState& st = *s->streamed;
      if (st.closed || length == 0) {
        session.consume_stream(id, length);
        return 0;
      }
      ByteBuf chunk = c.ctx_->allocator().buffer(length);
      chunk.write_bytes(data, length);
      st.chunks.push_back(std::move(chunk));
      c.wake(s->streamed);
      return 0;
    }
    session.consume(id, length);  // a whole response: its windows return at once
    if (s == nullptr || s->failure != nullptr) return 0;
    if (s->body.readable_bytes() + length > c.settings_.max_response_body) {
      s->failure = "the response body is larger than ClientSettings::max_response_body";
      s->failure_code = detail::ErrorCode::cancel;
      session.submit_rst_stream(id, detail::ErrorCode::cancel);
      return 0;
    }
    if (!s->body.has_storage()) s->body = c.ctx_->allocator().buffer(std::max<std::size_t>(length, 1024));
    s->body.ensure_writable(length);
    s->body.write_bytes(data, length);
    return 0;
  }

  int on_frame_recv(const detail::FrameInfo& frame) override {
    if (frame.type == detail::FrameType::headers || frame.type == detail::FrameType::data) {
      Stream* s = stream(frame.stream_id);
      if (s != nullptr && !s->streamed && c.settings_.stream_idle_timeout > Duration::zero())
        s->last_frame = c.ctx_->loop().now();
      if (s != nullptr && s->streamed && s->failure == nullptr) {
        StreamState& st = *s->streamed;
        const bool end = (frame.flags & detail::FrameFlag::end_stream) != 0;
        if (frame.head == detail::HeadKind::response && !st.head_done) {
          st.head = c.build_head(*s);
          st.head_done = true;
          st.head_ended = end;
        }
        if (end) st.ended = true;
        c.wake(s->streamed);
      }
    }
    if (frame.type == detail::FrameType::settings && (frame.flags & detail::FrameFlag::ack) == 0) {
      c.ready_.set_value();  // the first time only
    }
    if (frame.type == detail::FrameType::ping && (frame.flags & detail::FrameFlag::ack) != 0) c.keepalive_answered();
    if (frame.type == detail::FrameType::goaway) {
      c.goaway_ = true;
      c.goaway_last_stream_ = frame.last_stream_id;
    }
    return 0;
  }

  // A stream error (the session resets the stream: the response is malformed) or a connection
  // error (the session ends the connection): remembered for the failure it causes.
  int on_invalid_frame_recv(const detail::FrameInfo& frame, const char* what) override {
    c.last_error_ = what;
    if (Stream* s = stream(frame.stream_id); s != nullptr && s->failure == nullptr) {
      s->failure = what;
      s->failure_code = 0;  // (the reset's own)
      s->malformed = true;
    }
    return 0;
  }

  void on_frame_send(const detail::FrameInfo& frame) override {
    if (frame.type != detail::FrameType::headers) return;
    Stream* s = stream(frame.stream_id);
    if (s == nullptr || s->sent) return;
    // The stream's clock starts now, not while it waited for the server's concurrency limit.
    s->sent = true;
    const TimePoint now = c.ctx_->loop().now();
    if (s->streamed) {
      s->streamed->headers_sent_at = now;
    } else if (c.settings_.stream_idle_timeout > Duration::zero()) {
      s->last_frame = now;
      if (!c.idle_timer_) c.idle_at(now + c.settings_.stream_idle_timeout);
    }
  }

  void on_stream_close(std::int32_t stream_id, std::uint32_t error_code) override { c.finish(stream_id, error_code); }

  // The client writes all it has: its output is bounded by its requests (and their windows).
  bool writable() override { return true; }
  ByteBuf& output(std::size_t n) override {
    if (!c.out_.has_storage()) c.out_ = c.ctx_->allocator().buffer(std::max(n, kClientOutChunk));
    c.out_.ensure_writable(n);
    return c.out_;
  }
  void wrote() override {
    if (c.out_.readable_bytes() >= kClientSpillAt) c.write_out();
  }
  ByteBufAllocator& allocator() override { return c.ctx_->allocator(); }

  // DATA: the frame header, then `length` bytes of the request body (small pieces copied, large
  // ones by reference).
  int send_data(const detail::FrameInfo&, const std::uint8_t* frame_header, std::size_t length, void* source) override {
    Stream& s = *static_cast<Stream*>(source);
    output(9).write_bytes(frame_header, 9);
    try {
      if (s.streamed) {
        StreamState& st = *s.streamed;
        std::size_t left = length;
        while (left > 0) {
          ByteBuf& front = st.upload[0];
          const std::size_t take = std::min(left, front.readable_bytes());
          put(front, take);
          left -= take;
          if (!front.is_readable()) st.upload.drop_front();
        }
        st.queued -= length;
        if (st.writer && st.queued <= c.settings_.max_buffered_upload) c.wake(s.streamed);
      } else {
        put(s.upload, length);
        if (!s.upload.is_readable()) s.upload.release();
      }
    } catch (const std::exception&) {
      return detail::Result::end_session;
    }
    wrote();
    return 0;
  }

  // The next `n` bytes of `bytes` into the output: copied when few, else a slice of them goes
  // after what is in out_.
  void put(ByteBuf& bytes, std::size_t n) {
    if (n < kCopyUploadBelow) {
      output(n).write_bytes(bytes.read_ptr(), n);
      bytes.skip_bytes(n);
    } else {
      c.write_out();
      c.ctx_->write(bytes.read_slice(n));
      c.unflushed_ = true;
    }
  }

  // The body's next DATA frame: how many bytes it may carry (sent by send_data).
  static ssize_t read_upload(std::int32_t, std::size_t max, std::uint32_t* flags, void* source) {
    Stream& s = *static_cast<Stream*>(source);
    if (s.streamed) return read_streamed(s, max, flags);
    const std::size_t n = std::min(max, s.upload.readable_bytes());
    if (n == s.upload.readable_bytes()) *flags |= detail::DataFlag::eof;
    return static_cast<ssize_t>(n);
  }

  // A streamed request's queued chunks; DEFERRED while none is queued and the end is not asked for.
  static ssize_t read_streamed(Stream& s, std::size_t max, std::uint32_t* flags) {
    StreamState& st = *s.streamed;
    const std::size_t n = std::min(max, st.queued);
    if (n == st.queued) {
      if (st.end_requested) {
        *flags |= detail::DataFlag::eof;
      } else if (n == 0) {
        st.data_deferred = true;
        return detail::Result::deferred;
      }
    }
    return static_cast<ssize_t>(n);
  }
};

ClientCodec::ClientCodec(ClientSettings settings) : settings_(std::move(settings)) {}

ClientCodec::~ClientCodec() {
  for (auto& [id, s] : streams_) {
    if (s->streamed) s->streamed->codec = nullptr;
  }
  session_.reset();  // before the hooks and the streams its data sources point to
}

void ClientCodec::handler_added(Context& ctx) {
  ctx_ = &ctx;
  hooks_ = std::make_unique<Hooks>(*this);
  // Windows return as the application takes the bytes: at once for whole responses, as read()
  // hands them out for streamed ones (the connection's at once for both).
  session_ = std::make_unique<detail::Session>(*hooks_, true, detail::Role::client);
  const detail::SettingEntry entries[] = {
      {detail::SettingId::enable_push, 0},
      {detail::SettingId::initial_window_size, settings_.initial_window_size},
      {detail::SettingId::max_header_list_size, settings_.max_header_list_size},
  };
  if (!session_->submit_settings(entries, std::size(entries))) {
    throw std::invalid_argument("http2::ClientSettings::initial_window_size is above 2^31-1");
  }
  // The connection's window grows with the streams' (a WINDOW_UPDATE on stream 0 after SETTINGS).
  session_->set_local_window_size(static_cast<std::int32_t>(settings_.initial_window_size));
  if (ctx.channel().is_active()) channel_active(ctx);
}

std::uint32_t ClientCodec::peer_max_concurrent_streams() const noexcept {
  return session_ ? session_->peer_max_concurrent_streams() : 100;
}

void ClientCodec::handler_removed(Context&) {
  stop_keepalive();
  stop_idle();
  pump_later_.cancel();
  fail_all(std::make_exception_ptr(ChannelClosedError("the HTTP/2 client codec was removed")));
  ctx_ = nullptr;
}

void ClientCodec::channel_active(Context& ctx) {
  if (!started_) {
    started_ = true;
    if (settings_.scheme.empty()) settings_.scheme = "http";
    if (settings_.authority.empty()) {
      const SocketAddress remote = ctx.channel().remote_address();
      settings_.authority = remote.is_unix() ? "localhost" : remote.to_string();  // as grpc-core for unix: targets
    }
    send_pending();
    if (settings_.keepalive_time > Duration::zero()) {
      last_read_ = ctx.loop().now();
      keepalive_at(last_read_ + settings_.keepalive_time);
    }
  }
  if (!ctx.is_removed()) ctx.fire_channel_active();
}

void ClientCodec::channel_inactive(Context& ctx) {
  stop_keepalive();
  stop_idle();
  fail_all(std::make_exception_ptr(ChannelClosedError("the HTTP/2 connection closed before the response")));
  ctx.fire_channel_inactive();
}

void ClientCodec::read_message(Context& ctx, MessageRef message) {
  if (!message.is<ByteBuf>()) {
    ctx.fire_read(std::move(message));
    return;
  }
  if (failed_) return;  // the connection is over (bytes after its end)
  if (keepalive_timer_) last_read_ = ctx.loop().now();
  ByteBuf& bytes = message.as<ByteBuf>();
  const bool outer = !pumping_;
  pumping_ = true;  // the streams' frames leave once, after the coroutines this resumes have run
  in_session_ = true;
  const auto rv = session_->receive(bytes.read_ptr(), bytes.readable_bytes());
  in_session_ = false;
  if (rv < 0 || session_->terminated()) {
    // A connection error: the session's GOAWAY leaves, then the connection closes.
    std::string what = rv < 0                   ? detail::describe(static_cast<int>(rv))
                       : last_error_ != nullptr ? last_error_
                                                : "protocol error";
    log(LogLevel::debug, "channel {}: HTTP/2 client: {}; closing", ctx.channel().id(), what);
    send_pending();
    fail_all(std::make_exception_ptr(Error("HTTP/2 connection error: " + what)));
    ctx.channel().close_gracefully(kErrorLinger, kErrorFlushTimeout);
  }
  if (outer) {
    pump();
    pumping_ = false;
  }
}

void ClientCodec::write_message(Context& ctx, MessageRef message) {
  if (!message.is<http::HttpClientRequest>()) {
    ctx.write(std::move(message));
    return;
  }
  submit(std::move(message.as<http::HttpClientRequest>()), Promise<http::HttpClientResponse>(&ctx.loop()), true);
}

std::int32_t ClientCodec::request(http::HttpClientRequest request, Promise<http::HttpClientResponse> done) {
  return submit(std::move(request), std::move(done), false);
}

void ClientCodec::cancel(std::int32_t id) {
  auto it = streams_.find(id);
  if (it == streams_.end() || failed_ || session_ == nullptr) return;
  Stream& s = *it->second;
  if (s.streamed) {
    if (!s.streamed->closed) stream_reset(s.streamed, detail::ErrorCode::cancel);
    return;
  }
  if (s.failure != nullptr) return;  // reset already
  s.failure = "the request was cancelled";
  s.failure_code = detail::ErrorCode::cancel;
  session_->submit_rst_stream(id, detail::ErrorCode::cancel);
  send_pending();  // the reset leaves; the stream's close fails the request
}

std::int32_t ClientCodec::submit(http::HttpClientRequest request, Promise<http::HttpClientResponse> done, bool fire) {
  if (fire) {  // written down the pipeline: a failure is an exception event
    done.future().add_listener([ctx = ctx_](const Future<http::HttpClientResponse>& f) {
      if (auto error = f.error(); error && ctx != nullptr && ctx->channel().is_open()) ctx->fire_exception(error);
    });
  }
  if (ctx_ == nullptr || session_ == nullptr || !ctx_->channel().is_open()) {
    done.fail(ChannelClosedError("the HTTP/2 connection is closed"));
    return 0;
  }
  if (goaway_) {
    done.fail(ClientStreamError("the server sent GOAWAY: no new requests on this connection",
                                detail::ErrorCode::refused_stream, true));
    return 0;
  }
  const std::size_t limit = session_->peer_max_concurrent_streams();
  if (streams_.size() >= limit + settings_.max_queued_requests) {
    done.fail(ClientStreamError("too many requests wait for the server's concurrency limit",
                                detail::ErrorCode::refused_stream, true));
    return 0;
  }
  // The fields: pseudo-headers first, then the request's own, names lowercase.
  std::vector<std::string> strings;
  strings.reserve(16);
  std::string authority = settings_.authority;
  std::vector<std::pair<std::string, std::string>> regular;
  for (std::string_view block = request.header_block(); !block.empty();) {
    const std::size_t end = block.find("\r\n");
    const std::string_view line = block.substr(0, end);
    block = end == std::string_view::npos ? std::string_view() : block.substr(end + 2);
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string name(line.substr(0, colon));
    std::transform(name.begin(), name.end(), name.begin(), [](char c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; });
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
    if (name == "host") authority = std::string(value);
    if (connection_specific(name, value)) continue;
    regular.emplace_back(std::move(name), std::string(value));
  }
  auto s = std::make_unique<Stream>();
  s->done = std::move(done);
  s->fire = fire;
  s->upload = std::move(request.owned_body());
  if (s->upload.is_readable()) regular.emplace_back("content-length", std::to_string(s->upload.readable_bytes()));
  const std::string method_name = ":method", scheme_name = ":scheme", authority_name = ":authority",
                    path_name = ":path";
  std::vector<detail::HeaderField> nva;
  nva.reserve(4 + regular.size());
  nva.push_back(field(method_name, request.method()));
  nva.push_back(field(scheme_name, settings_.scheme));
  nva.push_back(field(authority_name, authority));
  nva.push_back(field(path_name, request.target()));
  for (const auto& [name, value] : regular) nva.push_back(field(name, value));

  const detail::DataSource source{s.get(), &Hooks::read_upload};
  const std::int32_t id = session_->submit_request(nva.data(), nva.size(), s->upload.is_readable() ? &source : nullptr);
  if (id < 0) {
    s->done.fail(ClientStreamError(std::string("HTTP/2 request refused: ") + detail::describe(id),
                                   detail::ErrorCode::refused_stream, true));
    return 0;
  }
  streams_.emplace(id, std::move(s));
  send_pending();  // its HEADERS leave now unless the server's concurrency limit holds them
  return id;
}

ClientStream ClientCodec::open(std::string_view method, std::string_view path, std::span<const http::Header> headers) {
  return open_stream(method, {}, path, headers);
}

ClientStream ClientCodec::open_extended_connect(std::string_view protocol, std::string_view path,
                                                std::span<const http::Header> headers) {
  if (!peer_enable_connect_protocol()) {
    auto state = std::make_shared<StreamState>();
    state->error = std::make_exception_ptr(
        ClientStreamError("the server did not enable extended CONNECT (SETTINGS_ENABLE_CONNECT_PROTOCOL, RFC 8441)",
                          detail::ErrorCode::protocol_error, false));
    state->closed = true;
    return ClientStream(std::move(state));
  }
  return open_stream("CONNECT", protocol, path, headers);
}

bool ClientCodec::peer_enable_connect_protocol() const noexcept {
  return session_ != nullptr && session_->peer_connect_protocol();
}

ClientStream ClientCodec::open_stream(std::string_view method, std::string_view protocol, std::string_view path,
                                      std::span<const http::Header> headers) {
  auto state = std::make_shared<StreamState>();
  ClientStream handle(state);
  auto fail = [&](std::exception_ptr error) {
    state->error = std::move(error);
    state->closed = true;
    return std::move(handle);
  };
  if (ctx_ == nullptr || session_ == nullptr || !ctx_->channel().is_open()) {
    return fail(std::make_exception_ptr(ChannelClosedError("the HTTP/2 connection is closed")));
  }
  if (goaway_) {
    return fail(std::make_exception_ptr(ClientStreamError("the server sent GOAWAY: no new requests on this connection",
                                                          detail::ErrorCode::refused_stream, true)));
  }
  const std::size_t limit = session_->peer_max_concurrent_streams();
  if (streams_.size() >= limit + settings_.max_queued_requests) {
    return fail(std::make_exception_ptr(ClientStreamError("too many requests wait for the server's concurrency limit",
                                                          detail::ErrorCode::refused_stream, true)));
  }
  if (!nva_) nva_ = std::make_unique<FieldRefs>();
  std::vector<detail::HeaderField>& nva = nva_->nv;
  nva.clear();
  nva.push_back(ref_field(":method", method));
  if (!protocol.empty()) nva.push_back(ref_field(":protocol", protocol));
  nva.push_back(ref_field(":scheme", settings_.scheme));
  nva.push_back(ref_field(":authority", settings_.authority));
  nva.push_back(ref_field(":path", path));
  for (const http::Header& h : headers) {
    if (has_uppercase(h.name)) {
      throw std::invalid_argument("http2::ClientCodec::open: header name '" + std::string(h.name) +
                                  "' is not lowercase");
    }
    if (h.name != "host" && connection_specific(h.name, h.value)) continue;  // (dropped, as request() does)
    nva.push_back(ref_field(h.name, h.value));
  }
  auto s = std::make_unique<Stream>();
  s->streamed = state;
  const detail::DataSource source{s.get(), &Hooks::read_upload};
  const std::int32_t id = session_->submit_request(nva.data(), nva.size(), &source);
  if (id < 0) {
    return fail(std::make_exception_ptr(ClientStreamError(
        std::string("HTTP/2 request refused: ") + detail::describe(id), detail::ErrorCode::refused_stream, true)));
  }
  state->codec = this;
  state->id = id;
  streams_.emplace(id, std::move(s));
  want_send();
  return handle;
}

void ClientCodec::send_pending() {
  // After fail_all the streams the session still knows are gone: their data sources must not run.
  if (session_ == nullptr || in_session_ || ctx_ == nullptr || !started_ || failed_) return;
  Context& ctx = *ctx_;
  in_session_ = true;
  const int rv = session_->send();
  in_session_ = false;
  write_out();
  if (unflushed_ && ctx.channel().is_open()) ctx.flush();
  unflushed_ = false;
  if (rv != 0) {
    log(LogLevel::debug, "channel {}: HTTP/2 client: sending failed: {}; closing", ctx.channel().id(),
        detail::describe(rv));
    fail_all(std::make_exception_ptr(Error(std::string("HTTP/2 connection error: ") + detail::describe(rv))));
    ctx.channel().close_gracefully(kErrorLinger, kErrorFlushTimeout);
    return;
  }
  if (!wakes_.empty()) want_send();  // writers the window let go on resume from a pump
}

void ClientCodec::write_out() {
  if (!out_.is_readable() || ctx_ == nullptr) return;
  if (!ctx_->channel().is_open()) {
    out_.clear();
    return;
  }
  ctx_->write(std::move(out_));
  unflushed_ = true;
}

void ClientCodec::finish(std::int32_t id, std::uint32_t error_code) {
  auto it = streams_.find(id);
  if (it == streams_.end()) return;
  std::unique_ptr<Stream> s = std::move(it->second);
  streams_.erase(it);
  if (s->streamed) {
    StreamState& st = *s->streamed;
    std::exception_ptr error;
    if (s->failure != nullptr) {
      error = failure_error(*s, error_code);
    } else if (!st.ended) {
      const bool refused = error_code == detail::ErrorCode::refused_stream || (goaway_ && id > goaway_last_stream_);
      std::string what = refused ? "the server did not process the request" : "the server reset the stream";
      what += " (HTTP/2 error code " + std::to_string(error_code) + ")";
      error = std::make_exception_ptr(ClientStreamError(what, error_code, refused));
    }
    if (error) {
      fail_stream(s->streamed, error);
    } else {
      if (st.queued > 0 || !st.upload.empty()) {
        // Request bytes that will never be sent (the server ended the stream first): dropped now,
        // and a write() waiting for them fails.
        st.upload_error = std::make_exception_ptr(
            UploadDroppedError("the server closed the stream before the request body was sent (HTTP/2 error code " +
                                   std::to_string(error_code) + ")",
                               error_code, false));
        st.upload.clear();
        st.queued = 0;
      }
      st.closed = true;
      st.codec = nullptr;
      wake(s->streamed);
    }
    return;
  }
  if (s->failure != nullptr) {
    deliver(*s, failure_error(*s, error_code), nullptr);
    return;
  }
  if (error_code != detail::ErrorCode::no_error || s->status == 0) {
    const bool refused = error_code == detail::ErrorCode::refused_stream || (goaway_ && id > goaway_last_stream_);
    std::string what = refused ? "the server did not process the request" : "the server reset the stream";
    what += " (HTTP/2 error code " + std::to_string(error_code) + ")";
    deliver(*s, std::make_exception_ptr(ClientStreamError(what, error_code, refused)), nullptr);
    return;
  }
  http::HttpClientResponse response = build_head(*s);
  response.body_ = std::move(s->body);
  deliver(*s, nullptr, &response);
}

// The failure of a stream the client reset: a limit its response broke, or a malformed response.
std::exception_ptr ClientCodec::failure_error(const Stream& s, std::uint32_t error_code) {
  if (s.idle) return std::make_exception_ptr(StreamIdleError(s.failure));
  const std::uint32_t code = s.failure_code != 0 ? s.failure_code : error_code;
  if (s.malformed && code == detail::ErrorCode::protocol_error) {
    return std::make_exception_ptr(ClientStreamError(
        std::string("the server's response is malformed (RFC 9113 8.1.1): ") + s.failure, code, false));
  }
  if (s.malformed) {  // (another stream error: a window overrun, HEADERS after END_STREAM)
    return std::make_exception_ptr(ClientStreamError(std::string("the server broke HTTP/2 on the stream: ") +
                                                         s.failure + " (HTTP/2 error code " + std::to_string(code) +
                                                         ")",
                                                     code, false));
  }
  return std::make_exception_ptr(ClientStreamError(s.failure, code, false));
}

http::HttpClientResponse ClientCodec::build_head(Stream& s) {
  http::HttpClientResponse response;
  response.head_.version = http::Version::http2;
  response.head_.status = s.status;
  if (!s.fields.empty()) {
    response.head_bytes_ = ctx_->allocator().buffer(s.fields.size());
    response.head_bytes_.write_bytes(s.fields.data(), s.fields.size());
    const char* p = reinterpret_cast<const char*>(response.head_bytes_.read_ptr());
    for (std::size_t i = 0; i < s.field_count; ++i) {
      const std::string_view name(p);
      const std::string_view value(p + name.size() + 1);
      response.head_.inline_headers[i] = http::Header{name, value};
      if (name == "content-length") {
        std::uint64_t length = 0;
        if (std::from_chars(value.data(), value.data() + value.size(), length).ec == std::errc()) {
          response.head_.content_length = length;
        }
      }
      p += name.size() + value.size() + 2;
    }
    response.head_.header_count = s.field_count;
  }
  return response;
}

void ClientCodec::deliver(Stream& s, std::exception_ptr error, http::HttpClientResponse* response) {
  if (error) {
    s.done.set_error(std::move(error));  // a written request's listener fires it as an exception event
  } else if (s.fire) {
    s.done.set_value(http::HttpClientResponse());
    if (ctx_ != nullptr) ctx_->fire_read(std::move(*response));
  } else {
    s.done.set_value(std::move(*response));
  }
}

void ClientCodec::fail_all(std::exception_ptr error) {
  failed_ = true;
  ready_.set_error(error);  // when the SETTINGS never came
  auto streams = std::move(streams_);
  streams_.clear();
  for (auto& [id, s] : streams) {
    if (s->streamed) {
      fail_stream(s->streamed, error);
    } else {
      s->done.set_error(error);
    }
  }
  run_wakes();
}

// ---- Keepalive ----------------------------------------------------------------------------------

void ClientCodec::keepalive_at(TimePoint when) {
  if (ctx_ == nullptr) return;
  EventLoop& loop = ctx_->loop();
  const TimePoint now = loop.now();
  // handler_removed cancels the timer (stop_keepalive) before the codec can go.
  keepalive_timer_ = loop.schedule(when > now ? when - now : Duration::zero(), [this] {
    keepalive_timer_.reset();
    keepalive_due();
  });
}

void ClientCodec::keepalive_due() {
  if (ctx_ == nullptr || failed_ || session_ == nullptr) return;
  const TimePoint now = ctx_->loop().now();
  if (ping_outstanding_) {
    if (now - ping_sent_at_ < settings_.keepalive_timeout) {
      keepalive_at(ping_sent_at_ + settings_.keepalive_timeout);
      return;
    }
    log(LogLevel::debug, "channel {}: HTTP/2 client: keepalive PING not answered in {} ms; closing",
        ctx_->channel().id(),
        std::chrono::duration_cast<std::chrono::milliseconds>(settings_.keepalive_timeout).count());
    fail_all(std::make_exception_ptr(ChannelClosedError("the HTTP/2 server did not answer a keepalive PING")));
    ctx_->channel().close();
    return;
  }
  const TimePoint due = last_read_ + settings_.keepalive_time;
  if (now < due) {
    keepalive_at(due);
  } else if (!settings_.keepalive_without_calls && streams_.empty()) {
    keepalive_at(now + settings_.keepalive_time);  // nothing outstanding: no PING (grpc-core's default)
  } else {
    session_->submit_ping(0);
    ping_outstanding_ = true;
    ping_sent_at_ = now;
    send_pending();
    keepalive_at(now + settings_.keepalive_timeout);
  }
}

// The keepalive PING's ACK: the next one is due keepalive_time after it (the timer waited for the
// timeout).
void ClientCodec::keepalive_answered() {
  if (!ping_outstanding_) return;
  ping_outstanding_ = false;
  stop_keepalive();
  keepalive_at(last_read_ + settings_.keepalive_time);
}

void ClientCodec::stop_keepalive() noexcept {
  if (!keepalive_timer_) return;
  if (ctx_ != nullptr) ctx_->loop().cancel(*keepalive_timer_);
  keepalive_timer_.reset();
}

// ---- Streams' idle timeout ----------------------------------------------------------------------

void ClientCodec::idle_at(TimePoint when) {
  if (ctx_ == nullptr) return;
  EventLoop& loop = ctx_->loop();
  const TimePoint now = loop.now();
  // handler_removed and channel_inactive cancel the timer (stop_idle) before the codec can go.
  idle_timer_ = loop.schedule(when > now ? when - now : Duration::zero(), [this] {
    idle_timer_.reset();
    idle_due();
  });
}

void ClientCodec::idle_due() {
  if (ctx_ == nullptr || failed_ || session_ == nullptr) return;
  const Duration idle = settings_.stream_idle_timeout;
  const TimePoint now = ctx_->loop().now();
  std::optional<TimePoint> next;
  bool reset = false;
  for (auto& [id, s] : streams_) {
    if (s->streamed || s->failure != nullptr || !s->sent) continue;  // (a stream not sent yet is not idle)
    if (now - s->last_frame >= idle) {
      s->failure = "no frame of the response came for ClientSettings::stream_idle_timeout";
      s->failure_code = detail::ErrorCode::cancel;
      s->idle = true;
      session_->submit_rst_stream(id, detail::ErrorCode::cancel);
      reset = true;
    } else if (!next || s->last_frame + idle < *next) {
      next = s->last_frame + idle;
    }
  }
  if (next) idle_at(*next);
  if (reset) send_pending();  // the resets leave; each stream's close fails its request
}

void ClientCodec::stop_idle() noexcept {
  if (!idle_timer_) return;
  if (ctx_ != nullptr) ctx_->loop().cancel(*idle_timer_);
  idle_timer_.reset();
}

}  // namespace weft::http2
