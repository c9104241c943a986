#pragma once
// The HTTP/2 streams an OriginConnection's requests are on, by each request's number on the
// connection (Exchange::h2_call), so that a request given up (its request timeout) can reset its
// stream. A request's stream id is only known on the connection's loop, where the request opens it.
// Connection loop only. A few entries (the streams open at once); no allocation once grown.

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace weft::client::detail {

class Http2Calls {
 public:
  void opened(std::uint64_t call, std::int32_t stream) { open_.emplace_back(call, stream); }
  void ended(std::uint64_t call) {
    auto it = std::find_if(open_.begin(), open_.end(), [call](const auto& e) { return e.first == call; });
    if (it == open_.end()) return;
    *it = open_.back();
    open_.pop_back();
  }
  // The stream of `call` while its request waits for its answer; 0 when it has none.
  std::int32_t stream_of(std::uint64_t call) const {
    for (const auto& [c, stream] : open_) {
      if (c == call) return stream;
    }
    return 0;
  }

 private:
  std::vector<std::pair<std::uint64_t, std::int32_t>> open_;
};

}  // namespace weft::client::detail
