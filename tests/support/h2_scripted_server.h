#pragma once
// A scripted HTTP/2 server for tests of weft's HTTP/2 client (client::Http2Connection): it speaks just enough
// HTTP/2 to play a script, hostile or not, and records what the client sent.
//
// ScriptedH2Server is an InboundHandler<ByteBuf> (after a TlsHandler for h2 over TLS). When the
// connection opens it sends the script's greeting (by default an empty SETTINGS); it reads the
// client's preface and frames, ACKs the client's SETTINGS, answers the first HEADERS of each stream
// (a request) with script.answer(stream), and passes every frame of the client to script.react
// (whose bytes it sends). ScriptedH2Log records, for any thread to wait on: whether the preface
// was right, every frame, the client's SETTINGS values and ACKs, RST_STREAMs, GOAWAY, the DATA of
// each stream, and the connection's close.
//
// Header-only; a test that includes it links libnghttp2 (weft::nghttp2), as support/h2_frames.h.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "support/h2_frames.h"
#include "support/tls_certs.h"
#include "weft/weft.h"

namespace weft::test {

// One frame the client sent.
struct ClientFrame {
  std::uint8_t type = 0;
  std::uint8_t flags = 0;
  std::uint32_t stream = 0;
  std::string payload;
};

// What the scripted server saw of the client (read it through ScriptedH2Log).
struct ScriptedH2Seen {
  bool preface = false;                             // the 24 bytes of the connection preface came, and were right
  bool preface_wrong = false;                       // the first 24 bytes were something else
  std::vector<ClientFrame> frames;                  // every frame after the preface, in order
  std::map<std::uint16_t, std::uint32_t> settings;  // the client's SETTINGS values (the last of each id)
  std::size_t settings_frames = 0;                  // SETTINGS frames that were not ACKs
  std::size_t settings_acks = 0;                    // SETTINGS ACKs
  std::map<std::uint32_t, std::uint32_t> resets;    // stream -> the code of its (first) RST_STREAM
  std::optional<std::uint32_t> goaway;              // the code of the client's first GOAWAY
  std::map<std::uint32_t, std::string> data;        // stream -> the DATA the client sent (padding removed)
  bool closed = false;                              // the connection closed

  // How many frames of `type` (on `stream`, unless it is -1).
  std::size_t count(std::uint8_t type, std::int64_t stream = -1) const {
    std::size_t k = 0;
    for (const auto& f : frames) k += f.type == type && (stream < 0 || f.stream == stream);
    return k;
  }
};

class ScriptedH2Log {
 public:
  // Waits (at most `timeout`: a test fails instead of hanging) until pred(seen) holds.
  template <typename Pred>
  bool wait_for(std::chrono::milliseconds timeout, Pred pred) {
    std::unique_lock<std::mutex> lock(mutex_);
    return changed_.wait_for(lock, timeout, [&] { return pred(static_cast<const ScriptedH2Seen&>(seen_)); });
  }
  ScriptedH2Seen snapshot() {
    std::lock_guard<std::mutex> lock(mutex_);
    return seen_;
  }
  // Closes the server's side of each connection still open (and waits for it): for a client that
  // would not end a connection.
  void close_connections() {
    std::vector<std::weak_ptr<Channel>> connections;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      connections = connections_;
    }
    for (const auto& weak : connections) {
      if (ChannelPtr ch = weak.lock()) ch->close().wait();
    }
  }
  // The server's side: a connection opened.
  void opened(Channel& ch) {
    std::lock_guard<std::mutex> lock(mutex_);
    connections_.push_back(ch.shared_from_this());
  }
  // The server's side: changes what was seen and wakes the waiting.
  template <typename F>
  void update(F f) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      f(seen_);
    }
    changed_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  ScriptedH2Seen seen_;
  std::vector<std::weak_ptr<Channel>> connections_;
};

struct ScriptedH2Script {
  // The server's first bytes, sent as the connection opens (its SETTINGS, unless a test wants otherwise).
  std::string greeting = frame(NGHTTP2_SETTINGS, 0, 0, "");
  // The answer to a request: the first HEADERS the client sends on `stream`.
  std::function<std::string(std::uint32_t stream)> answer;
  // Called with every frame of the client (after the answer, and the ACK of a SETTINGS); returns
  // bytes to send (empty: none). Optional.
  std::function<std::string(const ClientFrame&)> react;
};

class ScriptedH2Server final : public InboundHandler<ByteBuf> {
 public:
  ScriptedH2Server(ScriptedH2Script script, std::shared_ptr<ScriptedH2Log> log)
      : script_(std::move(script)), log_(std::move(log)) {}

  void channel_active(Context& ctx) override {
    log_->opened(ctx.channel());
    if (!script_.greeting.empty()) send(ctx, script_.greeting);
    ctx.fire_channel_active();
  }
  void channel_inactive(Context& ctx) override {
    log_->update([](ScriptedH2Seen& s) { s.closed = true; });
    ctx.fire_channel_inactive();
  }
  void channel_read(Context& ctx, ByteBuf&& bytes) override {
    pending_.append(reinterpret_cast<const char*>(bytes.read_ptr()), bytes.readable_bytes());
    std::size_t at = 0;
    if (!preface_done_) {
      if (pending_.size() < kH2Preface.size()) return;
      const bool right = std::string_view(pending_).substr(0, kH2Preface.size()) == kH2Preface;
      log_->update([right](ScriptedH2Seen& s) {
        s.preface = right;
        s.preface_wrong = !right;
      });
      at = kH2Preface.size();
      preface_done_ = true;
    }
    std::string out;
    while (pending_.size() - at >= 9) {
      const auto* h = reinterpret_cast<const std::uint8_t*>(pending_.data() + at);
      const std::size_t length = (std::size_t{h[0]} << 16) | (std::size_t{h[1]} << 8) | h[2];
      if (pending_.size() - at < 9 + length) break;
      ClientFrame f{
          h[3], h[4],
          ((std::uint32_t{h[5]} & 0x7fu) << 24) | (std::uint32_t{h[6]} << 16) | (std::uint32_t{h[7]} << 8) | h[8],
          pending_.substr(at + 9, length)};
      at += 9 + length;
      out += on_frame(f);
    }
    pending_.erase(0, at);
    if (!out.empty()) send(ctx, out);
  }

 private:
  static std::uint32_t word(std::string_view s, std::size_t i) {
    const auto* p = reinterpret_cast<const std::uint8_t*>(s.data() + i);
    return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) | p[3];
  }

  std::string on_frame(const ClientFrame& f) {
    std::string out;
    log_->update([&f](ScriptedH2Seen& s) {
      s.frames.push_back(f);
      const std::string& p = f.payload;
      switch (f.type) {
        case NGHTTP2_SETTINGS:
          if ((f.flags & NGHTTP2_FLAG_ACK) != 0) {
            ++s.settings_acks;
            break;
          }
          ++s.settings_frames;
          for (std::size_t i = 0; i + 6 <= p.size(); i += 6) {
            const auto id = static_cast<std::uint16_t>((static_cast<std::uint8_t>(p[i]) << 8) |
                                                       static_cast<std::uint8_t>(p[i + 1]));
            s.settings[id] = word(p, i + 2);
          }
          break;
        case NGHTTP2_RST_STREAM:
          if (p.size() == 4) s.resets.emplace(f.stream, word(p, 0));
          break;
        case NGHTTP2_GOAWAY:
          if (p.size() >= 8 && !s.goaway) s.goaway = word(p, 4);
          break;
        case NGHTTP2_DATA: {
          std::string_view d = p;
          if ((f.flags & NGHTTP2_FLAG_PADDED) != 0 && !d.empty()) {
            const std::size_t pad = static_cast<std::uint8_t>(d[0]);
            d = d.substr(1, d.size() - 1 >= pad ? d.size() - 1 - pad : 0);
          }
          s.data[f.stream] += d;
          break;
        }
        default: break;
      }
    });
    if (f.type == NGHTTP2_SETTINGS && (f.flags & NGHTTP2_FLAG_ACK) == 0) {
      out += frame(NGHTTP2_SETTINGS, NGHTTP2_FLAG_ACK, 0, "");
    }
    if (f.type == NGHTTP2_HEADERS && answered_.insert(f.stream).second && script_.answer)
      out += script_.answer(f.stream);
    if (script_.react) out += script_.react(f);
    return out;
  }

  static void send(Context& ctx, std::string_view bytes) {
    ByteBuf buf = ctx.allocator().buffer(bytes.size());
    buf.write_bytes(bytes.data(), bytes.size());
    ctx.write_and_flush(std::move(buf));
  }

  ScriptedH2Script script_;
  std::shared_ptr<ScriptedH2Log> log_;
  std::string pending_;
  bool preface_done_ = false;
  std::set<std::uint32_t> answered_;
};

// Listens on a loopback port of `group` (chosen by the kernel) with a ScriptedH2Server playing
// `script` on each connection, after a TlsHandler (ALPN h2, the test PKI's localhost) when `tls`.
inline ChannelPtr serve_scripted_h2(EventLoopGroup& group, bool tls, ScriptedH2Script script,
                                    std::shared_ptr<ScriptedH2Log> log) {
  auto context = tls ? test_server_context(test_pki().localhost, {"h2"}) : nullptr;
  return ServerBootstrap()
      .group(group)
      .child_handler([context, script = std::move(script), log = std::move(log)](Channel& ch) {
        if (context) ch.pipeline().add_last("tls", std::make_shared<TlsHandler>(context));
        ch.pipeline().add_last("scripted", std::make_shared<ScriptedH2Server>(script, log));
      })
      .bind(SocketAddress::loopback(0))
      .get();
}

// The options of a client::Http2Connection to that server: over TLS, ALPN h2 and the test PKI's localhost.
inline client::Http2Connection::Options scripted_h2_client_options(bool tls, http2::ClientSettings settings = {}) {
  client::Http2Connection::Options options;
  options.settings = std::move(settings);
  if (tls) {
    options.tls = test_client_context({"h2"});
    options.server_name = "localhost";
  }
  return options;
}

}  // namespace weft::test
