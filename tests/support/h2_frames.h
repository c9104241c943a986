#pragma once
// Raw HTTP/2 frames for tests that play a client no library would be (RFC 9113 conformance,
// floods): frame() builds one, hand-made HPACK blocks fill HEADERS, and ServerFrames reads what
// the server wrote without a client session (one that would reject answers on streams it did not
// open): every frame, GOAWAY, resets, WINDOW_UPDATEs, DATA and the header blocks, decoded with
// nghttp2's inflater (so that the server's HPACK is checked by another implementation).
//
// Header-only; a test that includes it links libnghttp2 (weft::nghttp2).

#include <nghttp2/nghttp2.h>

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace weft::test {

inline constexpr std::string_view kH2Preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// HEADERS flags of a request without a body: END_HEADERS | END_STREAM.
inline constexpr std::uint8_t kEndHeadersAndStream = NGHTTP2_FLAG_END_HEADERS | NGHTTP2_FLAG_END_STREAM;

inline std::string frame(std::uint8_t type, std::uint8_t flags, std::uint32_t stream, std::string_view payload) {
  std::string f;
  const std::size_t n = payload.size();
  f += static_cast<char>(n >> 16);
  f += static_cast<char>(n >> 8);
  f += static_cast<char>(n);
  f += static_cast<char>(type);
  f += static_cast<char>(flags);
  for (int shift = 24; shift >= 0; shift -= 8) f += static_cast<char>((stream >> shift) & 0xff);
  f += payload;
  return f;
}
inline std::string u32(std::uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8), static_cast<char>(v)};
}
// One SETTINGS entry (id, value).
inline std::string setting(std::uint16_t id, std::uint32_t value) {
  return std::string{static_cast<char>(id >> 8), static_cast<char>(id)} + u32(value);
}
// The client preface and an empty SETTINGS frame.
inline std::string raw_preface() { return std::string(kH2Preface) + frame(NGHTTP2_SETTINGS, 0, 0, ""); }
// GET / (HPACK: :method GET, :scheme http, :path / from the static table; :authority test.example,
// a literal without indexing).
inline constexpr std::string_view kGetBlock = "\x82\x86\x84\x01\x0ctest.example";
// An HPACK literal field without indexing, new name (names and values under 128 bytes).
inline std::string literal(std::string_view name, std::string_view value) {
  return std::string(1, '\0') + static_cast<char>(name.size()) + std::string(name) + static_cast<char>(value.size()) +
         std::string(value);
}
// An HPACK literal field with incremental indexing, new name (it enters the dynamic table).
inline std::string indexed_literal(std::string_view name, std::string_view value) {
  return std::string(1, '\x40') + static_cast<char>(name.size()) + std::string(name) +
         static_cast<char>(value.size()) + std::string(value);
}
// A request head: :method, :scheme http, :path, :authority test.example, then `extra` (literal
// fields).
inline std::string request_block(std::string_view method, std::string_view path, std::string_view extra = {}) {
  return literal(":method", method) + "\x86" + literal(":path", path) + "\x01\x0ctest.example" + std::string(extra);
}

// base64url without padding (an HTTP2-Settings header's value).
inline std::string base64url(const std::uint8_t* data, std::size_t n) {
  static constexpr char kDigits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  std::uint32_t bits = 0;
  int count = 0;
  for (std::size_t i = 0; i < n; ++i) {
    bits = (bits << 8) | data[i];
    count += 8;
    while (count >= 6) {
      count -= 6;
      out.push_back(kDigits[(bits >> count) & 63]);
    }
  }
  if (count > 0) out.push_back(kDigits[(bits << (6 - count)) & 63]);
  return out;
}

struct ServerFrame {
  std::uint8_t type;
  std::uint8_t flags;
  std::uint32_t stream;
  std::string payload;
};

// The frames the server wrote. feed() may be called again with later output: the HPACK state and a
// frame cut between two outputs carry over.
class ServerFrames {
 public:
  explicit ServerFrames(std::string_view bytes = {}, std::optional<std::uint32_t> table_size = std::nullopt) {
    nghttp2_hd_inflater* inflater = nullptr;
    nghttp2_hd_inflate_new(&inflater);
    inflater_.reset(inflater);
    if (table_size) nghttp2_hd_inflate_change_table_size(inflater, *table_size);
    feed(bytes);
  }

  void feed(std::string_view bytes) {
    pending_ += bytes;
    std::size_t at = 0;
    while (at + 9 <= pending_.size()) {
      const auto* p = reinterpret_cast<const std::uint8_t*>(pending_.data() + at);
      const std::size_t n = (std::size_t{p[0]} << 16) | (std::size_t{p[1]} << 8) | p[2];
      if (at + 9 + n > pending_.size()) break;
      ServerFrame f{p[3], p[4],
                    ((std::uint32_t{p[5]} & 0x7f) << 24) | (std::uint32_t{p[6]} << 16) | (std::uint32_t{p[7]} << 8) | p[8],
                    pending_.substr(at + 9, n)};
      on_frame(f);
      frames.push_back(std::move(f));
      at += 9 + n;
    }
    pending_.erase(0, at);
  }

  // The client's SETTINGS_HEADER_TABLE_SIZE changed (sent at this point of the exchange): the
  // server's next block must begin with a dynamic table size update that fits it.
  void set_table_size(std::uint32_t size) { nghttp2_hd_inflate_change_table_size(inflater_.get(), size); }

  // How many frames of `type` (on `stream`, unless it is -1).
  std::size_t count(std::uint8_t type, std::int64_t stream = -1) const {
    std::size_t k = 0;
    for (const auto& f : frames) k += f.type == type && (stream < 0 || f.stream == stream);
    return k;
  }
  std::optional<std::string> header(std::uint32_t stream, std::string_view name) const {
    const auto it = headers.find(stream);
    if (it == headers.end()) return std::nullopt;
    for (const auto& [n, v] : it->second) {
      if (n == name) return v;
    }
    return std::nullopt;
  }

  std::vector<ServerFrame> frames;
  std::optional<std::uint32_t> goaway;          // its error code
  std::optional<std::uint32_t> goaway_last_id;
  std::string goaway_debug;                     // its debug data
  int pings = 0;                                // PINGs the server sent (not ACKs)
  std::map<std::uint32_t, std::uint32_t> resets;  // stream -> error code
  std::map<std::uint32_t, int> status;            // stream -> :status of its last head
  std::map<std::uint32_t, std::vector<std::pair<std::string, std::string>>> headers;  // its head's fields
  std::map<std::uint32_t, std::string> data;      // stream -> DATA received
  std::map<std::uint32_t, bool> ended;            // stream -> END_STREAM seen
  std::map<std::uint32_t, std::uint64_t> window_updates;  // stream (0: the connection) -> increments
  std::vector<std::string> blocks;              // every header block, whole (HEADERS + CONTINUATIONs)
  std::size_t settings_acks = 0;
  bool hpack_error = false;   // a block nghttp2's inflater rejected
  bool sequence_error = false;  // CONTINUATION out of place, or a frame inside a header block

 private:
  struct InflaterDeleter {
    void operator()(nghttp2_hd_inflater* p) const { nghttp2_hd_inflate_del(p); }
  };

  static std::uint32_t word(const std::string& s, std::size_t i) {
    const auto* p = reinterpret_cast<const std::uint8_t*>(s.data() + i);
    return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) | p[3];
  }

  void on_frame(const ServerFrame& f) {
    if (block_stream_ != 0 && f.type != NGHTTP2_CONTINUATION) sequence_error = true;
    switch (f.type) {
      case NGHTTP2_GOAWAY:
        if (f.payload.size() >= 8) {
          goaway_last_id = word(f.payload, 0) & 0x7fffffffu;
          goaway = word(f.payload, 4);
          goaway_debug = f.payload.substr(8);
        }
        break;
      case NGHTTP2_PING:
        if ((f.flags & NGHTTP2_FLAG_ACK) == 0) ++pings;
        break;
      case NGHTTP2_RST_STREAM:
        if (f.payload.size() == 4) resets[f.stream] = word(f.payload, 0);
        break;
      case NGHTTP2_WINDOW_UPDATE:
        if (f.payload.size() == 4) window_updates[f.stream] += word(f.payload, 0) & 0x7fffffffu;
        break;
      case NGHTTP2_SETTINGS:
        if ((f.flags & NGHTTP2_FLAG_ACK) != 0) ++settings_acks;
        break;
      case NGHTTP2_DATA:
        data[f.stream] += f.payload;  // (the server never pads)
        if ((f.flags & NGHTTP2_FLAG_END_STREAM) != 0) ended[f.stream] = true;
        break;
      case NGHTTP2_HEADERS:
        // The server sends no padding and no priority.
        if ((f.flags & NGHTTP2_FLAG_END_STREAM) != 0) ended[f.stream] = true;
        block_ = f.payload;
        block_stream_ = f.stream;
        if ((f.flags & NGHTTP2_FLAG_END_HEADERS) != 0) end_block();
        break;
      case NGHTTP2_CONTINUATION:
        if (block_stream_ == 0 || f.stream != block_stream_) {
          sequence_error = true;
          break;
        }
        block_ += f.payload;
        if ((f.flags & NGHTTP2_FLAG_END_HEADERS) != 0) end_block();
        break;
      default:
        break;
    }
  }

  void end_block() {
    const std::uint32_t id = block_stream_;
    block_stream_ = 0;
    blocks.push_back(block_);
    auto& fields = headers[id];
    fields.clear();
    const auto* in = reinterpret_cast<const std::uint8_t*>(block_.data());
    std::size_t left = block_.size();
    for (;;) {
      nghttp2_nv nv;
      int flags = 0;
      const ssize_t used = nghttp2_hd_inflate_hd2(inflater_.get(), &nv, &flags, in, left, 1);
      if (used < 0) {
        hpack_error = true;
        return;
      }
      in += used;
      left -= static_cast<std::size_t>(used);
      if ((flags & NGHTTP2_HD_INFLATE_EMIT) != 0) {
        std::string name(reinterpret_cast<const char*>(nv.name), nv.namelen);
        std::string value(reinterpret_cast<const char*>(nv.value), nv.valuelen);
        if (name == ":status") status[id] = std::stoi(value);
        fields.emplace_back(std::move(name), std::move(value));
      }
      if ((flags & NGHTTP2_HD_INFLATE_FINAL) != 0) {
        nghttp2_hd_inflate_end_headers(inflater_.get());
        return;
      }
      if (used == 0 && (flags & NGHTTP2_HD_INFLATE_EMIT) == 0) {
        hpack_error = true;
        return;
      }
    }
  }

  std::unique_ptr<nghttp2_hd_inflater, InflaterDeleter> inflater_;
  std::string pending_;
  std::string block_;
  std::uint32_t block_stream_ = 0;
};

}  // namespace weft::test
