#pragma once
// detail::BodySink: what a streamed response's producer (through BodyWriter) and the HTTP/1.1
// codec share (loop thread only). The codec frames and writes what the producer gives and wakes
// it when the channel is writable again; a collecting sink (HTTP/2 for now) gathers the body.

#include <cstdint>
#include <exception>
#include <memory>
#include <optional>

#include "weft/buffer/byte_buf.h"
#include "weft/codec/http1/body_writer.h"
#include "weft/core/loop_signal.h"
#include "weft/core/unique_function.h"

namespace weft::http {
class ServerCodec;
}

namespace weft::http::detail {

class BodySink {
 public:
  // `codec` null: the body is collected (collected()), up to `collect_bound` bytes.
  BodySink(EventLoop& loop, ServerCodec* codec, std::optional<std::uint64_t> content_length,
           std::size_t collect_bound = 0) noexcept
      : signal_(loop),
        codec_(codec),
        content_length_(content_length),
        collect_bound_(collect_bound),
        was_attached_(codec != nullptr) {}

  // ---- the codec's side
  void detach() noexcept {
    codec_ = nullptr;
    signal_.notify();
  }
  void writable() noexcept { signal_.notify(); }
  bool finished() const noexcept { return finished_; }

  // ---- the writer's side
  Task<void> write(ByteBuf chunk);
  Task<void> finish(const HeaderBlock& trailers);
  std::optional<std::uint64_t> content_length() const noexcept { return content_length_; }
  std::uint64_t written_bytes() const noexcept { return written_; }
  // A collecting sink's body, once finished.
  ByteBuf& collected() noexcept { return collected_; }

 private:
  friend class weft::http::ServerCodec;
  LoopSignal signal_;
  ServerCodec* codec_;
  std::optional<std::uint64_t> content_length_;
  std::size_t collect_bound_;
  std::uint64_t written_ = 0;
  ByteBuf collected_;
  std::shared_ptr<const BodyProducer> producer_;  // the codec's: started once the answer's turn comes
  bool chunked_ = false;                          // the codec's framing
  bool chunk_written_ = false;                    // a chunk went out: the next starts with CRLF
  bool finished_ = false;
  bool busy_ = false;
  bool was_attached_;
};

// Runs `producer` with a writer on `sink`, on the current loop; calls `done(finished)` once it has
// ended (finished: it called finish() and it completed).
void start_producer(EventLoop& loop, std::shared_ptr<const BodyProducer> producer, std::shared_ptr<BodySink> sink,
                    UniqueFunction<void(bool)> done);

}  // namespace weft::http::detail
