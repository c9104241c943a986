#include "ws_load.h"

#include <fmt/format.h>
#include <sys/random.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <latch>
#include <memory>
#include <optional>
#include <string_view>
#include <system_error>

#include "weft/buffer/byte_buf.h"
#include "weft/channel/bootstrap.h"
#include "weft/channel/context.h"
#include "weft/channel/handler.h"
#include "weft/codec/byte_to_message_decoder.h"
#include "weft/codec/http1/body_decoder.h"
#include "weft/codec/tls/tls_context.h"
#include "weft/codec/tls/tls_error.h"
#include "weft/codec/tls/tls_handler.h"
#include "weft/codec/websocket/deflate.h"
#include "weft/codec/websocket/frame.h"
#include "weft/codec/websocket/upgrade.h"

namespace weft::load {

namespace {

// A 101's head larger than this is not a WebSocket server's answer.
constexpr std::size_t kMaxHandshakeResponse = 16 * 1024;

// The masking keys' source. RFC 6455 section 10.3 asks for unpredictable keys so that a hostile
// page cannot choose the bytes an intermediary sees; a load generator sends its own fixed payloads,
// so a fast generator per connection (xorshift64*, seeded from getrandom) is enough here, and costs
// a few instructions a frame where OpenSSL's RAND_bytes (FrameEncoder's) costs hundreds.
class MaskKeys {
 public:
  MaskKeys() {
    if (::getrandom(&state_, sizeof state_, 0) != static_cast<ssize_t>(sizeof state_) || state_ == 0) {
      state_ = static_cast<std::uint64_t>(now_ns()) | 1;
    }
  }
  std::uint32_t next() noexcept {
    state_ ^= state_ >> 12;
    state_ ^= state_ << 25;
    state_ ^= state_ >> 27;
    return static_cast<std::uint32_t>((state_ * 0x2545F4914F6CDD1DULL) >> 32);
  }

 private:
  std::uint64_t state_ = 0;
};

std::size_t masked_header_size(std::size_t length) noexcept {
  return 2 + (length < 126 ? 0 : length < 65536 ? 2 : 8) + 4;
}

// Writes a masked frame (FIN set) of `payload` at out's writer index (room for it made by the caller).
void write_masked_frame(ByteBuf& out, std::uint8_t first_byte, std::string_view payload, std::uint32_t key) {
  std::uint8_t* p = out.write_ptr();
  const std::size_t n = payload.size();
  std::size_t h = 0;
  p[h++] = first_byte;
  if (n < 126) {
    p[h++] = static_cast<std::uint8_t>(0x80 | n);
  } else if (n < 65536) {
    p[h++] = 0x80 | 126;
    p[h++] = static_cast<std::uint8_t>(n >> 8);
    p[h++] = static_cast<std::uint8_t>(n);
  } else {
    p[h++] = 0x80 | 127;
    for (int shift = 56; shift >= 0; shift -= 8)
      p[h++] = static_cast<std::uint8_t>(static_cast<std::uint64_t>(n) >> shift);
  }
  std::memcpy(p + h, &key, 4);
  const std::uint8_t* key_bytes = p + h;
  h += 4;
  ws::copy_masked(p + h, reinterpret_cast<const std::uint8_t*>(payload.data()), n, key_bytes);
  out.advance_writer(h + n);
}

std::string base64(const std::uint8_t* data, std::size_t n) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (std::size_t i = 0; i < n; i += 3) {
    const std::uint32_t v = (static_cast<std::uint32_t>(data[i]) << 16) |
                            (i + 1 < n ? static_cast<std::uint32_t>(data[i + 1]) << 8 : 0) |
                            (i + 2 < n ? data[i + 2] : 0);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += i + 1 < n ? kAlphabet[(v >> 6) & 63] : '=';
    out += i + 2 < n ? kAlphabet[v & 63] : '=';
  }
  return out;
}

bool iequals(std::string_view a, std::string_view b) noexcept {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

std::string_view trim(std::string_view s) noexcept {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// What a 101 said: whether it is one (with the right accept key), and permessage-deflate's terms.
struct HandshakeAnswer {
  bool switched = false;  // 101 with Upgrade: websocket and the expected Sec-WebSocket-Accept
  bool refused = false;   // another status
  std::string reason;     // why not switched
  std::optional<ws::DeflateParameters> deflate;
};

// Reads permessage-deflate's parameters from a 101's Sec-WebSocket-Extensions value; nullopt when
// it names another extension or a parameter this client did not offer to accept.
std::optional<ws::DeflateParameters> parse_extension(std::string_view value, std::string& reason) {
  ws::DeflateParameters p;
  bool first = true;
  while (!value.empty()) {
    const std::size_t semi = value.find(';');
    std::string_view part = trim(value.substr(0, semi));
    value = semi == std::string_view::npos ? std::string_view() : value.substr(semi + 1);
    if (first) {
      first = false;
      if (!iequals(part, "permessage-deflate")) {
        reason = fmt::format("the server answered an extension not offered: {}", part);
        return std::nullopt;
      }
      continue;
    }
    const std::size_t eq = part.find('=');
    const std::string_view name = trim(part.substr(0, eq));
    std::string_view arg = eq == std::string_view::npos ? std::string_view() : trim(part.substr(eq + 1));
    if (arg.size() >= 2 && arg.front() == '"' && arg.back() == '"') arg = arg.substr(1, arg.size() - 2);
    auto bits = [&](int& into) {
      if (arg.size() == 1 && arg[0] >= '8' && arg[0] <= '9') {
        into = arg[0] - '0';
      } else if (arg.size() == 2 && arg[0] == '1' && arg[1] >= '0' && arg[1] <= '5') {
        into = 10 + (arg[1] - '0');
      } else {
        return false;
      }
      return true;
    };
    bool ok = true;
    if (iequals(name, "server_no_context_takeover")) {
      p.server_no_context_takeover = true;
    } else if (iequals(name, "client_no_context_takeover")) {
      p.client_no_context_takeover = true;
    } else if (iequals(name, "server_max_window_bits")) {
      ok = bits(p.server_max_window_bits);
    } else if (iequals(name, "client_max_window_bits")) {
      ok = arg.empty() || bits(p.client_max_window_bits);
    } else {
      ok = false;
    }
    if (!ok) {
      reason = fmt::format("bad permessage-deflate parameter in the 101: {}", part);
      return std::nullopt;
    }
  }
  return p;
}

HandshakeAnswer read_handshake(std::string_view head, std::string_view expected_accept, bool offered_deflate) {
  HandshakeAnswer a;
  const std::size_t line_end = head.find("\r\n");
  const std::string_view status_line = head.substr(0, line_end);
  if (!status_line.starts_with("HTTP/1.1 101")) {
    a.refused = true;
    a.reason = fmt::format("the server did not switch to WebSocket: {}", status_line);
    return a;
  }
  bool upgrade = false;
  bool accepted = false;
  std::string_view rest = head.substr(line_end + 2);
  while (!rest.empty()) {
    const std::size_t end = rest.find("\r\n");
    const std::string_view line = rest.substr(0, end);
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 2);
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    const std::string_view name = line.substr(0, colon);
    const std::string_view value = trim(line.substr(colon + 1));
    if (iequals(name, "Upgrade")) upgrade = iequals(value, "websocket");
    if (iequals(name, "Sec-WebSocket-Accept")) accepted = value == expected_accept;
    if (iequals(name, "Sec-WebSocket-Extensions")) {
      if (!offered_deflate || a.deflate) {
        a.reason = "the server answered an extension not offered";
        return a;
      }
      a.deflate = parse_extension(value, a.reason);
      if (!a.deflate) return a;
    }
  }
  if (!upgrade || !accepted) {
    a.reason = !upgrade ? "the 101 lacks Upgrade: websocket" : "the 101's Sec-WebSocket-Accept is wrong";
    return a;
  }
  a.switched = true;
  return a;
}

// The handshakes of the initial connections: the run starts once each has ended one way or another.
struct HandshakeGate {
  explicit HandshakeGate(std::ptrdiff_t count) : pending(count) {}
  std::latch pending;
  std::atomic<int> deflate{0};
  std::atomic<std::uint64_t> refused{0};  // non-101 answers (Errors::status)
  std::atomic<std::uint64_t> bad{0};      // a 101 that is not WebSocket's (Errors::parse)
  std::atomic<std::uint64_t> failed{0};   // TLS failed, or no answer (Errors::connect)
};

// What every connection of a run shares; read-only once the run starts.
struct RunConfig {
  std::string request_head;   // the handshake request without its Sec-WebSocket-Key line and end
  std::string message;        // the payload every message carries
  std::size_t in_flight = 1;  // -m
  bool text = false;
  bool deflate_offered = false;
  bool open_loop = false;
  Nanos timeout_ns = 0;
  std::atomic<std::uint64_t>* budget = nullptr;  // -n: messages still to send (null: timed). Thread-safe.
  HandshakeGate* gate = nullptr;
};

class WsConnection;

// One event loop's share of the run: the core's Worker plus the open loop's schedule (http mode's).
class WsWorker final : public Worker {
 public:
  WsWorker(Run& run, EventLoop& loop, const RunConfig& config, double rate)
      : Worker(run, loop, config.timeout_ns), config_(config) {
    pump_.schedule.set_rate(rate);
  }

  const RunConfig& config() const noexcept { return config_; }

  void attach(WsConnection* c);
  void detach(WsConnection* c, std::size_t in_flight);
  void begin();
  void pump(Nanos now);
  std::size_t take(std::size_t want) noexcept;
  void finish_if_spent();

  Histogram handshake;            // ns, this loop's initial connections
  std::uint64_t compressed = 0;   // echoes that came compressed
  std::string handshake_failure;  // the first failure's reason

  void restart_counting() override {
    Worker::restart_counting();
    compressed = 0;
  }

 private:
  WsConnection& connection(std::size_t index) const noexcept;

  const RunConfig& config_;
  std::vector<WsConnection*> touched_;
  OpenLoopPump pump_;
};

// One WebSocket connection: the handshake, then masked message frames out, echoes checked in.
class WsConnection final : public InboundHandler<ByteBuf>, public Session {
 public:
  explicit WsConnection(WsWorker& worker)
      : worker_(worker),
        started_(now_ns()),
        decoder_(ws::FrameDecoder::Role::client, worker.config().message.size() + 4096),
        intended_(worker.config().in_flight) {}

  void channel_active(Context& ctx) override {
    ctx_ = &ctx;
    active_ = true;
    std::uint8_t nonce[16];
    for (int i = 0; i < 4; ++i) {
      const std::uint32_t k = keys_.next();
      std::memcpy(nonce + 4 * i, &k, 4);
    }
    const std::string key = base64(nonce, sizeof nonce);
    expected_accept_ = ws::accept_key(key);
    ByteBuf request = ctx.allocator().buffer(worker_.config().request_head.size() + 64);
    request.write_bytes(worker_.config().request_head);
    request.write_bytes(fmt::format("Sec-WebSocket-Key: {}\r\n\r\n", key));
    ctx.write_and_flush(std::move(request));
    const auto timeout = std::chrono::nanoseconds(worker_.config().timeout_ns);
    handshake_timer_ = ctx.channel().loop().schedule(timeout, [this, self = ctx.channel().shared_from_this()] {
      handshake_timer_ = 0;
      if (!upgraded_)
        fail_handshake(
            fmt::format("no 101 within {}", format_duration_ns(static_cast<double>(worker_.config().timeout_ns))),
            Failure::connect);
    });
    ctx.fire_channel_active();
  }

  void channel_read(Context& ctx, ByteBuf&& bytes) override {
    if (!upgraded_) {
      weft::detail::cumulate(ctx.allocator(), in_, std::move(bytes));
      read_handshake_answer(ctx);
      return;
    }
    if (!worker_.sending() || closing_) return;
    worker_.stats.bytes_read += bytes.readable_bytes();
    weft::detail::cumulate(ctx.allocator(), in_, std::move(bytes));
    decode(now_ns());
    if (closing_) return;
    http::detail::keep_undecoded(in_);
    if (!worker_.config().open_loop) {
      if (in_flight_ == 0) send_batch(now_ns());
    } else {
      worker_.pump(now_ns());
    }
    worker_.publish();
    if (in_flight_ == 0) worker_.finish_if_spent();
  }

  void channel_inactive(Context& ctx) override {
    if (handshake_timer_ != 0) ctx.channel().loop().cancel(handshake_timer_);
    if (!upgraded_) fail_handshake("the server closed the connection during the handshake", Failure::connect);
    ctx_ = nullptr;
    if (upgraded_) worker_.detach(this, in_flight_);
    ctx.fire_channel_inactive();
  }

  void exception_caught(Context& ctx, std::exception_ptr error) override {
    if (!upgraded_) {
      std::string reason = connect_failure_reason(error);
      try {
        std::rethrow_exception(error);
      } catch (const TlsHandshakeError& e) {
        reason = fmt::format("TLS handshake failed: {}", e.what());
      } catch (...) {
      }
      fail_handshake(reason, Failure::connect);
    } else if (worker_.sending() && in_flight_ > 0) {
      bool write_side = false;
      try {
        std::rethrow_exception(error);
      } catch (const std::system_error& e) {
        write_side = e.code().value() == EPIPE;
      } catch (...) {
      }
      ++(write_side ? worker_.stats.errors.write : worker_.stats.errors.read);
      in_flight_ = 0;
    }
    ctx.close();
  }

  // Session.
  std::size_t in_flight() const noexcept override { return in_flight_; }
  Nanos last_progress() const noexcept override { return last_progress_; }
  void abandon() override {
    in_flight_ = 0;
    unsent_ = 0;
    close_connection();
  }
  void close_connection() override {
    if (ctx_ != nullptr) ctx_->close();
  }

  std::size_t room() const noexcept { return intended_.size() - in_flight_ - unsent_; }
  std::size_t unsent() const noexcept { return unsent_; }

  // Closed loop: the whole window of messages at once, all intended now.
  void send_batch(Nanos now) {
    const std::size_t n = worker_.take(intended_.size());
    for (std::size_t i = 0; i < n; ++i) queue(now);
    flush_queued(now);
    if (n == 0) worker_.finish_if_spent();
  }
  void queue(Nanos intended) noexcept {
    intended_[(head_ + in_flight_ + unsent_) % intended_.size()] = intended;
    ++unsent_;
  }
  // Writes the queued messages as masked frames, one buffer for them all.
  void flush_queued(Nanos now) {
    if (unsent_ == 0 || ctx_ == nullptr) return;
    if (in_flight_ == 0) last_progress_ = now;
    const std::size_t n = unsent_;
    const std::string_view payload = compressed_payload_.empty() ? std::string_view(worker_.config().message)
                                                                 : std::string_view(compressed_payload_);
    const std::uint8_t first_byte = static_cast<std::uint8_t>(
        0x80 | (compressed_payload_.empty() ? 0 : 0x40) |
        static_cast<std::uint8_t>(worker_.config().text ? ws::Opcode::text : ws::Opcode::binary));
    ByteBuf out = ctx_->allocator().buffer(n * (masked_header_size(payload.size()) + payload.size()));
    for (std::size_t i = 0; i < n; ++i) write_masked_frame(out, first_byte, payload, keys_.next());
    in_flight_ += n;
    unsent_ = 0;
    worker_.stats.requests += n;
    ctx_->write(std::move(out));
    ctx_->flush();
  }

 private:
  void read_handshake_answer(Context& ctx) {
    const std::string_view seen(reinterpret_cast<const char*>(in_.read_ptr()), in_.readable_bytes());
    const std::size_t end = seen.find("\r\n\r\n");
    if (end == std::string_view::npos) {
      if (seen.size() > kMaxHandshakeResponse)
        fail_handshake("the handshake's answer is too long", Failure::bad_answer);
      return;
    }
    const HandshakeAnswer answer =
        read_handshake(seen.substr(0, end + 2), expected_accept_, worker_.config().deflate_offered);
    if (!answer.switched) {
      fail_handshake(answer.reason, answer.refused ? Failure::refused : Failure::bad_answer);
      return;
    }
    in_.skip_bytes(end + 4);
    upgraded_ = true;
    if (handshake_timer_ != 0) {
      ctx.channel().loop().cancel(handshake_timer_);
      handshake_timer_ = 0;
    }
    if (answer.deflate) start_deflate(*answer.deflate, ctx.allocator());
    worker_.handshake.record(static_cast<std::uint64_t>(std::max<Nanos>(0, now_ns() - started_)));
    if (!settled_) {
      settled_ = true;
      worker_.config().gate->pending.count_down();
    }
    worker_.attach(this);
    if (in_.is_readable() && worker_.sending()) decode(now_ns());  // frames right behind the 101
    http::detail::keep_undecoded(in_);
  }

  // permessage-deflate agreed: the message compressed once (this client takes no context over, so
  // every message compresses to the same bytes: RFC 7692 lets a client reset its window whenever
  // it likes), and an inflater for the server's messages.
  void start_deflate(const ws::DeflateParameters& agreed, ByteBufAllocator& allocator) {
    worker_.config().gate->deflate.fetch_add(1, std::memory_order_relaxed);
    ws::PerMessageDeflate::Config c;
    c.inflate_window_bits = agreed.server_max_window_bits;
    c.inflate_no_context_takeover = agreed.server_no_context_takeover;
    c.deflate_window_bits = agreed.client_max_window_bits;
    c.deflate_no_context_takeover = true;
    c.min_message_size = 1;
    deflate_.emplace(c);
    decoder_.allow_compressed(true);
    ByteBuf compressed = deflate_->deflate(worker_.config().message, 0, allocator);
    if (compressed.is_readable()) {
      compressed_payload_.assign(reinterpret_cast<const char*>(compressed.read_ptr()), compressed.readable_bytes());
    }
  }

  enum class Failure : std::uint8_t { connect, refused, bad_answer };
  // A connection that never became active is the connect's failure (counted by its future's listener).
  void fail_handshake(const std::string& reason, Failure failure) {
    if (settled_ || !active_) return;
    settled_ = true;
    if (worker_.handshake_failure.empty()) worker_.handshake_failure = reason;
    HandshakeGate& gate = *worker_.config().gate;
    (failure == Failure::connect   ? gate.failed
     : failure == Failure::refused ? gate.refused
                                   : gate.bad)
        .fetch_add(1, std::memory_order_relaxed);
    worker_.config().gate->pending.count_down();
    closing_ = true;
    if (ctx_ != nullptr) ctx_->close();
  }

  // Decodes the frames received; each echo is compared with the message as it arrives.
  void decode(Nanos now) {
    ByteBuf payload;
    for (;;) {
      switch (decoder_.next(in_, payload)) {
        case ws::FrameDecoder::Status::need_more: return;
        case ws::FrameDecoder::Status::error: protocol_failure(); return;
        case ws::FrameDecoder::Status::header:
          if (!on_header()) return;
          break;
        case ws::FrameDecoder::Status::partial:
          if (frame_is_data_ && !compare(decoder_.fresh())) return;
          break;
        case ws::FrameDecoder::Status::payload:
          if (frame_is_data_) {
            if (!compare(decoder_.fresh())) return;
            if (decoder_.header().fin && !end_message(now)) return;
          } else if (!on_control(payload)) {
            return;
          }
          break;
      }
    }
  }

  bool on_header() {
    const ws::FrameHeader& h = decoder_.header();
    frame_is_data_ = !ws::is_control(h.opcode);
    if (!frame_is_data_) return true;
    if (h.opcode == ws::Opcode::continuation) {
      if (!in_message_) return protocol_failure();
      return true;
    }
    if (in_message_) return protocol_failure();
    in_message_ = true;
    offset_ = 0;
    differs_ = (h.opcode == ws::Opcode::text) != worker_.config().text;  // echoed as the other kind
    message_compressed_ = h.rsv1;
    if (message_compressed_) deflate_->begin_message();
    return true;
  }

  // Compares the next bytes of the message being echoed (inflated first when compressed).
  bool compare(std::string_view bytes) {
    if (bytes.empty()) return true;
    if (!message_compressed_) {
      compare_plain(bytes);
      return true;
    }
    if (deflate_->inflate(bytes, inflated_, worker_.config().message.size() + 1, ctx_->allocator()) !=
        ws::PerMessageDeflate::InflateStatus::ok) {
      return protocol_failure();
    }
    compare_inflated();
    return true;
  }
  void compare_plain(std::string_view bytes) noexcept {
    const std::string& expected = worker_.config().message;
    if (differs_ || offset_ + bytes.size() > expected.size() ||
        std::memcmp(expected.data() + offset_, bytes.data(), bytes.size()) != 0) {
      differs_ = true;
    }
    offset_ += bytes.size();
  }
  void compare_inflated() noexcept {
    if (!inflated_.is_readable()) return;
    compare_plain(std::string_view(reinterpret_cast<const char*>(inflated_.read_ptr()), inflated_.readable_bytes()));
    inflated_.clear();
  }

  bool end_message(Nanos now) {
    in_message_ = false;
    if (message_compressed_) {
      if (deflate_->end_message(inflated_, worker_.config().message.size() + 1, ctx_->allocator()) !=
          ws::PerMessageDeflate::InflateStatus::ok) {
        return protocol_failure();
      }
      compare_inflated();
      ++worker_.compressed;
    }
    if (in_flight_ == 0) return protocol_failure();  // an echo of nothing sent
    const Nanos intended = pop_intended();
    last_progress_ = now;
    if (differs_ || offset_ != worker_.config().message.size()) {
      ++worker_.stats.errors.parse;  // an echo that is not the message: counted, and the run goes on
    } else {
      worker_.stats.latency.record(static_cast<std::uint64_t>(std::max<Nanos>(0, now - intended)));
      ++worker_.stats.responses;
    }
    return true;
  }

  bool on_control(const ByteBuf& payload) {
    switch (decoder_.header().opcode) {
      case ws::Opcode::ping: {
        const std::string_view body(reinterpret_cast<const char*>(payload.read_ptr()), payload.readable_bytes());
        ByteBuf pong = ctx_->allocator().buffer(masked_header_size(body.size()) + body.size());
        write_masked_frame(pong, 0x80 | static_cast<std::uint8_t>(ws::Opcode::pong), body, keys_.next());
        ctx_->write_and_flush(std::move(pong));
        return true;
      }
      case ws::Opcode::pong: return true;
      default:  // close: the server ends the connection; the messages out are lost (detach counts them)
        closing_ = true;
        ctx_->close();
        return false;
    }
  }

  // A frame the server may not send: a parse error, and the connection ends.
  bool protocol_failure() {
    ++worker_.stats.errors.parse;
    in_flight_ = 0;  // counted here, not again as a read error when it closes
    closing_ = true;
    in_.release();
    if (ctx_ != nullptr) ctx_->close();
    return false;
  }

  Nanos pop_intended() noexcept {
    const Nanos t = intended_[head_];
    head_ = (head_ + 1) % intended_.size();
    --in_flight_;
    return t;
  }

  WsWorker& worker_;
  Context* ctx_ = nullptr;
  Nanos started_;
  MaskKeys keys_;
  std::string expected_accept_;
  TimerId handshake_timer_ = 0;
  bool active_ = false;
  bool upgraded_ = false;
  bool settled_ = false;  // the gate has been told about this connection's handshake
  bool closing_ = false;
  ByteBuf in_;
  ws::FrameDecoder decoder_;
  std::optional<ws::PerMessageDeflate> deflate_;
  std::string compressed_payload_;  // the message, compressed (permessage-deflate agreed)
  ByteBuf inflated_;                // an echo's bytes as inflated, compared and dropped chunk by chunk
  bool frame_is_data_ = false;
  bool in_message_ = false;
  bool message_compressed_ = false;
  bool differs_ = false;
  std::size_t offset_ = 0;       // bytes of the current echo compared so far
  std::vector<Nanos> intended_;  // ring: in-flight messages from head_, then the unsent ones
  std::size_t head_ = 0;
  std::size_t in_flight_ = 0;
  std::size_t unsent_ = 0;
  Nanos last_progress_ = 0;
};

WsConnection& WsWorker::connection(std::size_t index) const noexcept {
  return static_cast<WsConnection&>(*sessions()[index]);
}

void WsWorker::attach(WsConnection* c) {
  if (stopping()) {
    c->close_connection();
    return;
  }
  add_session(c);
  if (!began()) return;
  const Nanos now = now_ns();
  if (config_.open_loop) {
    pump(now);
  } else {
    c->send_batch(now);
  }
}

void WsWorker::detach(WsConnection* c, std::size_t in_flight) {
  remove_session(c);
  pump_.connections_now(sessions().size());
  if (stopping()) return;
  if (in_flight > 0) ++stats.errors.read;  // the server closed with messages outstanding
  publish();
  finish_if_spent();
  if (sessions().empty()) finish();  // no connection left on this loop: nothing more to count here
}

std::size_t WsWorker::take(std::size_t want) noexcept {
  if (!sending()) return 0;
  if (config_.budget == nullptr) return want;
  std::uint64_t left = config_.budget->load(std::memory_order_relaxed);
  while (left > 0) {
    const std::uint64_t n = std::min<std::uint64_t>(left, want);
    if (config_.budget->compare_exchange_weak(left, left - n, std::memory_order_relaxed)) return n;
  }
  return 0;
}

void WsWorker::finish_if_spent() {
  if (config_.budget == nullptr || config_.budget->load(std::memory_order_relaxed) > 0) return;
  for (Session* s : sessions()) {
    if (s->in_flight() > 0) return;
  }
  finish();
}

void WsWorker::begin() {
  const Nanos start = now_ns();
  pump_.schedule.start(start);
  Worker::begin();
  if (sessions().empty()) {
    finish();  // no connection here to send on (its handshakes failed); the others send
    return;
  }
  if (config_.open_loop) {
    pump(start);
  } else {
    for (Session* c : std::vector<Session*>(sessions())) static_cast<WsConnection*>(c)->send_batch(start);
  }
}

void WsWorker::pump(Nanos now) {
  if (!sending()) return;
  touched_.clear();
  const bool spent = pump_.give_due(
      now, sessions().size(), [this](std::size_t i) -> WsConnection& { return connection(i); },
      [this](WsConnection& c, Nanos intended) {
        if (take(1) == 0) return OpenLoopPump::Given::spent;
        if (c.unsent() == 0) touched_.push_back(&c);
        c.queue(intended);
        return OpenLoopPump::Given::sent;
      });
  for (WsConnection* c : touched_) c->flush_queued(now);
  if (spent) {
    finish_if_spent();
  } else if (pump_.caught_up()) {
    pump_.wake_at_next(loop(), now, [this] { pump(now_ns()); });
  }
}

// The message's bytes: readable text (valid UTF-8 for text frames, and compressible as real
// messages are), the same for every message of the run.
std::string make_message(std::size_t size) {
  static constexpr std::string_view kText = "weft-load ws: the quick brown fox jumps over the lazy dog 0123456789. ";
  std::string m;
  m.reserve(size);
  while (m.size() < size) m.append(kText.substr(0, std::min(kText.size(), size - m.size())));
  return m;
}

}  // namespace

WsTarget parse_ws_url(const std::string& url) {
  WsTarget target;
  std::string_view scheme;
  for (std::string_view s : {"ws://", "wss://"}) {
    if (std::string_view(url).starts_with(s)) scheme = s;
  }
  if (scheme.empty()) throw LoadError(fmt::format("bad URL '{}': only ws[s]://HOST[:PORT][/PATH] is supported", url));
  target.tls = scheme == "wss://";
  std::string rest = url.substr(scheme.size());
  const std::size_t slash = rest.find('/');
  target.host_header = rest.substr(0, slash);
  target.path = slash == std::string::npos ? "/" : rest.substr(slash);
  std::string authority = target.host_header;
  const bool bracketed = authority.starts_with('[');
  const std::size_t host_end = bracketed ? authority.find(']') : std::string::npos;
  std::size_t port_colon = authority.find(':', bracketed && host_end != std::string::npos ? host_end : 0);
  if (bracketed && port_colon != host_end + 1) port_colon = std::string::npos;
  target.host = authority.substr(0, port_colon);
  if (bracketed && target.host.size() >= 2) target.host = target.host.substr(1, target.host.size() - 2);
  if (port_colon == std::string::npos) authority += target.tls ? ":443" : ":80";
  try {
    target.address = SocketAddress::parse(authority);
  } catch (const std::exception& e) {
    throw LoadError(fmt::format("bad URL '{}': {}", url, e.what()));
  }
  for (char c : target.path) {
    if (c == ' ' || c == '\r' || c == '\n' || c == '\0') throw LoadError(fmt::format("bad URL '{}': bad path", url));
  }
  return target;
}

WsResult run_ws(const WsOptions& options, const ProgressFn& progress) {
  if (options.connections < 1 || options.threads < 1 || options.in_flight < 1 || options.size < 0 ||
      options.duration_s < 0 || (options.duration_s == 0 && options.messages == 0) || options.rate < 0 ||
      options.timeout_s <= 0) {
    throw LoadError(
        "connections, threads, messages in flight and timeout must be positive, and a duration or a message count "
        "given");
  }
  if (options.threads > options.connections) throw LoadError("threads must not exceed connections");
  if (options.size > (64 << 20)) throw LoadError("size must be at most 64 MiB");
  const WsTarget target = parse_ws_url(options.url);

  HandshakeGate gate(options.connections);
  RunConfig config;
  config.request_head = fmt::format(
      "GET {} HTTP/1.1\r\nHost: {}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n{}",
      target.path, target.host_header,
      options.deflate ? "Sec-WebSocket-Extensions: permessage-deflate; client_no_context_takeover; "
                        "client_max_window_bits\r\n"
                      : "");
  config.message = make_message(static_cast<std::size_t>(options.size));
  config.in_flight = static_cast<std::size_t>(options.in_flight);
  config.text = options.text;
  config.deflate_offered = options.deflate;
  config.open_loop = options.rate > 0;
  config.timeout_ns = static_cast<Nanos>(options.timeout_s * 1e9);
  config.gate = &gate;
  std::atomic<std::uint64_t> budget{options.messages};
  if (options.messages > 0) config.budget = &budget;

  TlsContextPtr tls;
  TlsHandlerOptions tls_options;
  if (target.tls) {
    ClientTls client = client_tls("http/1.1", target.host, options.insecure, options.ca_file, options.timeout_s);
    tls = std::move(client.context);
    tls_options = client.options;
  }

  LoopRun run(options.threads);
  run.add_workers([&](EventLoop& loop) {
    return std::make_unique<WsWorker>(run, loop, config, options.rate / static_cast<double>(run.loops().size()));
  });

  Bootstrap bootstrap;
  bootstrap.group(run.loops())
      .option(option::tcp_nodelay, true)
      .option(option::connect_timeout, std::chrono::milliseconds(static_cast<std::int64_t>(options.timeout_s * 1000)))
      .handler([&run, &tls, &tls_options](Channel& ch) {
        if (tls) ch.pipeline().add_last("tls", std::make_shared<TlsHandler>(tls, tls_options));
        ch.pipeline().add_last("load", std::make_shared<WsConnection>(run.worker_of<WsWorker>(ch.loop())));
      });

  // Connect and shake hands with everything first; the clock starts when all have ended.
  std::vector<Future<ChannelPtr>> connects;
  connects.reserve(static_cast<std::size_t>(options.connections));
  for (int i = 0; i < options.connections; ++i) {
    connects.push_back(bootstrap.connect(target.address));
    connects.back().add_listener([&run, &gate](const Future<ChannelPtr>& f) {
      if (f.is_success()) return;
      run.connect_failures().add(connect_failure_reason(f.error()));
      gate.pending.count_down();
    });
  }
  gate.pending.wait();
  std::size_t upgraded = 0;
  for (std::size_t i = 0; i < run.size(); ++i) {
    WsWorker& w = run.worker<WsWorker>(i);
    Promise<std::size_t> sessions;
    w.loop().execute([&w, sessions]() mutable { sessions.set_value(w.handshake.count()); });
    upgraded += sessions.future().get();
  }
  if (upgraded == 0) {
    std::string reason = run.connect_failures().first_reason();
    for (std::size_t i = 0; i < run.size() && reason.empty(); ++i) reason = run.worker<WsWorker>(i).handshake_failure;
    run.stop();
    run.shutdown();
    throw LoadError(fmt::format("no WebSocket connection to {}: {}", target.address.to_string(), reason));
  }

  auto t0 = Clock::now();
  for (std::size_t i = 0; i < run.size(); ++i) {
    WsWorker& w = run.worker<WsWorker>(i);
    w.loop().execute([&w] { w.begin(); });
  }
  t0 = run.warm_up(t0, options.warmup_s);
  run.wait(t0, deadline_after(t0, options.duration_s), progress);
  run.stop();
  const double elapsed = seconds_since(t0);
  run.shutdown();

  Stats all = run.merge();
  WsResult result;
  result.sent = all.requests;
  result.echoed = all.responses;
  result.bytes_read = all.bytes_read;
  result.duration_s = elapsed;
  result.latency = std::move(all.latency);
  result.errors = all.errors;
  result.errors.connect += run.connect_failures().count();
  result.errors.status += gate.refused.load();
  result.errors.parse += gate.bad.load();
  result.errors.connect += gate.failed.load();
  result.deflate_connections = gate.deflate.load();
  for (std::size_t i = 0; i < run.size(); ++i) {
    WsWorker& w = run.worker<WsWorker>(i);
    result.compressed += w.compressed;
    result.handshake.merge(w.handshake);
  }
  return result;
}

}  // namespace weft::load
