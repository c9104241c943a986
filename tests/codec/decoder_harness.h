#pragma once
// Test helpers for decoders: feed chunks through an EmbeddedChannel, collect frames and errors.

#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "weft/buffer/byte_buf.h"
#include "weft/channel/embedded_channel.h"
#include "weft/channel/handler.h"

namespace weft::test {

// Records every exception event that reaches it (and stops it there).
class ErrorRecorder final : public Handler {
 public:
  void exception_caught(Context&, std::exception_ptr error) override { errors.push_back(std::move(error)); }
  std::vector<std::exception_ptr> errors;

  template <class E>
  std::size_t count() const {
    std::size_t n = 0;
    for (const auto& e : errors) {
      try {
        std::rethrow_exception(e);
      } catch (const E&) {
        ++n;
      } catch (...) {
      }
    }
    return n;
  }
  std::string first_what() const {
    if (errors.empty()) return {};
    try {
      std::rethrow_exception(errors.front());
    } catch (const std::exception& e) {
      return e.what();
    }
  }
};

struct Decoded {
  std::vector<std::string> frames;
  std::shared_ptr<ErrorRecorder> errors;
};

// Feeds `chunks` to a fresh channel holding make(), one read each; closes the channel at the end
// when `close`. Returns the frames (as strings) and the recorded errors.
inline Decoded decode_chunks(const std::function<std::shared_ptr<Handler>()>& make,
                             const std::vector<std::string>& chunks, bool close = false) {
  EmbeddedChannel ch;
  ch.pipeline().add_last("decoder", make());
  Decoded out{{}, std::make_shared<ErrorRecorder>()};
  ch.pipeline().add_last("errors", out.errors);
  for (const auto& c : chunks) ch.write_inbound(ByteBuf::copy_of(c));
  if (close) ch.finish();
  while (auto f = ch.read_inbound<ByteBuf>()) out.frames.push_back(f->to_string());
  return out;
}

// Every split of `input` into two reads, plus one read per byte.
inline std::vector<std::vector<std::string>> all_splits(const std::string& input) {
  std::vector<std::vector<std::string>> out;
  for (std::size_t i = 0; i <= input.size(); ++i) out.push_back({input.substr(0, i), input.substr(i)});
  std::vector<std::string> bytes;
  for (char c : input) bytes.emplace_back(1, c);
  out.push_back(bytes);
  return out;
}

}  // namespace weft::test
