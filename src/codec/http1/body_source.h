#pragma once
// detail::BodySource: what a streamed request body's codec and its BodyReader share (loop thread
// only). The codec pushes chunks and ends or fails the body; the reader takes them. Each side lets
// the other know through the codec's link: the reader's take (the codec may read again), its first
// want (100 Continue), its letting go (the rest is dropped or the connection closes).

#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <string>

#include "weft/buffer/byte_buf.h"
#include "weft/buffer/byte_buf_allocator.h"
#include "weft/codec/http1/body_reader.h"
#include "weft/core/future.h"
#include "weft/core/inline_ring.h"
#include "weft/core/loop_signal.h"

namespace weft::http {
class ServerCodec;
}

namespace weft::http::detail {

class BodySource;

// What a codec other than HTTP/1.1's (HTTP/2's, per stream) hears from a BodySource's reader.
class BodySourceLink {
 public:
  // The reader took `n` bytes (HTTP/2 returns them to the stream's flow-control window).
  virtual void body_taken(BodySource& source, std::size_t n) = 0;
  // The reader let go before the end; `dropped` bytes were waiting for it.
  virtual void body_abandoned(BodySource& source, std::size_t dropped) = 0;

 protected:
  ~BodySourceLink() = default;
};

class BodySource {
 public:
  BodySource(EventLoop& loop, std::optional<std::uint64_t> content_length) noexcept
      : signal_(loop), content_length_(content_length) {}
  BodySource(const BodySource&) = delete;
  BodySource& operator=(const BodySource&) = delete;

  // ---- the codec's side
  // Links the codec, which hears of takes, the first want and letting go, for request `sequence`.
  void attach(ServerCodec& codec, std::uint64_t sequence, bool continue_owed) noexcept {
    codec_ = &codec;
    sequence_ = sequence;
    continue_owed_ = continue_owed;
  }
  // Links another codec (HTTP/2's stream), which hears of takes and letting go.
  void attach(BodySourceLink& link) noexcept { link_ = &link; }
  // The codec no longer feeds the body (it ended, failed, or the codec went away).
  void detach() noexcept {
    codec_ = nullptr;
    link_ = nullptr;
  }
  // Whether the codec should stop handing chunks over (and stop reading).
  bool full() const noexcept { return buffered_ >= kStreamBodyBufferBound || queue_.size() >= kStreamBodyMaxChunks; }
  // Whether it may read again: down to half of both bounds.
  bool drained() const noexcept {
    return buffered_ <= kStreamBodyBufferBound / 2 && queue_.size() <= kStreamBodyMaxChunks / 2;
  }
  bool abandoned() const noexcept { return abandoned_; }
  bool ended() const noexcept { return ended_ || error_ != nullptr; }
  bool failed() const noexcept { return error_ != nullptr; }
  // Whether `error` is the very error the body failed with (what its reader's next() threw).
  bool failed_with(const std::exception_ptr& error) const noexcept { return error_ != nullptr && error == error_; }
  // Whether 100 Continue is still owed (the reader never asked for the body).
  bool continue_owed() const noexcept { return continue_owed_; }
  void push(ByteBuf chunk);
  // Appends `n` bytes by copy: to the last chunk when a copy made it and it has room, else to a
  // new buffer of at least `size` bytes from `allocator` (small DATA payloads gathered).
  void push_copy(const std::uint8_t* data, std::size_t n, ByteBufAllocator& allocator, std::size_t size);
  void end(std::string trailer_block);
  void fail(std::exception_ptr error);

  // ---- the reader's side
  Task<std::optional<ByteBuf>> next();
  void abandon() noexcept;
  void limit(std::uint64_t max_bytes);
  std::optional<std::uint64_t> content_length() const noexcept { return content_length_; }
  std::uint64_t received_bytes() const noexcept { return received_; }
  std::uint64_t arrived_bytes() const noexcept { return arrived_; }
  std::size_t buffered_bytes() const noexcept { return buffered_; }
  std::size_t peak_buffered_bytes() const noexcept { return peak_buffered_; }
  const std::string& trailer_block() const noexcept { return trailers_; }

 private:
  LoopSignal signal_;
  // Four chunks inline (a body usually comes in one or two); a deeper queue, up to
  // kStreamBodyMaxChunks, moves to the heap once. (64 inline slots cost ~800 instructions to make
  // and destroy per request, for every request a streamed route takes, bodyless ones included.)
  InlineRing<ByteBuf, 4> queue_;
  std::optional<std::uint64_t> content_length_;
  std::uint64_t limit_ = UINT64_MAX;
  std::uint64_t arrived_ = 0;   // pushed so far
  std::uint64_t received_ = 0;  // taken so far
  std::size_t buffered_ = 0;
  std::size_t peak_buffered_ = 0;
  std::uint64_t sequence_ = 0;
  ServerCodec* codec_ = nullptr;
  BodySourceLink* link_ = nullptr;
  std::exception_ptr error_;
  std::string trailers_;
  bool ended_ = false;
  bool abandoned_ = false;
  bool waiting_ = false;
  bool continue_owed_ = false;
  bool copied_tail_ = false;  // the last chunk was made by push_copy: it may take more
};

// A BodySource, its memory from the per-thread frame pool (one per streamed request: no trip to
// the heap).
inline std::shared_ptr<BodySource> make_body_source(EventLoop& loop, std::optional<std::uint64_t> content_length) {
  return std::allocate_shared<BodySource>(weft::detail::FramePoolAllocator<BodySource>(), loop, content_length);
}

}  // namespace weft::http::detail
