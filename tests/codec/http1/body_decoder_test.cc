#include "weft/codec/http1/body_decoder.h"
#include "weft/codec/byte_to_message_decoder.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

namespace weft::http::detail {
namespace {

struct Outcome {
  BodyDecoder::Status status = BodyDecoder::Status::need_more;
  int http_status = 0;
  std::string body;
  std::string rest;  // input left undecoded, that handed over and the rest
};

// Decodes the chunked body `input`, handed over `step` bytes at a time (0: all at once).
Outcome decode_chunked(std::string_view input, std::size_t step = 0, Limits limits = {}) {
  BodyDecoder decoder;
  decoder.start_chunked();
  ByteBuf in, body;
  Outcome out;
  if (step == 0) step = input.size();
  std::size_t handed = 0;
  while (handed < input.size() && out.status == BodyDecoder::Status::need_more) {
    weft::detail::cumulate(default_allocator(), in, ByteBuf::copy_of(input.substr(handed, step)));
    handed = std::min(input.size(), handed + step);
    BodyDecoder::Result r = decoder.decode(in, body, default_allocator(), limits);
    out.status = r.status;
    out.http_status = r.http_status;
  }
  out.body = body.to_string();
  out.rest = in.to_string() + std::string(input.substr(handed));
  return out;
}

// Every way of handing the input over: at once, and one to three bytes at a time.
template <class Check>
void for_each_split(std::string_view input, Check check) {
  for (std::size_t step : {0, 1, 2, 3}) {
    SCOPED_TRACE("step " + std::to_string(step));
    check(decode_chunked(input, step));
  }
}

void expect_decoded(std::string_view input, std::string_view body) {
  for_each_split(input, [&](const Outcome& o) {
    EXPECT_EQ(o.status, BodyDecoder::Status::done) << o.http_status;
    EXPECT_EQ(o.body, body);
    EXPECT_EQ(o.rest, "NEXT");
  });
}

void expect_rejected(std::string_view input, int status = 400) {
  for_each_split(input, [&](const Outcome& o) {
    EXPECT_EQ(o.status, BodyDecoder::Status::error);
    EXPECT_EQ(o.http_status, status);
  });
}

TEST(ChunkedBodyTest, DecodesChunksAndStopsAtTheEnd) {
  SCOPED_TRACE("plain");
  expect_decoded("5\r\nhello\r\n6\r\n world\r\n0\r\n\r\nNEXT", "hello world");
  expect_decoded("A\r\n0123456789\r\n0\r\n\r\nNEXT", "0123456789");
  expect_decoded("0000\r\n\r\nNEXT", "");
}

TEST(ChunkedBodyTest, AcceptsChunkExtensionsOfTheRfcGrammar) {
  // chunk-ext = *( BWS ";" BWS ext-name [ BWS "=" BWS ext-value ] ), ext-value = token / quoted-string
  for (const char* ext : {";a", ";a=b", ";a=b;c", ";a=b;c=d", " ;a", "\t;\ta", "; a = b", ";a\t=\tb ;c",
                          ";name=\"quoted value\"", ";q=\"\"", ";q=\"a\\\"b\\\\c\"", ";q=\"tab\tand \x80 obs-text\"",
                          ";q=\"x\";r=y", ";!#$%&'*+-.^_`|~=!#$%&'*+-.^_`|~", ";a=\"\\\x80\""}) {
    SCOPED_TRACE(ext);
    expect_decoded(std::string("3") + ext + "\r\nabc\r\n0" + ext + "\r\n\r\nNEXT", "abc");
  }
}

TEST(ChunkedBodyTest, RejectsMalformedChunkSizeLines) {
  for (const char* line : {
           "3;\nxx",          // bare LF inside an extension
           "3\n",             // bare LF ending the line
           "3;a\rb",          // bare CR
           "3;",              // ";" without a name
           "3;;a",            // empty name
           "3;a=",            // "=" without a value
           "3;=b",            // value without a name
           "3;a b",           // two names without ";"
           "3;a=b c",         // two values
           "3;a=b=c",         //
           "3;a\"b",          // '"' inside a token
           "3;a=\"b",         // unterminated quoted string
           "3;a=\"b\"c",      // bytes after a quoted string
           "3;a=\"\x01\"",    // control in a quoted string
           "3;a=\"\\\x01\"",  // control in a quoted pair
           "3;a=\x7f",        // DEL
           "3;a=(b)",         // separators in a token
           "3;a,b",           //
           "3 ",              // whitespace without an extension
           "3 4",             // two sizes
           "3;a ",            // whitespace before CRLF
           "3x",              // not hex
           "x3",              //
           "-3",              //
           "+3",              //
           " 3",              // whitespace before the size
           "",                // no size
           ";a",              //
           "0x3",             //
           "3\x01",           //
           "1000000000000000" // more than 15 hex digits
       }) {
    SCOPED_TRACE(::testing::PrintToString(std::string(line)));
    expect_rejected(std::string(line) + "\r\nabc\r\n0\r\n\r\n");
  }
}

TEST(ChunkedBodyTest, RejectsABadLastChunkLine) {
  expect_rejected("3\r\nabc\r\n0;\nx\r\n\r\n");
  expect_rejected("3\r\nabc\r\n0 \r\n\r\n");
}

TEST(ChunkedBodyTest, AChunkSizeLineFailsAsSoonAsItCannotBeValid) {
  // No CRLF needed to see that these will never parse.
  for (const char* prefix : {"3;\n", "3;a\rb", "3 x", "g", "3;a=\"\x01", "3;a\\"}) {
    SCOPED_TRACE(::testing::PrintToString(std::string(prefix)));
    Outcome o = decode_chunked(prefix);
    EXPECT_EQ(o.status, BodyDecoder::Status::error);
    EXPECT_EQ(o.http_status, 400);
  }
  for (const char* prefix : {"3", "3;", "3;a", "3;a=\"b", "3;a=\"\\", "3 ;a = ", "3\r"}) {
    SCOPED_TRACE(::testing::PrintToString(std::string(prefix)));
    EXPECT_EQ(decode_chunked(prefix).status, BodyDecoder::Status::need_more);
  }
}

TEST(ChunkedBodyTest, ChunkSizeLineLimit) {
  Limits limits;
  limits.max_chunk_line = 16;
  const std::string ext = ";a=" + std::string(16, 'b');  // 1 + 19 bytes: past the limit
  EXPECT_EQ(decode_chunked("3" + ext + "\r\nabc\r\n0\r\n\r\n", 0, limits).http_status, 400);
  EXPECT_EQ(decode_chunked("3" + ext, 0, limits).http_status, 400);  // before the CRLF arrives
  EXPECT_EQ(decode_chunked("3;a=" + std::string(12, 'b') + "\r\nabc\r\n0\r\n\r\n", 0, limits).status,
            BodyDecoder::Status::done);  // 16 bytes and the CRLF
}

TEST(ChunkedBodyTest, AcceptsTrailerFields) {
  expect_decoded("3\r\nabc\r\n0\r\nExpires: never\r\n\r\nNEXT", "abc");
  expect_decoded("3\r\nabc\r\n0\r\nA: 1\r\nB:2\r\nC: \t\r\nD:\r\n\r\nNEXT", "abc");
  expect_decoded("3\r\nabc\r\n0\r\nX-Obs: caf\xc3\xa9\r\n\r\nNEXT", "abc");
}

TEST(ChunkedBodyTest, RejectsTrailerLinesThatAreNotFieldLines) {
  const std::string body = "3\r\nabc\r\n0\r\n";
  for (const char* trailer : {
           "NoColon\r\n\r\n",          // no colon
           "A: 1\r\nNoColon\r\n\r\n",  //
           ": value\r\n\r\n",          // empty name
           "A : 1\r\n\r\n",            // space before the colon
           "A(: 1\r\n\r\n",            // not a token
           "A: 1\rB: 2\r\n\r\n",       // bare CR in a value
           "A: 1\r\r\n\r\n",           //
           "A: 1\n\r\n",               // bare LF
           "A: 1\r\n\n",               // bare LF as the last line
           "A: 1\r\n\r\r\n",           // bare CR as the last line
           "A: 1\r\n folded\r\n\r\n",  // obsolete line folding
           " A: 1\r\n\r\n",            //
           "A: \x01\r\n\r\n",          // control in a value
           "A: \x7f\r\n\r\n",          // DEL
       }) {
    SCOPED_TRACE(::testing::PrintToString(std::string(trailer)));
    expect_rejected(body + trailer);
  }
}

TEST(ChunkedBodyTest, TrailerSectionLimit) {
  Limits limits;
  limits.max_header_section = 64;
  const std::string big = "3\r\nabc\r\n0\r\nX: " + std::string(80, 'a') + "\r\n\r\n";
  EXPECT_EQ(decode_chunked(big, 0, limits).http_status, 431);
  EXPECT_EQ(decode_chunked(big.substr(0, 90), 0, limits).http_status, 431);  // before its end arrives
  EXPECT_EQ(decode_chunked("3\r\nabc\r\n0\r\nX: " + std::string(40, 'a') + "\r\n\r\n", 0, limits).status,
            BodyDecoder::Status::done);
}

}  // namespace
}  // namespace weft::http::detail
