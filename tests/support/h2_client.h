#pragma once
// An HTTP/2 client for tests: an nghttp2 client session that takes and gives bytes (no socket),
// records every response (status, headers, body, reset) and the GOAWAY it receives. The unit tests
// pump it against an EmbeddedChannel, the integration tests against a real socket.
//
// Header-only; a test that includes it links libnghttp2 (weft::nghttp2).

#include <nghttp2/nghttp2.h>

#include <sys/types.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace weft::test {

struct H2Response {
  int status = 0;
  std::vector<std::pair<std::string, std::string>> headers;
  std::vector<std::pair<std::string, std::string>> trailers;  // a HEADERS frame after the response's
  std::string body;              // unless the client was told not to keep bodies
  std::uint64_t body_size = 0;   // bytes of DATA received
  std::uint64_t body_hash = 1469598103934665603ull;  // FNV-1a of them
  bool closed = false;               // the stream has closed (normally or by a reset)
  std::uint32_t close_error = 0;     // its error code (NGHTTP2_NO_ERROR when it ended normally)

  std::optional<std::string> header(std::string_view name) const {
    for (const auto& [n, v] : headers) {
      if (n == name) return v;
    }
    return std::nullopt;
  }
};

class H2Client {
 public:
  // `settings`: the client's SETTINGS (none: the protocol's defaults). `manual_windows`: the client
  // returns windows only when told (consume()), as a client that stops reading would.
  explicit H2Client(std::vector<nghttp2_settings_entry> settings = {}, bool manual_windows = false) {
    nghttp2_session_callbacks* cb = nullptr;
    nghttp2_session_callbacks_new(&cb);
    nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data);
    nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_close);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame);
    nghttp2_option* option = nullptr;
    nghttp2_option_new(&option);
    // Until the server's SETTINGS arrive, assume no concurrency limit (so that tests can go past it).
    nghttp2_option_set_peer_max_concurrent_streams(option, 100000);
    if (manual_windows) nghttp2_option_set_no_auto_window_update(option, 1);
    nghttp2_session_client_new2(&session_, cb, this, option);
    nghttp2_option_del(option);
    nghttp2_session_callbacks_del(cb);
    nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings.data(), settings.size());
  }
  ~H2Client() { nghttp2_session_del(session_); }
  H2Client(const H2Client&) = delete;
  H2Client& operator=(const H2Client&) = delete;

  nghttp2_session* session() const noexcept { return session_; }

  // Submits a request; returns its stream id. `end_stream` false: HEADERS without END_STREAM and no
  // body (the stream stays open).
  std::int32_t request(const std::string& method, const std::string& path, const std::string& body = "",
                       std::vector<std::pair<std::string, std::string>> extra = {}, bool end_stream = true) {
    std::vector<std::pair<std::string, std::string>> fields = {
        {":method", method}, {":scheme", "http"}, {":authority", "test.example"}, {":path", path}};
    if (!body.empty()) fields.emplace_back("content-length", std::to_string(body.size()));
    for (auto& f : extra) fields.push_back(std::move(f));
    std::vector<nghttp2_nv> nva;
    for (auto& [n, v] : fields) {
      nva.push_back({reinterpret_cast<std::uint8_t*>(n.data()), reinterpret_cast<std::uint8_t*>(v.data()), n.size(),
                     v.size(), NGHTTP2_NV_FLAG_NONE});
    }
    std::int32_t id;
    if (!end_stream) {
      id = nghttp2_submit_headers(session_, NGHTTP2_FLAG_NONE, -1, nullptr, nva.data(), nva.size(), nullptr);
    } else if (body.empty()) {
      id = nghttp2_submit_request(session_, nullptr, nva.data(), nva.size(), nullptr, nullptr);
    } else {
      // The body is read from a string the client keeps until the stream ends.
      auto source = std::make_unique<Upload>();
      source->bytes = body;
      nghttp2_data_provider provider;
      provider.source.ptr = source.get();
      provider.read_callback = read_upload;
      id = nghttp2_submit_request(session_, nullptr, nva.data(), nva.size(), &provider, nullptr);
      uploads_.push_back(std::move(source));
    }
    if (id < 0) throw std::runtime_error(std::string("nghttp2_submit_request: ") + nghttp2_strerror(id));
    responses_[id];
    return id;
  }

  // A request whose body is sent piece by piece: send() queues bytes, finish() ends it (with
  // trailers when given). Returns its stream id.
  std::int32_t request_streamed(const std::string& method, const std::string& path,
                                std::vector<std::pair<std::string, std::string>> extra = {}) {
    std::vector<std::pair<std::string, std::string>> fields = {
        {":method", method}, {":scheme", "http"}, {":authority", "test.example"}, {":path", path}};
    for (auto& f : extra) fields.push_back(std::move(f));
    std::vector<nghttp2_nv> nva;
    for (auto& [n, v] : fields) {
      nva.push_back({reinterpret_cast<std::uint8_t*>(n.data()), reinterpret_cast<std::uint8_t*>(v.data()), n.size(),
                     v.size(), NGHTTP2_NV_FLAG_NONE});
    }
    auto source = std::make_unique<Upload>();
    source->streamed = true;
    nghttp2_data_provider provider;
    provider.source.ptr = source.get();
    provider.read_callback = read_upload;
    const std::int32_t id = nghttp2_submit_request(session_, nullptr, nva.data(), nva.size(), &provider, nullptr);
    if (id < 0) throw std::runtime_error(std::string("nghttp2_submit_request: ") + nghttp2_strerror(id));
    source->id = id;
    streamed_[id] = source.get();
    uploads_.push_back(std::move(source));
    responses_[id];
    return id;
  }
  // More body for a request_streamed() stream (or, with a generator, `n` bytes made as they go).
  void send(std::int32_t id, std::string_view bytes) {
    Upload& u = *streamed_.at(id);
    u.bytes.append(bytes);
    resume(u);
  }
  void send_generated(std::int32_t id, std::uint64_t n, char (*byte_at)(std::uint64_t)) {
    Upload& u = *streamed_.at(id);
    u.generated += n;
    u.byte_at = byte_at;
    resume(u);
  }
  // Ends a request_streamed() body, with trailers when given.
  void finish(std::int32_t id, std::vector<std::pair<std::string, std::string>> trailers = {}) {
    Upload& u = *streamed_.at(id);
    u.ended = true;
    u.trailers = std::move(trailers);
    resume(u);
  }
  // Bytes of a request_streamed() body not yet handed to the session.
  std::uint64_t unsent(std::int32_t id) const {
    const Upload& u = *streamed_.at(id);
    return (u.bytes.size() - u.sent) + (u.generated - u.generated_sent);
  }
  // manual_windows: returns `n` bytes of stream `id`'s window (and the connection's).
  void consume(std::int32_t id, std::size_t n) { nghttp2_session_consume(session_, id, n); }
  // Stop keeping response bodies (size and hash still counted): for transfers of many MiB.
  void keep_bodies(bool keep) { keep_bodies_ = keep; }

  void reset(std::int32_t id, std::uint32_t error = NGHTTP2_CANCEL) {
    nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, id, error);
  }
  void ping() {
    const std::uint8_t opaque[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    nghttp2_submit_ping(session_, NGHTTP2_FLAG_NONE, opaque);
  }

  // Sends `body` on stream `id` (opened with end_stream false) and ends the stream.
  void send_body(std::int32_t id, const std::string& body) {
    auto source = std::make_unique<Upload>();
    source->bytes = body;
    nghttp2_data_provider provider;
    provider.source.ptr = source.get();
    provider.read_callback = read_upload;
    const int rv = nghttp2_submit_data(session_, NGHTTP2_FLAG_END_STREAM, id, &provider);
    if (rv != 0) throw std::runtime_error(std::string("nghttp2_submit_data: ") + nghttp2_strerror(rv));
    uploads_.push_back(std::move(source));
  }
  // PING ACKs received.
  int ping_acks() const noexcept { return ping_acks_; }

  // What the client has to send now (the connection preface first).
  std::string take_output() {
    std::string out;
    for (;;) {
      const std::uint8_t* data = nullptr;
      const ssize_t n = nghttp2_session_mem_send(session_, &data);
      if (n <= 0) break;
      out.append(reinterpret_cast<const char*>(data), static_cast<std::size_t>(n));
    }
    return out;
  }
  // Bytes from the server. False once the client saw a connection error.
  bool receive(std::string_view bytes) {
    const ssize_t n = nghttp2_session_mem_recv(session_, reinterpret_cast<const std::uint8_t*>(bytes.data()),
                                               bytes.size());
    if (n < 0) error_ = static_cast<int>(n);
    return n >= 0;
  }

  const H2Response& response(std::int32_t id) { return responses_[id]; }
  std::map<std::int32_t, H2Response>& responses() { return responses_; }
  bool all_closed() const {
    for (const auto& [id, r] : responses_) {
      if (!r.closed) return false;
    }
    return true;
  }
  std::optional<std::uint32_t> goaway_error() const { return goaway_error_; }
  int error() const noexcept { return error_; }

 private:
  struct Upload {
    std::string bytes;
    std::size_t sent = 0;
    // request_streamed(): more may come (send, send_generated), until finish().
    bool streamed = false;
    bool ended = false;
    bool deferred = false;
    std::int32_t id = 0;
    std::uint64_t generated = 0;
    std::uint64_t generated_sent = 0;
    char (*byte_at)(std::uint64_t) = nullptr;
    std::vector<std::pair<std::string, std::string>> trailers;
  };
  void resume(Upload& u) {
    if (!u.deferred) return;
    u.deferred = false;
    nghttp2_session_resume_data(session_, u.id);
  }

  static H2Client& self(void* user_data) { return *static_cast<H2Client*>(user_data); }

  static int on_header(nghttp2_session*, const nghttp2_frame* frame, const std::uint8_t* name, std::size_t namelen,
                       const std::uint8_t* value, std::size_t valuelen, std::uint8_t, void* user_data) {
    H2Response& r = self(user_data).responses_[frame->hd.stream_id];
    std::string n(reinterpret_cast<const char*>(name), namelen), v(reinterpret_cast<const char*>(value), valuelen);
    if (frame->hd.type == NGHTTP2_HEADERS && frame->headers.cat == NGHTTP2_HCAT_HEADERS && r.status >= 200) {
      r.trailers.emplace_back(std::move(n), std::move(v));
    } else if (n == ":status") {
      r.status = std::stoi(v);
      r.headers.clear();  // a final status after an interim one
    } else {
      r.headers.emplace_back(std::move(n), std::move(v));
    }
    return 0;
  }
  static int on_data(nghttp2_session*, std::uint8_t, std::int32_t id, const std::uint8_t* data, std::size_t len,
                     void* user_data) {
    H2Client& c = self(user_data);
    H2Response& r = c.responses_[id];
    if (c.keep_bodies_) r.body.append(reinterpret_cast<const char*>(data), len);
    r.body_size += len;
    for (std::size_t i = 0; i < len; ++i) r.body_hash = (r.body_hash ^ data[i]) * 1099511628211ull;
    return 0;
  }
  static int on_close(nghttp2_session*, std::int32_t id, std::uint32_t error, void* user_data) {
    H2Response& r = self(user_data).responses_[id];
    r.closed = true;
    r.close_error = error;
    return 0;
  }
  static int on_frame(nghttp2_session*, const nghttp2_frame* frame, void* user_data) {
    if (frame->hd.type == NGHTTP2_GOAWAY) self(user_data).goaway_error_ = frame->goaway.error_code;
    if (frame->hd.type == NGHTTP2_PING && (frame->hd.flags & NGHTTP2_FLAG_ACK) != 0) ++self(user_data).ping_acks_;
    return 0;
  }
  static ssize_t read_upload(nghttp2_session* session, std::int32_t stream_id, std::uint8_t* buf, std::size_t length,
                             std::uint32_t* flags, nghttp2_data_source* source, void*) {
    Upload& u = *static_cast<Upload*>(source->ptr);
    if (u.streamed) {
      std::size_t n = std::min(length, u.bytes.size() - u.sent);
      std::copy_n(u.bytes.data() + u.sent, n, buf);
      u.sent += n;
      if (u.sent == u.bytes.size()) {
        u.bytes.clear();
        u.sent = 0;
      }
      while (n < length && u.generated_sent < u.generated) buf[n++] = u.byte_at(u.generated_sent++);
      const bool drained = u.sent == u.bytes.size() && u.generated_sent == u.generated;
      if (n == 0 && !u.ended) {
        u.deferred = true;
        return NGHTTP2_ERR_DEFERRED;
      }
      if (drained && u.ended) {
        *flags |= NGHTTP2_DATA_FLAG_EOF;
        if (!u.trailers.empty()) {
          *flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
          std::vector<nghttp2_nv> nva;
          for (auto& [tn, tv] : u.trailers) {
            nva.push_back({reinterpret_cast<std::uint8_t*>(tn.data()), reinterpret_cast<std::uint8_t*>(tv.data()),
                           tn.size(), tv.size(), NGHTTP2_NV_FLAG_NONE});
          }
          nghttp2_submit_trailer(session, stream_id, nva.data(), nva.size());
        }
      }
      return static_cast<ssize_t>(n);
    }
    const std::size_t n = std::min(length, u.bytes.size() - u.sent);
    std::copy_n(u.bytes.data() + u.sent, n, buf);
    u.sent += n;
    if (u.sent == u.bytes.size()) *flags |= NGHTTP2_DATA_FLAG_EOF;
    return static_cast<ssize_t>(n);
  }

  nghttp2_session* session_ = nullptr;
  std::map<std::int32_t, H2Response> responses_;
  std::vector<std::unique_ptr<Upload>> uploads_;
  std::map<std::int32_t, Upload*> streamed_;
  bool keep_bodies_ = true;
  std::optional<std::uint32_t> goaway_error_;
  int error_ = 0;
  int ping_acks_ = 0;
};

}  // namespace weft::test
