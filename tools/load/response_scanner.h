#pragma once
// Counts HTTP/1.1 responses in a byte stream without keeping them: heads are parsed in place with
// weft's response parser, bodies (Content-Length or chunked) are skipped. Only a head split across
// reads is copied (bounded by Limits::max_header_section). Cheaper than the client codec, which
// aggregates each body into a buffer the load generator would throw away.
// Not thread-safe: one scanner per connection.

#include <cstdint>
#include <string>
#include <string_view>

#include "weft/codec/http1/client_codec.h"

namespace weft::load {

class ResponseScanner {
 public:
  struct Counts {
    std::uint32_t responses = 0;  // complete responses in this chunk
    std::uint32_t non_2xx = 0;    // of which had a status outside 200..299
    bool error = false;           // malformed response: the connection must be dropped
  };

  // Scans the next bytes of the stream.
  Counts scan(std::string_view bytes);
  void reset();

 private:
  enum class State : std::uint8_t { head, fixed_body, chunk_size, chunk_data, chunk_crlf, trailers, failed };

  // Consumes from `data` at `pos`; returns false when more bytes are needed.
  bool step(std::string_view data, std::size_t& pos, Counts& counts);
  bool scan_head(std::string_view data, std::size_t& pos, Counts& counts);
  bool read_line(std::string_view data, std::size_t& pos, std::string_view& line);

  State state_ = State::head;
  std::uint64_t remaining_ = 0;
  std::string carry_;  // a head or chunk line split across reads
  http::ResponseHead head_;
  http::Limits limits_;
};

}  // namespace weft::load
