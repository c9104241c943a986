#include "response_scanner.h"

#include <gtest/gtest.h>

#include <string>

namespace weft::load {
namespace {

const std::string kOk = "HTTP/1.1 200 OK\r\nServer: t\r\nContent-Length: 13\r\n\r\nHello, World!";
const std::string kChunked =
    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nHello\r\n8\r\n, World!\r\n0\r\nX-T: 1\r\n\r\n";
const std::string kNotFound = "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n";
const std::string kContinue = "HTTP/1.1 100 Continue\r\n\r\n";

// Feeds `stream` cut into pieces of `step` bytes; sums what the scanner counted.
ResponseScanner::Counts scan_in_pieces(const std::string& stream, std::size_t step) {
  ResponseScanner scanner;
  ResponseScanner::Counts total;
  for (std::size_t at = 0; at < stream.size(); at += step) {
    auto c = scanner.scan(std::string_view(stream).substr(at, step));
    total.responses += c.responses;
    total.non_2xx += c.non_2xx;
    total.error = total.error || c.error;
  }
  return total;
}

TEST(ResponseScannerTest, CountsPipelinedResponsesHoweverTheStreamIsCut) {
  std::string stream;
  for (int i = 0; i < 5; ++i) stream += kOk + kChunked + kContinue + kNotFound;
  for (std::size_t step : {std::size_t{1}, std::size_t{2}, std::size_t{7}, std::size_t{64}, stream.size()}) {
    auto c = scan_in_pieces(stream, step);
    EXPECT_FALSE(c.error) << "step " << step;
    EXPECT_EQ(c.responses, 15u) << "step " << step;
    EXPECT_EQ(c.non_2xx, 5u) << "step " << step;
  }
}

TEST(ResponseScannerTest, MalformedResponsesAreErrors) {
  for (const std::string& bad : {std::string("HTTX/1.1 200 OK\r\n\r\n"),
                                 std::string("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"),
                                 std::string("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcXY\r\n"),
                                 std::string("HTTP/1.1 200 OK\r\n\r\nbody until close")}) {
    ResponseScanner scanner;
    EXPECT_TRUE(scanner.scan(bad).error) << bad;
    EXPECT_TRUE(scanner.scan(kOk).error) << "stays failed";
  }
}

TEST(ResponseScannerTest, AHeadThatNeverEndsIsBounded) {
  ResponseScanner scanner;
  std::string head = "HTTP/1.1 200 OK\r\n";
  EXPECT_FALSE(scanner.scan(head).error);
  const std::string line = "X-Filler: " + std::string(100, 'a') + "\r\n";
  bool failed = false;
  for (int i = 0; i < 200 && !failed; ++i) failed = scanner.scan(line).error;
  EXPECT_TRUE(failed) << "a head beyond the header-section limit must fail, not grow";
}

}  // namespace
}  // namespace weft::load
