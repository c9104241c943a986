// gRPC message compression and binary metadata (weft/grpc/compression.h, metadata.h): the
// codecs' round trips and wire formats, the decompression bound (a zip bomb is refused with its
// memory bounded), the decompressing deframer's statuses, base64 both ways, the metadata checks;
// then the server (an nghttp2 client against the codec in an EmbeddedChannel): compressed requests,
// responses compressed only when the client accepts the encoding, grpc-accept-encoding on every
// head, UNIMPLEMENTED / INTERNAL, -bin metadata in and out, keys refused at the API.

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "buffer/counting_allocator.h"
#include "support/h2_client.h"
#include "weft/channel/embedded_channel.h"
#include "weft/grpc/compression.h"
#include "weft/grpc/metadata.h"
#include "weft/grpc/service_registry.h"
#include "weft/codec/http2/server_codec.h"

namespace weft::grpc {
namespace {

using test::H2Client;
using test::H2Response;
using Headers = std::vector<std::pair<std::string, std::string>>;

std::string patterned(std::size_t n) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>('a' + i % 23);
  return s;
}

std::string random_bytes(std::size_t n) {
  std::mt19937 rng(42);
  std::string s(n, '\0');
  for (auto& ch : s) ch = static_cast<char>(rng());
  return s;
}

std::string frame(std::string_view message, std::uint8_t flag = 0) {
  std::string out(5, '\0');
  out[0] = static_cast<char>(flag);
  const auto n = static_cast<std::uint32_t>(message.size());
  out[1] = static_cast<char>(n >> 24);
  out[2] = static_cast<char>(n >> 16);
  out[3] = static_cast<char>(n >> 8);
  out[4] = static_cast<char>(n);
  out.append(message);
  return out;
}

// A message compressed with weft's codec, framed (flag 1 unless it did not shrink).
std::string compressed_frame(std::string_view message, Compression c, std::size_t min_bytes = 0) {
  return frame_compressed(ByteBuf::copy_of(message), CompressionOptions(c, -1, min_bytes)).to_string();
}

// The bytes of a compressed frame's message (no prefix).
std::string payload_of(const std::string& framed) { return framed.substr(5); }

std::optional<std::string> inflate_with(std::string_view bytes, Compression c, std::size_t max, Status* status = nullptr) {
  ByteBuf out;
  Status s = decompress(ByteBuf::copy_of(bytes), c, max, out);
  if (status != nullptr) *status = s;
  if (!s.ok()) return std::nullopt;
  return out.to_string();
}

// ---- codecs

TEST(GrpcCompression, EveryCodecRoundTripsAtEveryLevel) {
  const std::vector<std::string> messages = {"x", patterned(255), patterned(256), patterned(100'000),
                                             std::string(70'000, '\0')};
  for (const Compression c : {Compression::deflate, Compression::gzip}) {
    for (const int level : {-1, 0, 1, 9}) {
      for (const auto& m : messages) {
        const std::string framed =
            frame_compressed(ByteBuf::copy_of(m), CompressionOptions(c, level, 0)).to_string();
        ASSERT_GE(framed.size(), 5u);
        const std::string body = payload_of(framed);
        EXPECT_EQ(framed.substr(1, 4), frame(body).substr(1, 4)) << "the prefix's length is the compressed size";
        if (framed[0] == 0) {
          EXPECT_EQ(body, m) << "an uncompressed fallback carries the message as it is";
          continue;
        }
        EXPECT_LT(body.size(), m.size());
        EXPECT_EQ(inflate_with(body, c, m.size()), m) << compression_name(c) << " level " << level;
      }
    }
  }
  // Identity frames as frame_message does.
  EXPECT_EQ(compressed_frame(patterned(1000), Compression::identity), frame(patterned(1000)));
  EXPECT_EQ(inflate_with("as is", Compression::identity, 5), "as is");
}

TEST(GrpcCompression, TheWireFormatsAreGzipAndZlib) {
  const std::string gzip = payload_of(compressed_frame(patterned(1000), Compression::gzip));
  ASSERT_GE(gzip.size(), 2u);
  EXPECT_EQ(static_cast<unsigned char>(gzip[0]), 0x1F);  // RFC 1952's magic
  EXPECT_EQ(static_cast<unsigned char>(gzip[1]), 0x8B);
  const std::string zlib = payload_of(compressed_frame(patterned(1000), Compression::deflate));
  ASSERT_GE(zlib.size(), 2u);
  EXPECT_EQ(static_cast<unsigned char>(zlib[0]) & 0x0F, 8);  // RFC 1950: CM = 8 (deflate)
  EXPECT_EQ(((static_cast<unsigned char>(zlib[0]) << 8) | static_cast<unsigned char>(zlib[1])) % 31, 0);
  // Each decoder refuses the other's format.
  EXPECT_FALSE(inflate_with(gzip, Compression::deflate, 4096));
  EXPECT_FALSE(inflate_with(zlib, Compression::gzip, 4096));
}

TEST(GrpcCompression, SmallAndIncompressibleMessagesAreSentUncompressed) {
  // Below min_bytes: flag 0.
  EXPECT_EQ(frame_compressed(ByteBuf::copy_of(patterned(99)), CompressionOptions(Compression::gzip, -1, 100)).to_string(),
            frame(patterned(99)));
  EXPECT_EQ(frame_compressed(ByteBuf::copy_of(patterned(100)), CompressionOptions(Compression::gzip, -1, 100))
                .to_string()[0],
            1);
  // The default minimum.
  EXPECT_EQ(compressed_frame(patterned(kDefaultMinCompressBytes - 1), Compression::gzip, kDefaultMinCompressBytes),
            frame(patterned(kDefaultMinCompressBytes - 1)));
  // Random bytes do not shrink: flag 0, the bytes as they are.
  const std::string noise = random_bytes(4096);
  EXPECT_EQ(compressed_frame(noise, Compression::gzip), frame(noise));
  EXPECT_EQ(compressed_frame("", Compression::deflate), frame(""));
  EXPECT_THROW(frame_compressed(ByteBuf::copy_of("x"), CompressionOptions(Compression::gzip, 10, 0)),
               std::invalid_argument);
}

TEST(GrpcCompression, AZipBombIsRefusedWithItsMemoryBounded) {
  // 1 MiB of zeros deflates to about 1 KB; under a 64 KiB bound inflating stops at the bound.
  const std::string bomb = payload_of(compressed_frame(std::string(1 << 20, '\0'), Compression::gzip));
  ASSERT_LE(bomb.size(), 1100u);
  for (const std::size_t bound : {std::size_t{64} << 10, std::size_t{4} << 20 >> 3}) {
    test::CountingAllocator allocator;
    ByteBuf out;
    const Status s = decompress(ByteBuf::copy_of(bomb), Compression::gzip, bound, out, allocator);
    EXPECT_EQ(s.code, StatusCode::resource_exhausted) << s.message;
    EXPECT_FALSE(out.is_readable());
    EXPECT_LE(allocator.largest_capacity(), bound) << "never more than the bound is held";
    EXPECT_EQ(allocator.live(), 0u);
  }
  // The default bound (4 MiB) against 16 MiB that arrive as 16 KB.
  const std::string big_bomb = payload_of(compressed_frame(std::string(16 << 20, '\0'), Compression::deflate));
  ASSERT_LE(big_bomb.size(), 20'000u);
  test::CountingAllocator allocator;
  ByteBuf out;
  EXPECT_EQ(decompress(ByteBuf::copy_of(big_bomb), Compression::deflate, kDefaultMaxMessageBytes, out, allocator).code,
            StatusCode::resource_exhausted);
  EXPECT_LE(allocator.largest_capacity(), kDefaultMaxMessageBytes);
}

TEST(GrpcCompression, AMessageThatInflatesToTheBoundPassesAndOneByteMoreDoesNot) {
  const std::string at = patterned(50'000);
  EXPECT_EQ(inflate_with(payload_of(compressed_frame(at, Compression::gzip)), Compression::gzip, 50'000), at);
  Status s;
  EXPECT_FALSE(inflate_with(payload_of(compressed_frame(at + "z", Compression::gzip)), Compression::gzip, 50'000, &s));
  EXPECT_EQ(s.code, StatusCode::resource_exhausted);
  EXPECT_FALSE(inflate_with("as is", Compression::identity, 4, &s));
  EXPECT_EQ(s.code, StatusCode::resource_exhausted);
}

TEST(GrpcCompression, CorruptTruncatedOrTrailingBytesAreInternal) {
  const std::string good = payload_of(compressed_frame(patterned(5000), Compression::gzip));
  Status s;
  EXPECT_FALSE(inflate_with(good.substr(0, good.size() - 6), Compression::gzip, 1 << 20, &s));
  EXPECT_EQ(s.code, StatusCode::internal) << "truncated";
  EXPECT_FALSE(inflate_with(good + "xx", Compression::gzip, 1 << 20, &s));
  EXPECT_EQ(s.code, StatusCode::internal) << "trailing bytes";
  std::string corrupt = good;
  corrupt[good.size() / 2] ^= 0x55;
  corrupt[good.size() - 3] ^= 0x55;  // the CRC too, if the bit flip left a valid stream
  EXPECT_FALSE(inflate_with(corrupt, Compression::gzip, 1 << 20, &s));
  EXPECT_EQ(s.code, StatusCode::internal) << "corrupt";
  EXPECT_FALSE(inflate_with("", Compression::deflate, 1 << 20, &s));
  EXPECT_EQ(s.code, StatusCode::internal) << "empty";
  EXPECT_FALSE(inflate_with("not zlib at all", Compression::deflate, 1 << 20, &s));
  EXPECT_EQ(s.code, StatusCode::internal);
}

TEST(GrpcCompression, NamesAndAcceptEncodingLists) {
  EXPECT_EQ(parse_compression("gzip"), Compression::gzip);
  EXPECT_EQ(parse_compression("GZip"), Compression::gzip);
  EXPECT_EQ(parse_compression("deflate"), Compression::deflate);
  EXPECT_EQ(parse_compression("identity"), Compression::identity);
  EXPECT_FALSE(parse_compression("snappy"));
  EXPECT_FALSE(parse_compression(""));
  EXPECT_TRUE(accepts_compression("identity,deflate,gzip", Compression::gzip));
  EXPECT_TRUE(accepts_compression("identity, gzip ", Compression::gzip));
  EXPECT_FALSE(accepts_compression("identity,deflate", Compression::gzip));
  EXPECT_FALSE(accepts_compression("", Compression::deflate));
  EXPECT_FALSE(accepts_compression("gzipx", Compression::gzip));
  EXPECT_TRUE(accepts_compression("", Compression::identity));
  EXPECT_EQ(kAcceptEncoding, "identity,deflate,gzip");
}

// ---- the decompressing deframer

std::vector<std::string> drain(DecompressingDeframer& d) {
  std::vector<std::string> out;
  while (auto m = d.next()) out.push_back(m->to_string());
  return out;
}

TEST(GrpcCompression, TheDeframerDecompressesMixedMessagesCutAtEveryByte) {
  const std::string big = patterned(3000);
  const std::string body = compressed_frame(big, Compression::gzip) + frame("plain") +
                           compressed_frame(patterned(400), Compression::gzip) + frame("");
  ASSERT_EQ(body[0], 1);
  for (std::size_t cut = 0; cut <= body.size(); ++cut) {
    DecompressingDeframer d(kDefaultMaxMessageBytes, "gzip");
    d.feed(ByteBuf::copy_of(body.substr(0, cut)));
    std::vector<std::string> got = drain(d);
    d.feed(ByteBuf::copy_of(body.substr(cut)));
    for (auto& m : drain(d)) got.push_back(std::move(m));
    ASSERT_FALSE(d.error()) << "cut at " << cut;
    EXPECT_FALSE(d.has_partial());
    EXPECT_EQ(got, (std::vector<std::string>{big, "plain", patterned(400), ""})) << "cut at " << cut;
  }
}

// What the interop suite's compression cases read (ServerCall/ClientCall::last_read_compressed()).
TEST(GrpcCompression, TheDeframerSaysWhetherTheLastMessageCameCompressed) {
  DecompressingDeframer d(kDefaultMaxMessageBytes, "gzip");
  EXPECT_FALSE(d.last_compressed());
  d.feed(ByteBuf::copy_of(compressed_frame(patterned(400), Compression::gzip) + frame("plain") +
                          compressed_frame(patterned(300), Compression::gzip)));
  EXPECT_EQ(d.next()->to_string(), patterned(400));
  EXPECT_TRUE(d.last_compressed());
  EXPECT_EQ(d.next()->to_string(), "plain");
  EXPECT_FALSE(d.last_compressed());
  EXPECT_EQ(d.next()->to_string(), patterned(300));
  EXPECT_TRUE(d.last_compressed());
  EXPECT_FALSE(d.next());
  EXPECT_TRUE(d.last_compressed());  // the last message given, not an attempt that gave none
}

TEST(GrpcCompression, TheDeframersStatuses) {
  {  // a compressed flag with no encoding, or identity: INTERNAL
    for (const std::string_view encoding : {"", "identity"}) {
      DecompressingDeframer d(1024, encoding);
      d.feed(ByteBuf::copy_of(compressed_frame(patterned(500), Compression::gzip)));
      EXPECT_FALSE(d.next());
      ASSERT_TRUE(d.error());
      EXPECT_EQ(d.error()->code, StatusCode::internal);
    }
  }
  {  // an encoding weft lacks: UNIMPLEMENTED for a compressed message; plain ones pass
    DecompressingDeframer d(1024, "snappy");
    EXPECT_TRUE(d.unknown_encoding());
    d.feed(ByteBuf::copy_of(frame("plain") + frame("zz", 1)));
    EXPECT_EQ(d.next()->to_string(), "plain");
    EXPECT_FALSE(d.next());
    ASSERT_TRUE(d.error());
    EXPECT_EQ(d.error()->code, StatusCode::unimplemented);
    EXPECT_NE(d.error()->message.find("snappy"), std::string::npos);
  }
  {  // past the bound after decompression: RESOURCE_EXHAUSTED
    DecompressingDeframer d(1000, "deflate");
    EXPECT_EQ(d.encoding(), Compression::deflate);
    d.feed(ByteBuf::copy_of(compressed_frame(patterned(1001), Compression::deflate)));
    EXPECT_FALSE(d.next());
    ASSERT_TRUE(d.error());
    EXPECT_EQ(d.error()->code, StatusCode::resource_exhausted);
  }
  {  // bytes that are not gzip under gzip: INTERNAL
    DecompressingDeframer d(1000, "gzip");
    d.feed(ByteBuf::copy_of(frame("zz", 1)));
    EXPECT_FALSE(d.next());
    ASSERT_TRUE(d.error());
    EXPECT_EQ(d.error()->code, StatusCode::internal);
  }
  {  // a flag other than 0 and 1 stays INTERNAL
    DecompressingDeframer d(1000, "gzip");
    d.feed(ByteBuf::copy_of(frame("zz", 2)));
    EXPECT_FALSE(d.next());
    ASSERT_TRUE(d.error());
    EXPECT_EQ(d.error()->code, StatusCode::internal);
  }
}

// ---- metadata

TEST(GrpcMetadata, Base64IsSentUnpaddedAndTakenEitherWay) {
  // RFC 4648's test vectors, unpadded.
  const std::vector<std::pair<std::string, std::string>> vectors = {
      {"", ""}, {"f", "Zg"}, {"fo", "Zm8"}, {"foo", "Zm9v"}, {"foob", "Zm9vYg"}, {"fooba", "Zm9vYmE"}, {"foobar", "Zm9vYmFy"}};
  for (const auto& [bytes, text] : vectors) {
    EXPECT_EQ(base64_encode(bytes), text);
    EXPECT_EQ(base64_decode(text), bytes) << text;
    std::string padded = text;
    while (padded.size() % 4 != 0) padded += '=';
    EXPECT_EQ(base64_decode(padded), bytes) << padded;
  }
  std::string all;
  for (int i = 0; i < 256; ++i) all.push_back(static_cast<char>(i));
  EXPECT_EQ(base64_decode(base64_encode(all)), all);
  EXPECT_EQ(base64_encode("\xFB\xFF"), "+/8");
  for (const std::string_view bad : {"Z", "Zm9vY", "Zg=", "Z===", "Zm=v", "Zm9v!", "Zm 9v", "Zg==="}) {
    EXPECT_FALSE(base64_decode(bad)) << bad;
  }
}

TEST(GrpcMetadata, KeysAndValuesTheApplicationAddsAreChecked) {
  EXPECT_NO_THROW(check_metadata("x-custom_key.1", "printable value ~"));
  EXPECT_NO_THROW(check_metadata("trace-bin", std::string("\0\xFF\n", 3)));
  for (const std::string_view key : {"", "X-Upper", "has space", "colon:", ":path", "ümlaut"}) {
    EXPECT_THROW(check_metadata(key, "v"), InvalidMetadata) << key;
  }
  for (const std::string_view key : {"grpc-status", "grpc-message", "grpc-encoding", "grpc-custom", "content-type",
                                     "te", "user-agent", "connection", "transfer-encoding"}) {
    EXPECT_THROW(check_metadata(key, "v"), InvalidMetadata) << key;
  }
  EXPECT_THROW(check_metadata("x-ascii", "line\nbreak"), InvalidMetadata);
  EXPECT_THROW(check_metadata("x-ascii", std::string("\0", 1)), InvalidMetadata);
  EXPECT_THROW(check_metadata("x-ascii", "\x7F"), InvalidMetadata);
  EXPECT_EQ(encode_metadata_value("x-bin", "fo"), "Zm8");
  EXPECT_EQ(encode_metadata_value("x-ascii", "fo"), "fo");
  EXPECT_EQ(decode_metadata_values("x-bin", "Zm8=, Zm9v"), (std::vector<std::string>{"fo", "foo"}));
  EXPECT_EQ(decode_metadata_values("x-ascii", "a,b"), (std::vector<std::string>{"a,b"}));
  EXPECT_FALSE(decode_metadata_values("x-bin", "Zm8,!"));
}

// ---- the server

struct Seen {
  std::optional<std::string> request;         // the message the handler read
  std::optional<std::string> trace;           // metadata("trace-bin")
  std::vector<std::string> traces;            // metadata_values("trace-bin")
  std::optional<std::string> ascii;           // metadata("x-ascii")
  std::vector<std::string> refused;           // what add_response_header / add_trailing_metadata refused
  Compression encoding = Compression::identity;
};

struct Server {
  explicit Server(ServerOptions options = {}) : seen(std::make_shared<Seen>()) {
    ServiceRegistry services(options);
    std::shared_ptr<Seen> s = seen;
    // Echoes the request; a request "compress:<algo>" sets the call's compression first.
    services.add("/test.Echo/Unary", [s](ServerCall& call) -> Task<> {
      std::optional<ByteBuf> request = co_await call.read();
      s->request = request->to_string();
      if (s->request->rfind("compress:deflate", 0) == 0) call.set_compression(CompressionOptions(Compression::deflate, 9, 0));
      co_await call.write(std::move(*request));
      s->encoding = call.response_encoding();
    });
    services.add("/test.Echo/Metadata", [s](ServerCall& call) -> Task<> {
      s->trace = call.metadata("trace-bin");
      s->traces = call.metadata_values("trace-bin");
      s->ascii = call.metadata("x-ascii");
      for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
               {"Upper-Case", "v"}, {"grpc-status", "0"}, {"grpc-message", "x"}, {"content-type", "text/plain"},
               {"x-ascii", "new\nline"}, {"bad key", "v"}}) {
        try {
          call.add_response_header(key, value);
        } catch (const InvalidMetadata&) {
          s->refused.push_back("head " + key);
        }
        try {
          call.add_trailing_metadata(key, value);
        } catch (const InvalidMetadata&) {
          s->refused.push_back("trailer " + key);
        }
      }
      call.add_response_header("echo-bin", s->trace.value_or(""));
      call.add_response_header("x-plain", "text");
      call.add_trailing_metadata("trailer-bin", std::string("\x00\x01\x02\xFE", 4));
      call.add_trailing_metadata("x-trailer", "done");
      co_await call.write(ByteBuf::copy_of("ok"));
    });
    http2::Settings settings;
    settings.stream_initializer = services.stream_chooser();
    ch.pipeline().add_last("http2", std::make_shared<http2::ServerCodec>(std::move(settings)));
  }
  void pump() {
    for (int round = 0; round < 100'000; ++round) {
      const std::string out = client.take_output();
      if (!out.empty() && ch.is_open()) ch.write_inbound(ByteBuf::copy_of(out));
      ch.run_pending();
      std::string in;
      while (auto b = ch.read_outbound<ByteBuf>()) in += b->to_string();
      if (!in.empty()) client.receive(in);
      if (out.empty() && in.empty()) return;
    }
    FAIL() << "the exchange did not settle";
  }
  H2Response call(const std::string& path, const std::string& body, Headers extra = {}) {
    Headers h = {{"content-type", "application/grpc"}, {"te", "trailers"}};
    for (auto& f : extra) h.push_back(std::move(f));
    const auto id = client.request_streamed("POST", path, h);
    client.send(id, body);
    client.finish(id);
    pump();
    return client.response(id);
  }

  EmbeddedChannel ch;
  std::shared_ptr<Seen> seen;
  H2Client client;
};

std::optional<std::string> field(const Headers& fields, std::string_view name) {
  for (const auto& [n, v] : fields) {
    if (n == name) return v;
  }
  return std::nullopt;
}
std::optional<std::string> grpc_status(const H2Response& r) {
  if (auto s = field(r.trailers, "grpc-status")) return s;
  return r.header("grpc-status");
}

TEST(GrpcServerCompression, CompressedRequestsAreDecompressedBeforeTheHandler) {
  for (const Compression c : {Compression::gzip, Compression::deflate}) {
    Server server;
    const std::string message = patterned(20'000);
    const std::string body = compressed_frame(message, c);
    ASSERT_EQ(body[0], 1);
    const H2Response r =
        server.call("/test.Echo/Unary", body, {{"grpc-encoding", std::string(compression_name(c))}});
    EXPECT_EQ(grpc_status(r), "0") << compression_name(c);
    EXPECT_EQ(server.seen->request, message);
    // Not configured to compress: the response is plain, and says what the server accepts.
    EXPECT_EQ(r.body, frame(message));
    EXPECT_FALSE(r.header("grpc-encoding"));
    EXPECT_EQ(r.header("grpc-accept-encoding"), "identity,deflate,gzip");
  }
}

TEST(GrpcServerCompression, AZipBombIsResourceExhausted) {
  ServerOptions options;
  options.max_receive_message_bytes = 64 * 1024;
  Server server(options);
  const std::string bomb = compressed_frame(std::string(1 << 20, '\0'), Compression::gzip);
  ASSERT_LE(bomb.size(), 1100u);
  const H2Response r = server.call("/test.Echo/Unary", bomb, {{"grpc-encoding", "gzip"}});
  EXPECT_EQ(grpc_status(r), "8");
  EXPECT_FALSE(server.seen->request);
}

TEST(GrpcServerCompression, AnUnknownEncodingIsUnimplementedWithTheAcceptedList) {
  Server server;
  const H2Response r = server.call("/test.Echo/Unary", frame("zz", 1), {{"grpc-encoding", "snappy"}});
  EXPECT_EQ(grpc_status(r), "12");
  EXPECT_EQ(r.header("grpc-accept-encoding"), "identity,deflate,gzip");  // in the Trailers-Only head
}

TEST(GrpcServerCompression, ACompressedFlagWithoutAnEncodingIsInternal) {
  Server server;
  const std::string body = compressed_frame(patterned(1000), Compression::gzip);
  EXPECT_EQ(grpc_status(server.call("/test.Echo/Unary", body)), "13");
  EXPECT_EQ(grpc_status(server.call("/test.Echo/Unary", body, {{"grpc-encoding", "identity"}})), "13");
}

TEST(GrpcServerCompression, TheResponseIsCompressedOnlyWhenTheClientAcceptsIt) {
  ServerOptions options;
  options.response_compression = CompressionOptions(Compression::gzip, -1, 100);
  Server server(options);
  const std::string big = patterned(5000);
  {  // accepted: grpc-encoding on the head, flag 1
    const H2Response r = server.call("/test.Echo/Unary", frame(big), {{"grpc-accept-encoding", "identity,gzip"}});
    EXPECT_EQ(grpc_status(r), "0");
    EXPECT_EQ(r.header("grpc-encoding"), "gzip");
    EXPECT_EQ(server.seen->encoding, Compression::gzip);
    ASSERT_GT(r.body.size(), 5u);
    EXPECT_EQ(r.body[0], 1);
    EXPECT_LT(r.body.size(), big.size());
    EXPECT_EQ(inflate_with(payload_of(r.body), Compression::gzip, big.size()), big);
  }
  {  // accepted, but below the minimum: flag 0 under grpc-encoding
    const H2Response r = server.call("/test.Echo/Unary", frame("tiny"), {{"grpc-accept-encoding", "gzip"}});
    EXPECT_EQ(r.header("grpc-encoding"), "gzip");
    EXPECT_EQ(r.body, frame("tiny"));
  }
  {  // not listed: plain, no grpc-encoding
    const H2Response r = server.call("/test.Echo/Unary", frame(big), {{"grpc-accept-encoding", "identity,deflate"}});
    EXPECT_EQ(grpc_status(r), "0");
    EXPECT_FALSE(r.header("grpc-encoding"));
    EXPECT_EQ(r.body, frame(big));
    EXPECT_EQ(server.seen->encoding, Compression::identity);
  }
  {  // no grpc-accept-encoding at all: plain
    const H2Response r = server.call("/test.Echo/Unary", frame(big));
    EXPECT_FALSE(r.header("grpc-encoding"));
    EXPECT_EQ(r.body, frame(big));
  }
  {  // the call's own setting (deflate) over the server's
    const std::string request = "compress:deflate " + big;
    const H2Response r = server.call("/test.Echo/Unary", frame(request), {{"grpc-accept-encoding", "deflate,gzip"}});
    EXPECT_EQ(r.header("grpc-encoding"), "deflate");
    ASSERT_GT(r.body.size(), 5u);
    EXPECT_EQ(r.body[0], 1);
    EXPECT_EQ(inflate_with(payload_of(r.body), Compression::deflate, request.size()), request);
  }
}

TEST(GrpcServerMetadata, BinaryMetadataIsDecodedPaddedOrNotAndEncodedUnpaddedOnTheWay) {
  const std::string bytes("\x00\xFF\x10z", 4);  // 4 bytes: "AP8Qeg" unpadded, "AP8Qeg==" padded
  for (const std::string& wire : {std::string("AP8Qeg"), std::string("AP8Qeg==")}) {
    Server server;
    const H2Response r = server.call("/test.Echo/Metadata", frame("x"), {{"trace-bin", wire}, {"x-ascii", "hello"}});
    EXPECT_EQ(grpc_status(r), "0");
    EXPECT_EQ(server.seen->trace, bytes) << wire;
    EXPECT_EQ(server.seen->traces, std::vector<std::string>{bytes});
    EXPECT_EQ(server.seen->ascii, "hello");
    EXPECT_EQ(r.header("echo-bin"), "AP8Qeg");  // sent unpadded
    EXPECT_EQ(r.header("x-plain"), "text");
    EXPECT_EQ(field(r.trailers, "trailer-bin"), "AAEC/g");
    EXPECT_EQ(field(r.trailers, "x-trailer"), "done");
    // Every refused key or value was refused at the API, in the head and the trailers alike.
    EXPECT_EQ(server.seen->refused.size(), 12u);
    EXPECT_FALSE(r.header("Upper-Case"));
    EXPECT_FALSE(r.header("bad key"));
    EXPECT_EQ(r.header("content-type"), "application/grpc");
    EXPECT_EQ(field(r.trailers, "grpc-status"), "0");
    EXPECT_FALSE(field(r.trailers, "grpc-message"));
  }
}

TEST(GrpcServerMetadata, RepeatedAndCommaJoinedBinaryValuesAreEachDecoded) {
  Server server;
  const H2Response r =
      server.call("/test.Echo/Metadata", frame("x"), {{"trace-bin", "Zm8=,Zm9v"}, {"trace-bin", "YmFy"}});
  EXPECT_EQ(grpc_status(r), "0");
  EXPECT_EQ(server.seen->traces, (std::vector<std::string>{"fo", "foo", "bar"}));
  EXPECT_EQ(server.seen->trace, "fo");
}

TEST(GrpcServerMetadata, MalformedBinaryMetadataEndsTheCallInternal) {
  Server server;
  const H2Response r = server.call("/test.Echo/Metadata", frame("x"), {{"trace-bin", "not base64!"}});
  EXPECT_EQ(grpc_status(r), "13");
  EXPECT_FALSE(server.seen->trace) << "the handler never ran";
  EXPECT_TRUE(r.header("grpc-message").value_or("").find("trace-bin") != std::string::npos);
}

}  // namespace
}  // namespace weft::grpc
