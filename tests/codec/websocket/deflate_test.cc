// permessage-deflate (RFC 7692) in the WebSocket server: the negotiation of the offers, then the
// codec on an EmbeddedChannel -- RFC 7692 section 7.2.3's example frames, whole and one byte at a
// time, context takeover both ways, RSV1 where it is not allowed, a zip bomb refused within the
// bound, invalid text after inflating -- and the handshake through a Router. Then streamed fragments
// (Options::stream_fragments) on the same codec harness, plain and compressed. Interop with a real
// peer (python3-websockets) is in websocket_test.cc, on every transport.

#include "weft/codec/websocket/deflate.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "buffer/counting_allocator.h"
#include "weft/channel/embedded_channel.h"
#include "weft/codec/http1/router.h"
#include "weft/codec/http1/server_codec.h"
#include "weft/codec/websocket/codec.h"
#include "weft/codec/websocket/upgrade.h"

// A namespace of its own: the unity build puts this file beside others with a Frame, a Conn...
namespace weft::websocket_deflate_test {
namespace {

using ws::DeflateOptions;
using ws::DeflateParameters;
using ws::PerMessageDeflate;

// ---- negotiation

DeflateOptions on() {
  DeflateOptions o;
  o.enabled = true;
  return o;
}

std::optional<ws::DeflateAgreement> negotiate(std::vector<std::string_view> headers,
                                              const DeflateOptions& options = on()) {
  return ws::negotiate_deflate(headers, options);
}

TEST(WebSocketDeflateNegotiation, ThePlainOfferIsAcceptedWithDefaults) {
  auto a = negotiate({"permessage-deflate"});
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->parameters, DeflateParameters{});
  EXPECT_EQ(a->response, "permessage-deflate");
  // What Chromium and python3-websockets offer: client_max_window_bits without a value.
  a = negotiate({"permessage-deflate; client_max_window_bits"});
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->parameters, DeflateParameters{});
  EXPECT_EQ(a->response, "permessage-deflate");
  EXPECT_FALSE(negotiate({"permessage-deflate"}, DeflateOptions{}).has_value()) << "off by default";
  EXPECT_FALSE(negotiate({}).has_value()) << "nothing offered";
}

TEST(WebSocketDeflateNegotiation, EachParameterIsAnswered) {
  auto a = negotiate({"permessage-deflate; server_no_context_takeover"});
  ASSERT_TRUE(a.has_value());
  EXPECT_TRUE(a->parameters.server_no_context_takeover);
  EXPECT_FALSE(a->parameters.client_no_context_takeover);
  EXPECT_EQ(a->response, "permessage-deflate; server_no_context_takeover");

  a = negotiate({"permessage-deflate; client_no_context_takeover"});
  ASSERT_TRUE(a.has_value());
  EXPECT_TRUE(a->parameters.client_no_context_takeover);
  EXPECT_EQ(a->response, "permessage-deflate; client_no_context_takeover");

  a = negotiate({"permessage-deflate; server_max_window_bits=10"});
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->parameters.server_max_window_bits, 10);
  EXPECT_EQ(a->response, "permessage-deflate; server_max_window_bits=10");

  // Offered at 15: accepted by answering it (python3-websockets insists).
  a = negotiate({"permessage-deflate; server_max_window_bits=15"});
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->response, "permessage-deflate; server_max_window_bits=15");

  a = negotiate({"permessage-deflate; client_max_window_bits=9"});
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->parameters.client_max_window_bits, 9);
  EXPECT_EQ(a->response, "permessage-deflate; client_max_window_bits=9");

  a = negotiate({"permessage-deflate; server_max_window_bits=8; client_max_window_bits=8"});
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->parameters.server_max_window_bits, 8);
  EXPECT_EQ(a->parameters.client_max_window_bits, 8);

  a = negotiate({"Permessage-Deflate ; Server_No_Context_Takeover ;client_no_context_takeover"});
  ASSERT_TRUE(a.has_value()) << "names are case-insensitive; whitespace around ';'";
  EXPECT_TRUE(a->parameters.server_no_context_takeover);
  EXPECT_TRUE(a->parameters.client_no_context_takeover);
}

TEST(WebSocketDeflateNegotiation, BadValuesUnknownAndRepeatedParametersDeclineTheOffer) {
  for (std::string_view offer : {
           "permessage-deflate; server_max_window_bits=7",
           "permessage-deflate; server_max_window_bits=16",
           "permessage-deflate; server_max_window_bits=08",
           "permessage-deflate; server_max_window_bits",
           "permessage-deflate; server_max_window_bits=\"\"",
           "permessage-deflate; client_max_window_bits=abc",
           "permessage-deflate; client_max_window_bits=7",
           "permessage-deflate; server_no_context_takeover=1",
           "permessage-deflate; client_no_context_takeover=\"x\"",
           "permessage-deflate; server_no_context_takeover; server_no_context_takeover",
           "permessage-deflate; client_max_window_bits; client_max_window_bits=10",
           "permessage-deflate; max_window_bits=10",
           "permessage-deflate; x",
           "permessage-deflate;",
           "permessage-deflate; server_max_window_bits=\"1,2\"",
           "permessage-deflate; server_max_window_bits=\"10",
           "permessage-deflate; =10",
           "permessage-deflate server_no_context_takeover",
       }) {
    EXPECT_FALSE(negotiate({offer}).has_value()) << offer;
  }
}

TEST(WebSocketDeflateNegotiation, TheFirstAcceptableOfferWinsAcrossOffersAndHeaderFields) {
  auto a = negotiate({"permessage-deflate; foo=1, permessage-deflate; client_max_window_bits=12"});
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->parameters.client_max_window_bits, 12);
  // An unknown extension is skipped; a quoted value counts once unquoted; a second field is read.
  a = negotiate({"x-webkit-deflate-frame; no_context_takeover", "permessage-deflate; server_max_window_bits=\"12\""});
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->parameters.server_max_window_bits, 12);
  // A malformed element does not hide the next: the comma inside quotes is not a separator.
  a = negotiate({"permessage-deflate; server_max_window_bits=\"1,2\", permessage-deflate; server_no_context_takeover"});
  ASSERT_TRUE(a.has_value());
  EXPECT_TRUE(a->parameters.server_no_context_takeover);
  EXPECT_EQ(a->parameters.server_max_window_bits, 15);
  // Empty elements are allowed by the list syntax.
  a = negotiate({" , ,permessage-deflate"});
  ASSERT_TRUE(a.has_value());
  EXPECT_FALSE(negotiate({"x-webkit-deflate-frame", "deflate-frame; max_window_bits=10"}).has_value());
}

TEST(WebSocketDeflateNegotiation, TheServersOptionsShapeTheAnswer) {
  DeflateOptions mine = on();
  mine.server_no_context_takeover = true;
  mine.client_no_context_takeover = true;
  mine.server_max_window_bits = 12;
  auto a = negotiate({"permessage-deflate"}, mine);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->response,
            "permessage-deflate; server_no_context_takeover; client_no_context_takeover; server_max_window_bits=12");
  a = negotiate({"permessage-deflate; server_max_window_bits=10"}, mine);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->parameters.server_max_window_bits, 10) << "the smaller of the two";
  // A client window limit below 15 binds only a client that offered client_max_window_bits.
  DeflateOptions small_client = on();
  small_client.client_max_window_bits = 10;
  EXPECT_FALSE(negotiate({"permessage-deflate"}, small_client).has_value());
  a = negotiate({"permessage-deflate, permessage-deflate; client_max_window_bits"}, small_client);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->parameters.client_max_window_bits, 10);
  EXPECT_EQ(a->response, "permessage-deflate; client_max_window_bits=10");
  a = negotiate({"permessage-deflate; client_max_window_bits=9"}, small_client);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->parameters.client_max_window_bits, 9);
  // Out-of-range options are refused when the route is made.
  DeflateOptions bad = on();
  bad.level = 10;
  ws::UpgradeOptions with_bad;
  with_bad.deflate = bad;
  EXPECT_THROW(ws::upgrade(ws::Callbacks{}, with_bad), std::invalid_argument);
  bad = on();
  bad.server_max_window_bits = 7;
  EXPECT_THROW(bad.validate(), std::invalid_argument);
}

// ---- frames

// A client's frame: masked, `first` its first byte (FIN, RSV, opcode).
std::string frame(std::uint8_t first, std::string_view payload) {
  std::string out;
  out += static_cast<char>(first);
  const std::size_t n = payload.size();
  if (n < 126) {
    out += static_cast<char>(0x80 | n);
  } else if (n <= 0xFFFF) {
    out += static_cast<char>(0x80 | 126);
    out += static_cast<char>(n >> 8);
    out += static_cast<char>(n & 0xFF);
  } else {
    out += static_cast<char>(0x80 | 127);
    for (int shift = 56; shift >= 0; shift -= 8) out += static_cast<char>((n >> shift) & 0xFF);
  }
  const char key[4] = {0x12, 0x34, 0x56, 0x78};
  out.append(key, 4);
  for (std::size_t i = 0; i < n; ++i) out += static_cast<char>(payload[i] ^ key[i % 4]);
  return out;
}

std::string hex(std::initializer_list<int> bytes) {
  std::string s;
  for (int b : bytes) s += static_cast<char>(b);
  return s;
}

constexpr std::uint8_t kText = 0x81, kBinary = 0x82, kCompressedText = 0xC1, kCompressedBinary = 0xC2;

// A server frame as sent: first byte and payload.
struct Sent {
  std::uint8_t first = 0;
  std::string payload;
};

std::vector<Sent> parse_frames(std::string wire) {
  std::vector<Sent> frames;
  std::size_t i = 0;
  while (i + 2 <= wire.size()) {
    Sent f;
    f.first = static_cast<std::uint8_t>(wire[i]);
    std::uint64_t n = static_cast<std::uint8_t>(wire[i + 1]) & 0x7F;
    i += 2;
    if (n >= 126) {
      const std::size_t k = n == 126 ? 2 : 8;
      n = 0;
      for (std::size_t j = 0; j < k; ++j) n = (n << 8) | static_cast<std::uint8_t>(wire[i + j]);
      i += k;
    }
    f.payload = wire.substr(i, n);
    i += n;
    frames.push_back(std::move(f));
  }
  EXPECT_EQ(i, wire.size()) << "whole frames";
  return frames;
}

// Raw DEFLATE with zlib: what a client sends (the trailing 00 00 ff ff removed), and the inverse.
class Zlib {
 public:
  explicit Zlib(int bits = 15, int level = 6) {
    EXPECT_EQ(deflateInit2(&d_, level, Z_DEFLATED, -bits, 8, Z_DEFAULT_STRATEGY), Z_OK);
    EXPECT_EQ(inflateInit2(&i_, -bits), Z_OK);
  }
  ~Zlib() {
    deflateEnd(&d_);
    inflateEnd(&i_);
  }
  Zlib(const Zlib&) = delete;
  Zlib& operator=(const Zlib&) = delete;
  // Compresses `n` bytes given by `chunk` calls (for inputs too big to hold), sync-flushed, tail removed.
  std::string compress(std::string_view text) { return compress_chunks(text, 1); }
  std::string compress_chunks(std::string_view chunk, std::size_t times) {
    std::string out;
    for (std::size_t t = 0; t < times; ++t) run(chunk, t + 1 == times ? Z_SYNC_FLUSH : Z_NO_FLUSH, out);
    EXPECT_EQ(out.substr(out.size() - 4), hex({0, 0, 0xff, 0xff}));
    out.resize(out.size() - 4);
    return out;
  }
  std::string inflate(std::string compressed) {
    compressed += hex({0, 0, 0xff, 0xff});
    std::string out;
    i_.next_in = reinterpret_cast<Bytef*>(compressed.data());
    i_.avail_in = static_cast<uInt>(compressed.size());
    char buf[16384];
    do {
      i_.next_out = reinterpret_cast<Bytef*>(buf);
      i_.avail_out = sizeof(buf);
      const int rc = ::inflate(&i_, Z_SYNC_FLUSH);
      EXPECT_TRUE(rc == Z_OK || rc == Z_BUF_ERROR) << rc;
      out.append(buf, sizeof(buf) - i_.avail_out);
    } while (i_.avail_out == 0);
    return out;
  }

 private:
  void run(std::string_view in, int flush, std::string& out) {
    d_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    d_.avail_in = static_cast<uInt>(in.size());
    char buf[16384];
    do {
      d_.next_out = reinterpret_cast<Bytef*>(buf);
      d_.avail_out = sizeof(buf);
      EXPECT_NE(::deflate(&d_, flush), Z_STREAM_ERROR);
      out.append(buf, sizeof(buf) - d_.avail_out);
    } while (d_.avail_out == 0);
  }
  z_stream d_{};
  z_stream i_{};
};

// A server connection on an EmbeddedChannel: a Codec, with permessage-deflate when `deflate`.
class Conn {
 public:
  explicit Conn(std::optional<PerMessageDeflate::Config> deflate, ws::Options options = {}) {
    auto codec =
        deflate ? std::make_shared<ws::Codec>(options, ByteBuf(), *deflate) : std::make_shared<ws::Codec>(options);
    codec_ = codec.get();
    ch.pipeline().add_last("websocket", std::move(codec));
  }
  // Sends `bytes`, whole or one at a time (or in `chunk`-byte pieces).
  void send(std::string_view bytes, std::size_t chunk = 0) {
    if (chunk == 0) chunk = bytes.size();
    for (std::size_t i = 0; i < bytes.size(); i += chunk) {
      ch.write_inbound(ByteBuf::copy_of(bytes.substr(i, chunk)));
    }
  }
  // The messages delivered so far (a close last, when the connection ended).
  std::vector<ws::Message> messages() {
    std::vector<ws::Message> out;
    while (auto m = ch.read_inbound<ws::Message>()) out.push_back(std::move(*m));
    return out;
  }
  // The frames the server wrote so far.
  std::vector<Sent> written() {
    std::string wire;
    while (auto b = ch.read_outbound<ByteBuf>()) wire += b->to_string();
    return parse_frames(std::move(wire));
  }
  void write(ws::Message m) { ch.write_outbound(std::move(m)); }

  test::CountingAllocator allocator;  // before the channel: its buffers come from it
  EmbeddedChannel ch{ChannelConfig{}, allocator};
  ws::Codec* codec_ = nullptr;
};

PerMessageDeflate::Config server(bool client_no_context_takeover = false, bool server_no_context_takeover = false) {
  PerMessageDeflate::Config c;
  c.inflate_no_context_takeover = client_no_context_takeover;
  c.deflate_no_context_takeover = server_no_context_takeover;
  c.min_message_size = 1;
  return c;
}

// The server sent a close with `code`, and the application heard the end with it (also on an
// EmbeddedChannel, which closes at once).
void expect_failed_with(Conn& c, std::uint16_t code) {
  const std::vector<Sent> sent = c.written();
  ASSERT_FALSE(sent.empty());
  EXPECT_EQ(sent.back().first, 0x88);
  EXPECT_EQ(sent.back().payload, std::string({static_cast<char>(code >> 8), static_cast<char>(code & 0xFF)}));
  std::vector<ws::Message> got = c.messages();
  ASSERT_FALSE(got.empty());
  EXPECT_TRUE(got.back().is_close());
  EXPECT_EQ(got.back().close_code(), code);
}

struct Example {
  const char* name;
  std::vector<std::string> frames;  // unmasked RFC 7692 frames (first byte, length, payload)
  std::vector<std::string> texts;   // the messages they carry
  bool client_no_context_takeover = false;
};

// RFC 7692 section 7.2.3: the example frames as a server would send them; masked here, as a client sends.
std::string masked(const std::string& unmasked_frame) {
  return frame(static_cast<std::uint8_t>(unmasked_frame[0]), std::string_view(unmasked_frame).substr(2));
}

TEST(WebSocketDeflateCodec, Rfc7692ExamplesWholeAndOneByteAtATime) {
  const std::string hello = hex({0xc1, 0x07, 0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00});
  const std::vector<Example> examples = {
      {"7.2.3.1 a message in one compressed frame", {hello}, {"Hello"}},
      {"7.2.3.1 a message in two fragments",
       {hex({0x41, 0x03, 0xf2, 0x48, 0xcd}), hex({0x80, 0x04, 0xc9, 0xc9, 0x07, 0x00})},
       {"Hello"}},
      {"7.2.3.2 the second message refers to the first (shared window)",
       {hello, hex({0xc1, 0x05, 0xf2, 0x00, 0x11, 0x00, 0x00})},
       {"Hello", "Hello"}},
      {"7.2.3.2 without context takeover, each message alone", {hello, hello}, {"Hello", "Hello"}, true},
      {"7.2.3.3 a stored (uncompressed) DEFLATE block",
       {hex({0xc1, 0x0b, 0x00, 0x05, 0x00, 0xfa, 0xff, 0x48, 0x65, 0x6c, 0x6c, 0x6f, 0x00})},
       {"Hello"}},
      {"7.2.3.4 a block with BFINAL set, then a message on the same window",
       {hex({0xc1, 0x08, 0xf3, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00, 0x00}),
        hex({0xc1, 0x05, 0xf2, 0x00, 0x11, 0x00, 0x00})},
       {"Hello", "Hello"}},
      {"7.2.3.5 two DEFLATE blocks in one message",
       {hex({0xc1, 0x0d, 0xf2, 0x48, 0x05, 0x00, 0x00, 0x00, 0xff, 0xff, 0xca, 0xc9, 0xc9, 0x07, 0x00})},
       {"Hello"}},
      {"an uncompressed message between compressed ones leaves the window alone",
       {hello, hex({0x81, 0x02, 'h', 'i'}), hex({0xc1, 0x05, 0xf2, 0x00, 0x11, 0x00, 0x00})},
       {"Hello", "hi", "Hello"}},
      {"a ping between a compressed message's fragments",
       {hex({0x41, 0x03, 0xf2, 0x48, 0xcd}), hex({0x89, 0x01, 'p'}), hex({0x80, 0x04, 0xc9, 0xc9, 0x07, 0x00})},
       {"Hello"}},
  };
  for (const Example& e : examples) {
    for (const bool bytewise : {false, true}) {
      SCOPED_TRACE(std::string(e.name) + (bytewise ? " (one byte at a time)" : " (whole)"));
      Conn c(server(e.client_no_context_takeover));
      std::string wire;
      for (const std::string& f : e.frames) wire += masked(f);
      c.send(wire, bytewise ? 1 : 0);
      std::vector<ws::Message> got = c.messages();
      ASSERT_EQ(got.size(), e.texts.size());
      for (std::size_t i = 0; i < got.size(); ++i) {
        EXPECT_TRUE(got[i].is_text());
        EXPECT_EQ(got[i].view(), e.texts[i]);
      }
    }
  }
}

TEST(WebSocketDeflateCodec, WithoutContextTakeoverTheInflaterStartsOverEachMessage) {
  // The shared-window example's second message refers to the first: a peer that promised not to
  // take context over cannot send it, and the server's fresh inflater refuses it (1007).
  Conn c(server(true));
  c.send(frame(0xc1, hex({0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00})) +
         frame(0xc1, hex({0xf2, 0x00, 0x11, 0x00, 0x00})));
  expect_failed_with(c, 1007);
}

TEST(WebSocketDeflateCodec, AMessageCompressedByZlibInManyFragmentsWholeAndBytewise) {
  std::string text;
  for (int i = 0; i < 400; ++i)
    text += "line " + std::to_string(i) + ": \xce\xba\xe1\xbd\xb9\xcf\x83\xce\xbc\xce\xb5\n";
  for (const bool bytewise : {false, true}) {
    SCOPED_TRACE(bytewise ? "one byte at a time" : "whole");
    Zlib z;
    const std::string compressed = z.compress(text);
    ASSERT_LT(compressed.size(), text.size() / 4);
    // Fragments of 100 bytes: RSV1 on the first only.
    std::string wire;
    for (std::size_t i = 0; i < compressed.size(); i += 100) {
      const bool first = i == 0, last = i + 100 >= compressed.size();
      wire += frame(static_cast<std::uint8_t>((last ? 0x80 : 0) | (first ? 0x41 : 0x00)), compressed.substr(i, 100));
    }
    Conn c(server());
    c.send(wire, bytewise ? 1 : 0);
    std::vector<ws::Message> got = c.messages();
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].view(), text);
    // The next message on the same window, in one frame.
    c.send(frame(kCompressedText, z.compress(text)));
    got = c.messages();
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].view(), text);
  }
}

TEST(WebSocketDeflateCodec, Rsv1WhereItIsNotAllowedIsAProtocolError) {
  const std::string hello = hex({0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00});
  struct Bad {
    const char* name;
    bool deflate;
    std::string wire;
  };
  const std::vector<Bad> cases = {
      {"RSV1 without the extension", false, frame(kCompressedText, hello)},
      {"RSV1 on a continuation", true, frame(0x41, hello.substr(0, 3)) + frame(0xC0, hello.substr(3))},
      {"RSV1 on a continuation of an uncompressed message", true, frame(0x01, "a") + frame(0xC0, "b")},
      {"RSV1 on a ping", true, frame(0xC9, "p")},
      {"RSV1 on a close", true, frame(0xC8, hex({0x03, 0xe8}))},
      {"RSV2 with the extension", true, frame(0xA1, "x")},
      {"RSV3 with the extension", true, frame(0x91, "x")},
  };
  for (const Bad& b : cases) {
    for (const bool bytewise : {false, true}) {
      SCOPED_TRACE(std::string(b.name) + (bytewise ? " (one byte at a time)" : ""));
      Conn c(b.deflate ? std::optional(server()) : std::nullopt);
      c.send(b.wire, bytewise ? 1 : 0);
      expect_failed_with(c, 1002);
    }
  }
}

TEST(WebSocketDeflateCodec, AZipBombIsRefusedWith1009WithinTheBound) {
  // 100 MiB of zeros compress to about 100 KiB; the server's bound is 1 MiB.
  Zlib z(15, 9);
  const std::string mib(1 << 20, '\0');
  const std::string bomb = z.compress_chunks(mib, 100);
  ASSERT_LT(bomb.size(), std::size_t{200} << 10);
  for (const bool fragmented : {false, true}) {
    SCOPED_TRACE(fragmented ? "in 4 KiB fragments" : "in one frame");
    Conn c(server());
    std::string wire;
    if (!fragmented) {
      wire = frame(kCompressedBinary, bomb);
    } else {
      for (std::size_t i = 0; i < bomb.size(); i += 4096) {
        const bool first = i == 0, last = i + 4096 >= bomb.size();
        wire += frame(static_cast<std::uint8_t>((last ? 0x80 : 0) | (first ? 0x42 : 0x00)), bomb.substr(i, 4096));
      }
    }
    c.send(wire, 1024);
    expect_failed_with(c, 1009);
    // No buffer grew past the bound (the inflated message's, at most 1 MiB).
    EXPECT_LE(c.allocator.largest_capacity(), std::size_t{1} << 20);
  }
  // A message inflating to exactly the bound passes.
  ws::Options exact;
  exact.max_message_size = 4096;
  Conn c(server(), exact);
  c.send(frame(kCompressedBinary, Zlib().compress(std::string(4096, 'z'))));
  std::vector<ws::Message> got = c.messages();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].view(), std::string(4096, 'z'));
  c.send(frame(kCompressedBinary, Zlib().compress(std::string(4097, 'z'))));
  expect_failed_with(c, 1009);
}

TEST(WebSocketDeflateCodec, TextIsValidatedAfterInflatingAndBadDataIsRefused) {
  for (const bool bytewise : {false, true}) {
    SCOPED_TRACE(bytewise ? "one byte at a time" : "whole");
    {
      Conn c(server());
      c.send(frame(kCompressedText, Zlib().compress(std::string(300, 'a') + "\xed\xa0\x80")), bytewise ? 1 : 0);
      expect_failed_with(c, 1007);
    }
    {
      Conn c(server());  // ends inside a character
      c.send(frame(kCompressedText, Zlib().compress(std::string(300, 'a') + "\xe2\x82")), bytewise ? 1 : 0);
      expect_failed_with(c, 1007);
    }
    {
      Conn c(server());  // binary is not validated
      c.send(frame(kCompressedBinary, Zlib().compress("\xff\xfe")), bytewise ? 1 : 0);
      std::vector<ws::Message> got = c.messages();
      ASSERT_EQ(got.size(), 1u);
      EXPECT_EQ(got[0].view(), "\xff\xfe");
    }
    {
      Conn c(server());  // BTYPE 11 is reserved: not DEFLATE
      c.send(frame(kCompressedBinary, hex({0xff, 0xff, 0xff})), bytewise ? 1 : 0);
      expect_failed_with(c, 1007);
    }
  }
}

TEST(WebSocketDeflateCodec, OutgoingMessagesAreCompressedWithRsv1AndTheWindowShared) {
  std::string text;
  for (int i = 0; i < 100; ++i) text += "Hello, permessage-deflate! ";
  for (const bool no_context : {false, true}) {
    SCOPED_TRACE(no_context ? "server_no_context_takeover" : "context takeover");
    Conn c(server(false, no_context));
    c.write(ws::Message::text(text));
    c.write(ws::Message::text(text));
    c.write(ws::Message::binary(std::string_view("tiny")));  // would not shrink: sent as it is
    const std::vector<Sent> sent = c.written();
    ASSERT_EQ(sent.size(), 3u);
    EXPECT_EQ(sent[0].first, kCompressedText);
    EXPECT_EQ(sent[1].first, kCompressedText);
    EXPECT_EQ(sent[2].first, kBinary);
    EXPECT_EQ(sent[2].payload, "tiny");
    Zlib peer;  // the client's inflater, with the window kept across messages
    EXPECT_EQ(peer.inflate(sent[0].payload), text);
    EXPECT_EQ(peer.inflate(sent[1].payload), text);
    if (no_context) {
      EXPECT_EQ(sent[1].payload, sent[0].payload) << "each message compressed on its own";
    } else {
      EXPECT_LT(sent[1].payload.size(), sent[0].payload.size() / 2) << "the second refers to the first";
    }
  }
}

TEST(WebSocketDeflateCodec, SmallMessagesAndOnesThatWouldNotShrinkGoUncompressed) {
  PerMessageDeflate::Config config = server();
  config.min_message_size = 64;
  Conn c(config);
  c.write(ws::Message::text(std::string(63, 'a')));  // under the minimum
  std::string noise;
  std::uint32_t x = 12345;
  for (int i = 0; i < 5000; ++i) {
    x = x * 1103515245 + 12345;
    noise += static_cast<char>(x >> 24);
  }
  c.write(ws::Message::binary(noise));  // does not shrink
  c.write(ws::Message::text(std::string(2000, 'b')));
  const std::vector<Sent> sent = c.written();
  ASSERT_EQ(sent.size(), 3u);
  EXPECT_EQ(sent[0].first, kText);
  EXPECT_EQ(sent[1].first, kBinary);
  EXPECT_EQ(sent[1].payload, noise);
  EXPECT_EQ(sent[2].first, kCompressedText);
  // The compressor started over after the noise it threw away: a fresh inflater reads the third.
  EXPECT_EQ(Zlib().inflate(sent[2].payload), std::string(2000, 'b'));
}

TEST(WebSocketDeflateCodec, AnEightBitWindowIsHonouredBothWays) {
  PerMessageDeflate::Config config = server();
  config.inflate_window_bits = 8;
  config.deflate_window_bits = 8;
  Conn c(config);
  std::string text;
  for (int i = 0; i < 300; ++i) text += std::to_string(i * 7919 % 1000) + " ";
  c.write(ws::Message::text(text));
  c.write(ws::Message::text(text));
  const std::vector<Sent> sent = c.written();
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_EQ(sent[0].first, kCompressedText);
  // A peer whose window is 256 bytes inflates it (zlib's 9 never refers further back than 250).
  z_stream i{};
  ASSERT_EQ(inflateInit2(&i, -8), Z_OK);
  for (const Sent& s : sent) {
    std::string in = s.payload + hex({0, 0, 0xff, 0xff});
    std::string out(text.size() + 16, '\0');
    i.next_in = reinterpret_cast<Bytef*>(in.data());
    i.avail_in = static_cast<uInt>(in.size());
    i.next_out = reinterpret_cast<Bytef*>(out.data());
    i.avail_out = static_cast<uInt>(out.size());
    EXPECT_EQ(::inflate(&i, Z_SYNC_FLUSH), Z_OK);
    out.resize(out.size() - i.avail_out);
    EXPECT_EQ(out, text);
  }
  inflateEnd(&i);
  // And the server inflates a client's 8-bit window.
  c.send(frame(kCompressedText, Zlib(9).compress(text)));
  std::vector<ws::Message> got = c.messages();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].view(), text);
}

TEST(WebSocketDeflateCodec, ZlibStreamsAreMadeOnlyWhenACompressedMessageComesOrGoes) {
  test::CountingAllocator allocator;  // before the buffers: they go back to it
  PerMessageDeflate d(server());
  EXPECT_FALSE(d.has_inflater());
  EXPECT_FALSE(d.has_deflater());
  ByteBuf out;
  d.begin_message();
  EXPECT_EQ(d.inflate(hex({0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00}), out, 1024, allocator),
            PerMessageDeflate::InflateStatus::ok);
  EXPECT_EQ(d.end_message(out, 1024, allocator), PerMessageDeflate::InflateStatus::ok);
  EXPECT_EQ(out.view(), "Hello");
  EXPECT_TRUE(d.has_inflater());
  EXPECT_FALSE(d.has_deflater());
  ByteBuf frame = d.deflate(std::string(1000, 'x'), 10, allocator);
  EXPECT_TRUE(frame.has_storage());
  EXPECT_EQ(frame.reader_index(), 10u);
  EXPECT_TRUE(d.has_deflater());
}

TEST(WebSocketDeflateCodec, AConnectionThatEndsMidMessageLeavesNothingBehind) {
  // ASan's leak check covers zlib's state; the buffers must all have gone back.
  Zlib z;
  const std::string compressed = z.compress(std::string(100000, 'q'));
  {
    Conn c(server());
    c.write(ws::Message::text(std::string(5000, 'r')));                // the deflater is made
    c.send(frame(0x42, compressed.substr(0, compressed.size() / 2)));  // the first fragment only
    EXPECT_TRUE(c.messages().empty());
    c.written();
    c.ch.close();
    c.ch.run_pending();
    c.messages();
    c.ch.finish();
  }
}

// ---- the handshake through a router

TEST(WebSocketDeflateHandshake, TheRouteAnswersTheOfferAndTheHandlerHearsIt) {
  auto router = std::make_shared<http::Router>();
  ws::UpgradeOptions options;
  options.deflate.enabled = true;
  options.deflate.min_message_size = 1;
  std::optional<DeflateParameters> heard;
  bool opened = false;
  ws::websocket(*router, "/z",
                ws::Callbacks{.on_open =
                                  [&](Context&, const ws::Handshake& h) {
                                    opened = true;
                                    heard = h.deflate;
                                  },
                              .on_message = [](Context& ctx, ws::Message& m) { ctx.write_and_flush(std::move(m)); }},
                options);
  ws::websocket(*router, "/plain", ws::Callbacks{});
  for (const char* path : {"/z", "/plain"}) {
    SCOPED_TRACE(path);
    opened = false;
    heard.reset();
    test::CountingAllocator allocator;
    auto channel = std::make_shared<EmbeddedChannel>(ChannelConfig{}, allocator);  // the upgrade keeps it alive
    EmbeddedChannel& ch = *channel;
    ch.pipeline().add_last("http", std::make_shared<http::ServerCodec>());
    ch.pipeline().add_last("router", router);
    std::string text;
    for (int i = 0; i < 50; ++i) text += "echo me ";
    ch.write_inbound(ByteBuf::copy_of(
        std::string("GET ") + path +
        " HTTP/1.1\r\nHost: t\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
        "Sec-WebSocket-Extensions: x-webkit-deflate-frame, permessage-deflate; server_max_window_bits=9\r\n"
        "Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n\r\n" +
        frame(kCompressedText, hex({0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00})) + frame(kText, text)));
    ch.run_pending();
    std::string out;
    while (auto b = ch.read_outbound<ByteBuf>()) out += b->to_string();
    ASSERT_EQ(out.rfind("HTTP/1.1 101 ", 0), 0u) << out;
    const std::size_t end = out.find("\r\n\r\n");
    ASSERT_NE(end, std::string::npos);
    const std::string head = out.substr(0, end + 4);
    if (std::string_view(path) == "/plain") {
      EXPECT_EQ(head.find("Sec-WebSocket-Extensions"), std::string::npos) << head;
      EXPECT_FALSE(heard.has_value());
      // RSV1 without the extension: 1002.
      const std::vector<Sent> frames = parse_frames(out.substr(end + 4));
      ASSERT_EQ(frames.size(), 1u);
      EXPECT_EQ(frames[0].first, 0x88);
      EXPECT_EQ(frames[0].payload, hex({0x03, 0xea}));
      continue;
    }
    EXPECT_TRUE(opened) << out;
    EXPECT_NE(head.find("\r\nSec-WebSocket-Extensions: permessage-deflate; server_max_window_bits=9\r\n"),
              std::string::npos)
        << head;
    ASSERT_TRUE(heard.has_value());
    EXPECT_EQ(heard->server_max_window_bits, 9);
    // "Hello" inflated and echoed (too short to shrink: uncompressed); the longer text compressed.
    const std::vector<Sent> frames = parse_frames(out.substr(end + 4));
    ASSERT_EQ(frames.size(), 2u);
    EXPECT_EQ(frames[0].first, kText);
    EXPECT_EQ(frames[0].payload, "Hello");
    EXPECT_EQ(frames[1].first, kCompressedText);
    EXPECT_EQ(Zlib(9).inflate(frames[1].payload), text);
  }
}

// ---- streamed fragments (Options::stream_fragments)

ws::Options streaming(std::size_t max_message_size = 1 << 20) {
  ws::Options o;
  o.stream_fragments = true;
  o.max_message_size = max_message_size;
  return o;
}

// What a message handed on as fragments says: "first/last:payload" each.
std::vector<std::string> fragments(std::vector<ws::Message> got) {
  std::vector<std::string> out;
  for (ws::Message& m : got) {
    if (m.is_close()) {
      out.push_back("close " + std::to_string(m.close_code()));
      continue;
    }
    out.push_back(std::string(m.is_text() ? "t" : "b") + (m.is_first() ? "F" : "-") + (m.is_last() ? "L" : "-") + ":" +
                  std::string(m.view()));
  }
  return out;
}

TEST(WebSocketStreamedFragments, EachFrameIsHandedOnAsItArrivesWithControlFramesBetween) {
  const std::string wire =
      frame(0x01, "frag") + frame(0x89, "p") + frame(0x00, "men") + frame(0x80, "ted") + frame(0x82, "whole");
  for (const bool bytewise : {false, true}) {
    SCOPED_TRACE(bytewise ? "one byte at a time" : "whole");
    Conn c(std::nullopt, streaming());
    c.send(wire, bytewise ? 1 : 0);
    EXPECT_EQ(fragments(c.messages()), (std::vector<std::string>{"tF-:frag", "t--:men", "t-L:ted", "bFL:whole"}));
    const std::vector<Sent> sent = c.written();
    ASSERT_EQ(sent.size(), 1u);
    EXPECT_EQ(sent[0].first, 0x8A);  // the pong, between the fragments
  }
}

TEST(WebSocketStreamedFragments, AMessageLongerThanTheBoundPassesFrameByFrame) {
  // A bound of 64 bytes: five frames of 40 (200 bytes in all) pass; the bound applies to each frame.
  Conn c(std::nullopt, streaming(64));
  const std::string part(40, 'x');
  c.send(frame(0x02, part) + frame(0x00, part) + frame(0x00, part) + frame(0x00, part) + frame(0x80, part));
  const std::vector<std::string> got = fragments(c.messages());
  ASSERT_EQ(got.size(), 5u);
  EXPECT_EQ(got.front(), "bF-:" + part);
  EXPECT_EQ(got.back(), "b-L:" + part);
  // A frame over the bound is refused from its header.
  c.send(frame(0x82, std::string(65, 'y')));
  expect_failed_with(c, 1009);
}

TEST(WebSocketStreamedFragments, TextIsValidatedAcrossFragments) {
  // κ (ce ba) split between two fragments: each is handed on, the message is valid.
  Conn ok(std::nullopt, streaming());
  ok.send(frame(0x01, "a\xce") + frame(0x80, "\xba"));
  EXPECT_EQ(fragments(ok.messages()), (std::vector<std::string>{"tF-:a\xce", "t-L:\xba"}));
  // An invalid byte fails at once, before its fragment is handed on.
  Conn bad(std::nullopt, streaming());
  bad.send(frame(0x01, "ok") + frame(0x00, "\xff"));
  EXPECT_EQ(fragments(bad.messages()).front(), "tF-:ok");
  const std::vector<Sent> sent = bad.written();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].first, 0x88);
  EXPECT_EQ(sent[0].payload, hex({0x03, 0xef}));  // 1007
  // A message that ends inside a character: 1007 in place of its last fragment.
  Conn cut(std::nullopt, streaming());
  cut.send(frame(0x01, "a") + frame(0x80, "\xce"));
  expect_failed_with(cut, 1007);
}

TEST(WebSocketStreamedFragments, CompressedFramesAreInflatedEachWithinTheBound) {
  std::string text;
  for (int i = 0; i < 300; ++i) text += "line " + std::to_string(i) + ": streamed \xce\xba\n";
  Zlib z;
  const std::string compressed = z.compress(text);
  // Frames of 50 compressed bytes, RSV1 on the first only; each inflates to less than 4 KiB.
  std::string wire;
  for (std::size_t i = 0; i < compressed.size(); i += 50) {
    const bool first = i == 0, last = i + 50 >= compressed.size();
    wire += frame(static_cast<std::uint8_t>((last ? 0x80 : 0) | (first ? 0x41 : 0x00)), compressed.substr(i, 50));
  }
  for (const bool bytewise : {false, true}) {
    SCOPED_TRACE(bytewise ? "one byte at a time" : "whole");
    Conn c(server(), streaming(4096));
    c.send(wire, bytewise ? 1 : 0);
    std::string joined;
    std::vector<ws::Message> got = c.messages();
    ASSERT_GT(got.size(), 1u);
    for (const ws::Message& m : got) {
      EXPECT_TRUE(m.is_text());
      EXPECT_LE(m.view().size(), 4096u);
      joined += m.view();
    }
    EXPECT_TRUE(got.front().is_first());
    EXPECT_TRUE(got.back().is_last());
    EXPECT_EQ(joined, text);
  }
  // One frame that inflates past the bound: 1009, the inflated bytes never stored past it.
  Zlib bomb;
  Conn c(server(), streaming(4096));
  c.send(frame(0xC2, bomb.compress(std::string(100000, '\0'))));
  expect_failed_with(c, 1009);
}

TEST(WebSocketStreamedFragments, AMessageWrittenAsFragmentsLeavesInOrderUncompressed) {
  Conn c(server(), ws::Options{});  // permessage-deflate agreed: fragments still go uncompressed
  c.write(ws::Message::fragment(ws::Message::Kind::text, ByteBuf::copy_of(std::string(200, 'a')), true, false));
  c.write(ws::Message::fragment(ws::Message::Kind::text, ByteBuf::copy_of("b"), false, false));
  c.write(ws::Message::fragment(ws::Message::Kind::text, ByteBuf::copy_of("c"), false, true));
  c.write(ws::Message::text(std::string(200, 'd')));  // a whole message after: compressed as before
  const std::vector<Sent> sent = c.written();
  ASSERT_EQ(sent.size(), 4u);
  EXPECT_EQ(sent[0].first, 0x01);
  EXPECT_EQ(sent[0].payload, std::string(200, 'a'));
  EXPECT_EQ(sent[1].first, 0x00);
  EXPECT_EQ(sent[1].payload, "b");
  EXPECT_EQ(sent[2].first, 0x80);
  EXPECT_EQ(sent[2].payload, "c");
  EXPECT_EQ(sent[3].first, kCompressedText);
}

TEST(WebSocketStreamedFragments, FragmentsOutOfOrderAreRefused) {
  Conn c(std::nullopt, ws::Options{});
  // Each misuse is an exception event in the pipeline (write_message throws); nothing is sent.
  c.write(ws::Message::fragment(ws::Message::Kind::binary, ByteBuf::copy_of("x"), false, true));
  EXPECT_THROW(c.ch.check_exception(), std::logic_error);
  c.write(ws::Message::fragment(ws::Message::Kind::binary, ByteBuf::copy_of("a"), true, false));
  c.write(ws::Message::binary("whole"));
  EXPECT_THROW(c.ch.check_exception(), std::logic_error);
  c.write(ws::Message::fragment(ws::Message::Kind::binary, ByteBuf::copy_of("z"), false, true));
  const std::vector<Sent> sent = c.written();
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_EQ(sent[0].first, 0x02);
  EXPECT_EQ(sent[1].first, 0x80);
}

}  // namespace
}  // namespace weft::websocket_deflate_test
