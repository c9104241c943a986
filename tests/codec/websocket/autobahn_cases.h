#pragma once
// The WebSocket conformance cases, named after Autobahn|Testsuite's groups (1 framing, 2 ping/pong,
// 3 reserved bits, 4 opcodes, 5 fragmentation, 6 UTF-8, 7 close, 9 limits, 10 auto-fragmentation),
// with the raw frames they are made of. websocket_test.cc plays them as a client against weft's
// server; client_conformance_test.cc plays them mirrored, as a server against weft's client (its
// frames unmasked, and a masked one where the client's case sends an unmasked one).
//
// A case's path names the kind of endpoint under test: "/echo" echoes with callbacks, "/co" with a
// coroutine, "/small" echoes with small limits (small_limits()).

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "support/blocking_client.h"
#include "weft/channel/connection.h"
#include "weft/codec/websocket/codec.h"
#include "weft/core/task.h"

// The case table leaves its rarely used fields to their defaults.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace weft::websocket_cases {

// RFC 6455 section 1.3's example.
constexpr std::string_view kKey = "dGhlIHNhbXBsZSBub25jZQ==";
constexpr std::string_view kAccept = "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=";

// ---- frames as a client writes them (a server writes them unmasked: Frame::masked false)

struct Frame {
  std::uint8_t opcode = 1;
  std::string payload;
  bool fin = true;
  std::uint8_t rsv = 0;  // the three reserved bits, as 0..7
  bool masked = true;
  std::optional<std::uint64_t> declared;  // a length other than the payload's (sent truncated)
};

inline std::string bytes(const Frame& f) {
  std::string out;
  out += static_cast<char>((f.fin ? 0x80 : 0) | (f.rsv << 4) | f.opcode);
  const std::uint64_t n = f.declared.value_or(f.payload.size());
  const char mask_bit = f.masked ? static_cast<char>(0x80) : 0;
  if (n < 126) {
    out += static_cast<char>(mask_bit | static_cast<char>(n));
  } else if (n <= 0xFFFF) {
    out += static_cast<char>(mask_bit | 126);
    out += static_cast<char>(n >> 8);
    out += static_cast<char>(n & 0xFF);
  } else {
    out += static_cast<char>(mask_bit | 127);
    for (int shift = 56; shift >= 0; shift -= 8) out += static_cast<char>((n >> shift) & 0xFF);
  }
  const char key[4] = {0x37, static_cast<char>(0xfa), 0x21, 0x3d};
  if (f.masked) out.append(key, 4);
  for (std::size_t i = 0; i < f.payload.size(); ++i)
    out += f.masked ? static_cast<char>(f.payload[i] ^ key[i % 4]) : f.payload[i];
  return out;
}

inline Frame text(std::string s, bool fin = true) { return {1, std::move(s), fin}; }
inline Frame binary(std::string s, bool fin = true) { return {2, std::move(s), fin}; }
inline Frame cont(std::string s, bool fin = true) { return {0, std::move(s), fin}; }
inline Frame ping(std::string s) { return {9, std::move(s)}; }
inline Frame pong(std::string s) { return {10, std::move(s)}; }
inline std::string code_bytes(std::uint16_t code) {
  return {static_cast<char>(code >> 8), static_cast<char>(code & 0xFF)};
}
inline Frame close_frame(std::uint16_t code, std::string reason = {}) { return {8, code_bytes(code) + reason}; }

// ---- frames as the peer under test writes them

struct Reply {
  std::uint8_t opcode;
  std::string payload;
  bool operator==(const Reply&) const = default;
};

inline std::ostream& operator<<(std::ostream& os, const Reply& r) {
  return os << "{op " << int(r.opcode) << ", " << r.payload.size() << " bytes: " << r.payload.substr(0, 32) << "}";
}

// The next whole frame from the peer under test, which sends no fragments here: a server's frames
// must not be masked, a client's must be (`from_client`), and are unmasked here.
inline std::optional<Reply> read_reply(test::BlockingClient& c, bool from_client = false) {
  using namespace std::chrono_literals;
  auto head = c.recv_exact(2, 10000ms);
  if (!head) return std::nullopt;
  const auto b0 = static_cast<std::uint8_t>((*head)[0]);
  const auto b1 = static_cast<std::uint8_t>((*head)[1]);
  EXPECT_EQ(b0 & 0xF0, 0x80) << "FIN set, reserved bits clear";
  EXPECT_EQ(b1 & 0x80, from_client ? 0x80 : 0)
      << (from_client ? "a client's frames are masked" : "a server's frames are not masked");
  std::uint64_t n = b1 & 0x7F;
  if (n >= 126) {
    auto ext = c.recv_exact(n == 126 ? 2 : 8, 10000ms);
    if (!ext) return std::nullopt;
    n = 0;
    for (char ch : *ext) n = (n << 8) | static_cast<std::uint8_t>(ch);
  }
  std::string key;
  if (b1 & 0x80) {
    auto k = c.recv_exact(4, 10000ms);
    if (!k) return std::nullopt;
    key = *k;
  }
  auto payload = n == 0 ? std::optional<std::string>("") : c.recv_exact(static_cast<std::size_t>(n), 10000ms);
  if (!payload) return std::nullopt;
  if (!key.empty()) {
    for (std::size_t i = 0; i < payload->size(); ++i) (*payload)[i] = static_cast<char>((*payload)[i] ^ key[i % 4]);
  }
  return Reply{static_cast<std::uint8_t>(b0 & 0x0F), std::move(*payload)};
}

inline Reply close_reply(std::uint16_t code) { return {8, code_bytes(code)}; }

// The "/co" endpoint: a coroutine that echoes every message (or fragment) until the close.
inline Task<> echo_coroutine(Connection<ws::Message>& c) {
  for (;;) {
    ws::Message m = co_await c.read();
    if (m.is_close()) co_return;
    co_await c.write(std::move(m));
    c.flush();
  }
}

// The limits of "/small": a message of at most 64 bytes in at most 4 frames.
inline ws::Options small_limits() {
  ws::Options options;
  options.max_message_size = 64;
  options.max_fragments = 4;
  return options;
}

// A case: frames the client sends, the frames it gets back, then (close != 0) the server's close
// with that code and the end of the connection; close == 0: the connection is still open (the
// client closes with 1000 and gets 1000 back).
struct Case {
  const char* name;
  const char* path;
  std::vector<Frame> send;
  std::vector<Reply> expect;
  std::uint16_t close = 0;
  bool bytewise = true;  // also sent one byte at a time
};

inline std::string utf8_sample() { return "\xce\xba\xe1\xbd\xb9\xcf\x83\xce\xbc\xce\xb5"; }  // κόσμε

inline std::vector<Case> cases() {
  const std::string k125(125, 'x'), k126(126, 'y'), k64k(65536, 'z');
  Frame unmasked = text("hi");
  unmasked.masked = false;
  Frame rsv1 = text("hi");
  rsv1.rsv = 1;
  Frame rsv7ping = ping("");
  rsv7ping.rsv = 7;
  Frame op3{3, "x"}, op11{11, "x"};
  Frame ping126 = ping(k126);
  Frame frag_ping = ping("p");
  frag_ping.fin = false;
  Frame top_bit = binary("");
  top_bit.declared = std::uint64_t{1} << 63;
  // Fail fast: a text frame that declares 100 bytes and has sent only its first 8, invalid at the 5th.
  Frame cut_invalid = text(
      "abcd\xff"
      "efg");
  cut_invalid.declared = 100;
  Frame over_limit = binary("");
  over_limit.declared = 65;  // /small's limit is 64: refused from the header, no payload sent
  const std::string sample = utf8_sample();
  // Autobahn 10.1.1: 64 KiB of text auto-fragmented into 1,300-byte frames (51 of them).
  std::vector<Frame> auto_fragmented;
  for (std::size_t at = 0; at < k64k.size(); at += 1300) {
    const bool last = at + 1300 >= k64k.size();
    auto_fragmented.push_back(at == 0 ? text(k64k.substr(at, 1300), false) : cont(k64k.substr(at, 1300), last));
  }
  return {
      {"1_1_1_EmptyText", "/echo", {text("")}, {{1, ""}}},
      {"1_1_2_Text125", "/echo", {text(k125)}, {{1, k125}}},
      {"1_1_3_Text126_16BitLength", "/echo", {text(k126)}, {{1, k126}}},
      {"1_1_6_Text64KiB_64BitLength", "/echo", {text(k64k)}, {{1, k64k}}, 0, false},
      {"1_2_1_EmptyBinary", "/echo", {binary("")}, {{2, ""}}},
      {"1_2_3_Binary126", "/echo", {binary(k126)}, {{2, k126}}},
      {"1_2_6_Binary64KiB", "/co", {binary(k64k)}, {{2, k64k}}, 0, false},
      {"1_UnmaskedClientFrame", "/echo", {unmasked}, {}, 1002},
      {"1_64BitLengthTopBit", "/echo", {top_bit}, {}, 1002},
      {"2_1_EmptyPing", "/echo", {ping("")}, {{10, ""}}},
      {"2_2_PingWithPayload", "/echo", {ping("hello")}, {{10, "hello"}}},
      {"2_4_Ping125", "/echo", {ping(k125)}, {{10, k125}}},
      {"2_5_Ping126", "/echo", {ping126}, {}, 1002},
      {"2_7_UnsolicitedPongIgnored", "/echo", {pong("x"), text("after")}, {{1, "after"}}},
      {"2_10_PingsEachAnswered", "/co", {ping("1"), ping("2"), ping("3")}, {{10, "1"}, {10, "2"}, {10, "3"}}},
      {"3_1_Rsv1", "/echo", {rsv1}, {}, 1002},
      {"3_7_Rsv7OnPing", "/echo", {rsv7ping}, {}, 1002},
      {"3_2_Rsv1AfterAnEcho", "/echo", {text("ok"), rsv1}, {{1, "ok"}}, 1002},
      {"4_1_1_ReservedDataOpcode3", "/echo", {op3}, {}, 1002},
      {"4_2_1_ReservedControlOpcode11", "/echo", {op11}, {}, 1002},
      {"5_1_FragmentedPing", "/echo", {frag_ping}, {}, 1002},
      {"5_3_TextInTwoFragments", "/echo", {text("frag", false), cont("ment")}, {{1, "fragment"}}},
      {"5_6_PingBetweenFragments",
       "/co",
       {text("a", false), ping("p"), cont("b", false), cont("c")},
       {{10, "p"}, {1, "abc"}}},
      {"5_9_ContinuationWithoutMessage", "/echo", {cont("x")}, {}, 1002},
      {"5_18_NewMessageInsideFragmented", "/echo", {text("a", false), text("b")}, {}, 1002},
      {"5_EmptyFragments", "/echo", {binary("", false), cont("", false), cont("z")}, {{2, "z"}}},
      {"6_2_MultiByteSplitAcrossFragments",
       "/echo",
       {text(sample.substr(0, 3), false), cont(sample.substr(3))},
       {{1, sample}}},
      {"6_3_1_InvalidInOneFrame", "/echo", {text("a\xc0\xaf")}, {}, 1007},
      {"6_4_1_FailFastInFirstFragment", "/echo", {text("ok\xed\xa0\x80", false)}, {}, 1007},
      {"6_4_3_FailFastInsideAFrame", "/echo", {cut_invalid}, {}, 1007},
      {"6_TruncatedAtMessageEnd", "/echo", {text("ab\xe2\x82")}, {}, 1007},
      {"6_AboveU10FFFF", "/echo", {text("\xf4\x90\x80\x80")}, {}, 1007},
      {"6_InvalidInContinuation", "/co", {text("ok", false), cont("\xff")}, {}, 1007},
      {"7_1_1_CloseNormal", "/echo", {close_frame(1000)}, {close_reply(1000)}},
      {"7_1_3_DataAfterCloseIgnored", "/echo", {close_frame(1000), text("late")}, {close_reply(1000)}},
      {"7_3_1_EmptyClose", "/echo", {{8, ""}}, {{8, ""}}},
      {"7_3_2_OneByteClose", "/echo", {{8, "x"}}, {}, 1002},
      {"7_3_4_CloseWithReason", "/echo", {close_frame(1001, "bye")}, {close_reply(1001)}},
      {"7_5_1_ReasonNotUtf8", "/echo", {close_frame(1000, "\xce")}, {}, 1007},
      {"7_7_Code3000", "/co", {close_frame(3000)}, {close_reply(3000)}},
      {"7_7_Code4999", "/echo", {close_frame(4999)}, {close_reply(4999)}},
      {"7_9_Code1005", "/echo", {close_frame(1005)}, {}, 1002},
      {"7_9_Code999", "/echo", {close_frame(999)}, {}, 1002},
      {"7_9_Code1004", "/echo", {close_frame(1004)}, {}, 1002},
      {"7_9_Code5000", "/echo", {close_frame(5000)}, {}, 1002},
      {"9_MessageOverLimitFromTheHeader", "/small", {over_limit}, {}, 1009},
      {"9_FragmentsOverTheMessageLimit",
       "/small",
       {binary(std::string(40, 'a'), false), cont(std::string(40, 'b'))},
       {},
       1009},
      {"9_TooManyFragments",
       "/small",
       {binary("1", false), cont("2", false), cont("3", false), cont("4", false), cont("5")},
       {},
       1009},
      {"9_AtTheLimits",
       "/small",
       {binary(std::string(16, 'a'), false), cont(std::string(16, 'b'), false), cont(std::string(16, 'c'), false),
        cont(std::string(16, 'd'))},
       {{2, std::string(16, 'a') + std::string(16, 'b') + std::string(16, 'c') + std::string(16, 'd')}}},
      {"10_1_1_Text64KiBIn1300ByteFragments", "/co", auto_fragmented, {{1, k64k}}, 0, false},
  };
}

}  // namespace weft::websocket_cases
