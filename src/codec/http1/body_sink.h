#pragma once
// detail::BodySink: what a streamed response's producer (through BodyWriter) and its codec share
// (loop thread only). The HTTP/1.1 codec frames and writes what the producer gives and wakes it
// when the channel is writable again; HTTP/2's is linked through BodySinkLink (a stream's DATA
// frames, as its flow-control windows and the channel let them leave).

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

class BodySink;

// What a codec other than HTTP/1.1's (HTTP/2's, per stream) is told by a BodySink's writer.
class BodySinkLink {
 public:
  // A chunk to send; whether more may be written now (else the writer waits for writable()).
  virtual bool sink_write(ByteBuf chunk) = 0;
  // Whether more may be written now.
  virtual bool sink_writable() const noexcept = 0;
  // finish(): the end of the body, with `trailers` (empty: none).
  virtual void sink_finish(const HeaderBlock& trailers) = 0;
  // The producer ended (finished: finish() completed); unless finished, the body must fail.
  virtual void sink_ended(bool finished) = 0;

 protected:
  ~BodySinkLink() = default;
};

class BodySink {
 public:
  // Linked to HTTP/1.1's codec.
  BodySink(EventLoop& loop, ServerCodec* codec, std::optional<std::uint64_t> content_length) noexcept
      : signal_(loop), codec_(codec), content_length_(content_length) {}
  // Linked to another codec (HTTP/2's stream).
  BodySink(EventLoop& loop, BodySinkLink& link, std::optional<std::uint64_t> content_length) noexcept
      : signal_(loop), link_(&link), content_length_(content_length) {}

  // ---- the codec's side
  // The body's connection or stream is gone: a waiting write() fails with ChannelClosedError.
  void detach() noexcept {
    codec_ = nullptr;
    link_ = nullptr;
    signal_.notify();
  }
  BodySinkLink* link() const noexcept { return link_; }
  void writable() noexcept { signal_.notify(); }
  bool finished() const noexcept { return finished_; }

  // ---- the writer's side
  Task<void> write(ByteBuf chunk);
  Task<void> finish(const HeaderBlock& trailers);
  std::optional<std::uint64_t> content_length() const noexcept { return content_length_; }
  std::uint64_t written_bytes() const noexcept { return written_; }

 private:
  friend class weft::http::ServerCodec;
  LoopSignal signal_;
  ServerCodec* codec_ = nullptr;
  BodySinkLink* link_ = nullptr;
  std::optional<std::uint64_t> content_length_;
  std::uint64_t written_ = 0;
  std::shared_ptr<const BodyProducer> producer_;  // the codec's: started once the answer's turn comes
  bool chunked_ = false;                          // the codec's framing
  bool chunk_written_ = false;                    // a chunk went out: the next starts with CRLF
  bool finished_ = false;
  bool busy_ = false;
};

// Runs `producer` with a writer on `sink`, on the current loop; calls `done(finished)` once it has
// ended (finished: it called finish() and it completed).
void start_producer(EventLoop& loop, std::shared_ptr<const BodyProducer> producer, std::shared_ptr<BodySink> sink,
                    UniqueFunction<void(bool)> done);

}  // namespace weft::http::detail
