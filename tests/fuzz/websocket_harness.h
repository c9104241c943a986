#pragma once
// The WebSocket fuzz targets' harness (websocket_server_fuzz.cc, websocket_client_fuzz.cc): one
// ws::Codec of the given role behind an echo handler on an EmbeddedChannel, fed the input after a
// 4-byte configuration, in reads of the size the configuration says.
//
// Input: byte 0: bit 0 permessage-deflate agreed, bit 1 the peer takes no context over, bit 2 this
// side takes none over, bit 3 Options::stream_fragments, bit 4 the application closes after the
// first message, bit 5 the peer's FIN at the end, bits 6-7 max_message_size (4096, 64, 1000, 65536).
// Byte 1: bits 0-2 the peer's window bits - 8, bits 3-5 this side's, bits 6-7 max_fragments (16, 1,
// 4, 1024). Byte 2: the compression level (% 10), bits 4-5 min_message_size (1, 16, 128, 1024),
// bits 6-7 memory_level (1, 4, 8, 9). Byte 3: bits 0-5 the read size (0: the whole input in one
// read), bit 7 idle keepalive (ping_interval 30 s, ping_timeout 10 s; the clock moves 20 s before
// each read, 32 s with bit 6 -- a ping, then the read answers it -- and 40 s at the end: a ping,
// then the cut).
// Frames sent to a server are masked; a mask key of 0 leaves their payload as it is, which the
// seeds use.
//
// Invariants (codec.h's promises), checked with abort:
// - what the codec writes parses as well-formed frames of its role: masked by a client only, RSV2
//   and RSV3 clear, a known opcode, RSV1 only with permessage-deflate and on a message's first frame,
//   control frames whole and at most 125 bytes, lengths in their shortest form, continuations only
//   inside a message, nothing but control frames inside one, and at most one close, last, with an
//   empty payload or a valid code and a UTF-8 reason;
// - its data frames are what the echo handler wrote, in order (those written before the close),
//   compressed ones inflating to exactly that message;
// - the application gets whole messages (or, streamed, fragments in order: first, then not first,
//   until last; at most max_fragments) of at most max_message_size bytes each, inflated or not, text
//   that is valid UTF-8 (streamed: once the message is whole), then exactly one close, last, with a
//   code one may receive (a valid code, 1005 or 1006) and a UTF-8 reason; when the first frame is
//   masked as the role forbids (a client's frame not masked, a server's masked), 1002 and nothing
//   before it;
// - between reads, the buffers the connection holds (all the application's are let go by then) stay
//   within a bound made of the read, one compressed frame and one message;
// - no exception reaches the channel, and no crash, leak or bad access (ASan).

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "weft/buffer/byte_buf.h"
#include "weft/buffer/byte_buf_allocator.h"
#include "weft/channel/embedded_channel.h"
#include "weft/channel/events.h"
#include "weft/codec/websocket/codec.h"
#include "weft/codec/websocket/deflate.h"
#include "weft/codec/websocket/frame.h"
#include "weft/codec/websocket/message.h"
#include "weft/codec/websocket/utf8.h"
#include "weft/core/clock.h"

namespace weft::ws_fuzz {

inline void check(bool ok) {
  if (!ok) std::abort();
}

// Counts the bytes of the blocks it has handed out and not had back.
class TrackingAllocator final : public ByteBufAllocator {
 public:
  std::size_t live_bytes() const noexcept { return live_; }

 protected:
  ByteBufStorage* allocate_storage(std::size_t min_capacity) override {
    auto* data = new std::uint8_t[min_capacity == 0 ? 1 : min_capacity];
    live_ += min_capacity;
    return new ByteBufStorage(this, data, min_capacity);
  }
  void free_storage(ByteBufStorage* storage) noexcept override {
    live_ -= storage->capacity;
    delete[] storage->data;
    delete storage;
  }

 private:
  std::size_t live_ = 0;
};

// What the echo handler wrote: a whole message or a fragment (kind, payload, first, last), or a close.
struct Written {
  ws::Message::Kind kind;
  std::string payload;
  bool first;
  bool last;
};

struct Config {
  ws::Codec::Role role;
  ws::Options options;
  std::optional<ws::PerMessageDeflate::Config> deflate;
  bool app_closes = false;
  bool peer_fin = false;
  std::size_t read_size = 0;
  bool keepalive = false;
  Duration clock_step{};  // before each read, with keepalive
};

// The application: checks what it is given, echoes it, and records what it wrote.
class Echo final : public InboundHandler<ws::Message, ws::Message> {
 public:
  explicit Echo(const Config& config) : config_(config) {}

  void channel_read(Context& ctx, ws::Message&& m) override {
    check(!closed_);  // the close is last
    if (m.is_close()) {
      closed_ = true;
      close_code_ = m.close_code();
      const std::uint16_t code = m.close_code();
      check(ws::is_valid_close_code(code) || code == ws::close_code::no_status || code == ws::close_code::abnormal);
      check(ws::is_valid_utf8(m.reason()));
      return;
    }
    const ws::Options& o = config_.options;
    check(m.view().size() <= o.max_message_size);
    if (!o.stream_fragments) {
      check(!m.is_fragment());
      if (m.is_text()) check(ws::is_valid_utf8(m.view()));
    } else {
      check(m.is_first() == !in_message_);
      if (m.is_first()) {
        text_ = m.is_text();
        fragments_ = 0;
        utf8_.reset();
      }
      check(m.is_text() == text_);
      check(++fragments_ <= o.max_fragments);
      if (text_) check(utf8_.feed(m.view()));
      if (m.is_last() && text_) check(utf8_.complete());
      in_message_ = !m.is_last();
    }
    written.push_back({m.kind(), std::string(m.view()), m.is_first(), m.is_last()});
    ctx.write(std::move(m));
    if (config_.app_closes && !app_closed_) {
      app_closed_ = true;
      written.push_back({ws::Message::Kind::close, {}, true, true});
      ctx.write(ws::Message::close(4000, "bye"));
    }
  }
  void channel_read_complete(Context& ctx) override { ctx.flush(); }

  std::vector<Written> written;
  bool closed_ = false;
  std::uint16_t close_code_ = 0;

 private:
  const Config& config_;
  bool app_closed_ = false;
  bool in_message_ = false;
  bool text_ = false;
  std::size_t fragments_ = 0;
  ws::Utf8Validator utf8_;
};

// Checks the bytes the codec wrote (see the file's description) against what the echo handler wrote.
inline void check_output(const Config& config, std::string_view wire, const std::vector<Written>& written) {
  const bool client = config.role == ws::Codec::Role::client;
  std::optional<ws::PerMessageDeflate> peer;  // inflates what the codec compressed, as its peer would
  if (config.deflate) {
    ws::PerMessageDeflate::Config c;
    c.inflate_window_bits = config.deflate->deflate_window_bits;
    c.inflate_no_context_takeover = config.deflate->deflate_no_context_takeover;
    peer.emplace(c);
  }
  std::size_t next_written = 0;  // the echo handler's next write that may appear
  bool in_message = false;
  bool closed = false;
  std::size_t at = 0;
  while (at < wire.size()) {
    check(!closed);  // nothing after the close
    check(wire.size() - at >= 2);
    const auto b0 = static_cast<std::uint8_t>(wire[at]);
    const auto b1 = static_cast<std::uint8_t>(wire[at + 1]);
    const bool fin = (b0 & 0x80) != 0;
    const bool rsv1 = (b0 & 0x40) != 0;
    check((b0 & 0x30) == 0);
    const std::uint8_t op = b0 & 0x0F;
    check(op <= 0x2 || (op >= 0x8 && op <= 0xA));
    const bool masked = (b1 & 0x80) != 0;
    check(masked == client);
    std::uint64_t length = b1 & 0x7F;
    std::size_t header = 2;
    if (length == 126) {
      check(wire.size() - at >= 4);
      length = (std::uint64_t{static_cast<std::uint8_t>(wire[at + 2])} << 8) | static_cast<std::uint8_t>(wire[at + 3]);
      check(length >= 126);
      header = 4;
    } else if (length == 127) {
      check(wire.size() - at >= 10);
      length = 0;
      for (int i = 0; i < 8; ++i) length = (length << 8) | static_cast<std::uint8_t>(wire[at + 2 + i]);
      check(length > 0xFFFF && (length >> 63) == 0);
      header = 10;
    }
    std::uint8_t key[4] = {};
    if (masked) {
      check(wire.size() - at >= header + 4);
      for (int i = 0; i < 4; ++i) key[i] = static_cast<std::uint8_t>(wire[at + header + i]);
      header += 4;
    }
    check(wire.size() - at - header >= length);
    std::string payload(wire.substr(at + header, static_cast<std::size_t>(length)));
    for (std::size_t i = 0; masked && i < payload.size(); ++i) payload[i] = static_cast<char>(payload[i] ^ key[i & 3]);
    at += header + static_cast<std::size_t>(length);

    if (op >= 0x8) {
      check(fin && !rsv1 && length <= 125);
      if (op == 0x8) {
        closed = true;
        check(payload.size() != 1);
        if (payload.size() >= 2) {
          const auto code = static_cast<std::uint16_t>((static_cast<std::uint8_t>(payload[0]) << 8) |
                                                       static_cast<std::uint8_t>(payload[1]));
          check(ws::is_valid_close_code(code));
          check(ws::is_valid_utf8(std::string_view(payload).substr(2)));
        }
      }
      continue;
    }
    // A data frame: the echo handler's next write (whole messages and fragments alike are one frame
    // each), or a later one if the codec dropped some (only after a close, so never).
    check((op == 0x0) == in_message);
    check(!rsv1 || (config.deflate && op != 0x0 && fin));
    while (next_written < written.size() && written[next_written].kind == ws::Message::Kind::close) ++next_written;
    check(next_written < written.size());
    const Written& w = written[next_written++];
    check(w.last == fin);
    check(op == 0x0 ? !w.first : w.first && (op == 0x1) == (w.kind == ws::Message::Kind::text));
    if (rsv1) {
      peer->begin_message();
      ByteBuf out;
      const std::size_t bound = std::max<std::size_t>(w.payload.size(), 1);
      check(peer->inflate(payload, out, bound, default_allocator()) == ws::PerMessageDeflate::InflateStatus::ok);
      check(peer->end_message(out, bound, default_allocator()) == ws::PerMessageDeflate::InflateStatus::ok);
      check(out.view() == w.payload);
    } else {
      check(payload == w.payload);
    }
    in_message = !fin;
  }
}

// Reads the configuration from the input's first 4 bytes (see the file's description).
inline Config read_config(ws::Codec::Role role, const std::uint8_t* c) {
  Config config;
  config.role = role;
  static constexpr std::size_t kMessageSizes[4] = {4096, 64, 1000, 65536};
  static constexpr std::size_t kFragments[4] = {16, 1, 4, 1024};
  static constexpr std::size_t kMinSizes[4] = {1, 16, 128, 1024};
  static constexpr int kMemoryLevels[4] = {1, 4, 8, 9};
  config.options.max_message_size = kMessageSizes[c[0] >> 6];
  config.options.max_fragments = kFragments[c[1] >> 6];
  config.options.stream_fragments = (c[0] & 0x08) != 0;
  config.app_closes = (c[0] & 0x10) != 0;
  config.peer_fin = (c[0] & 0x20) != 0;
  config.read_size = c[3] & 0x3F;
  if ((c[3] & 0x80) != 0) {
    config.keepalive = true;
    config.options.ping_interval = std::chrono::seconds(30);
    config.options.ping_timeout = std::chrono::seconds(10);
    config.clock_step = std::chrono::seconds((c[3] & 0x40) != 0 ? 32 : 20);
  }
  if ((c[0] & 0x01) != 0) {
    ws::PerMessageDeflate::Config d;
    d.inflate_no_context_takeover = (c[0] & 0x02) != 0;
    d.deflate_no_context_takeover = (c[0] & 0x04) != 0;
    d.inflate_window_bits = 8 + (c[1] & 0x07);
    d.deflate_window_bits = 8 + ((c[1] >> 3) & 0x07);
    d.level = c[2] % 10;
    d.min_message_size = kMinSizes[(c[2] >> 4) & 0x03];
    d.memory_level = kMemoryLevels[c[2] >> 6];
    config.deflate = d;
  }
  return config;
}

// The bytes the connection may hold between reads: the read (and a copy of it, the cumulation's),
// one frame at the wire's bound, the message gathered or inflated, each at most twice over for the
// buffers' growth, and some slack.
inline std::size_t memory_bound(const Config& config, std::size_t read) {
  const std::size_t message = config.options.max_message_size;
  const std::size_t frame = message + message / 8 + 64 + ws::kMaxHeaderSize;
  return 2 * (2 * read + frame) + 2 * message + 16384;
}

inline int run(ws::Codec::Role role, const std::uint8_t* data, std::size_t size) {
  if (size < 4) return 0;
  const Config config = read_config(role, data);
  const std::string_view input(reinterpret_cast<const char*>(data + 4), size - 4);
  TrackingAllocator allocator;  // before the channel: its buffers come from it
  std::string wire;
  std::vector<Written> written;
  {
    EmbeddedChannel ch(ChannelConfig{}, allocator);
    ch.pipeline().add_last("websocket", std::make_shared<ws::Codec>(role, config.options, ByteBuf(), config.deflate));
    auto echo = std::make_shared<Echo>(config);
    ch.pipeline().add_last("app", echo);
    auto drain = [&] {
      while (auto b = ch.read_outbound<ByteBuf>()) wire += b->view();
      check(ch.inbound_count() == 0);
    };
    const std::size_t step = config.read_size == 0 ? std::max<std::size_t>(input.size(), 1) : config.read_size;
    for (std::size_t at = 0; at < input.size() && ch.is_open(); at += step) {
      if (config.keepalive) ch.advance_time(config.clock_step);
      if (!ch.is_open()) break;
      const std::string_view piece = input.substr(at, step);
      ByteBuf read = allocator.buffer(piece.size());
      read.write_bytes(piece.data(), piece.size());
      ch.write_inbound(std::move(read));
      drain();
      check(allocator.live_bytes() <= memory_bound(config, piece.size()));
    }
    if (config.peer_fin && ch.is_open()) {
      ch.pipeline().fire_user_event(ChannelInputShutdownEvent{});
      ch.run_pending();
    }
    // Silence: a ping, then the cut.
    if (config.keepalive) {
      ch.advance_time(config.options.ping_interval);
      ch.advance_time(config.options.ping_timeout);
    }
    // The close handshake's timers (close_timeout, twice at most), then the channel's close (a close
    // from the application while the WebSocket is open starts the handshake, which the timers end).
    ch.advance_time(config.options.close_timeout);
    ch.advance_time(config.options.close_timeout);
    drain();
    ch.finish();
    ch.advance_time(config.options.close_timeout);
    ch.advance_time(config.options.close_timeout);
    drain();
    check(!ch.is_open());
    ch.check_exception();
    check(echo->closed_);  // exactly one close reached the application (a second one aborted above)
    if (input.size() >= 2 && ((static_cast<std::uint8_t>(input[1]) & 0x80) != 0) == (role == ws::Codec::Role::client)) {
      check(echo->close_code_ == ws::close_code::protocol_error && echo->written.empty());
    }
    written = std::move(echo->written);
  }
  check(allocator.live_bytes() == 0);
  check_output(config, wire, written);
  return 0;
}

}  // namespace weft::ws_fuzz
