#pragma once
/// @file
/// FileRegionWriter: writes FileRegion messages as bytes, in order with the ByteBufs around them,
/// reading each file in bounded chunks into pooled buffers only while the channel is writable
/// (Netty's ChunkedWriteHandler). What is written behind a file waits, in order, until the file has
/// gone, and counts toward the channel's writability meanwhile (Channel::hold_write_bytes): a slow
/// reader holds one chunk and the write queue's high water mark, not the file.
///
/// Works on every transport and under TLS (it sits above the TLS handler: the chunks are encrypted
/// as they pass). Where the transport sends files itself (Channel::sends_files(): sendfile on epoll
/// and blocking, splice through a pipe on io_uring) and nothing stands between the writer and the
/// socket (Context::writes_to_channel(): no TLS handler), a file is not read here: it goes whole, in
/// its turn, into the channel's write queue, which counts its bytes toward writability and closes it
/// once sent or dropped. A file that ends before its region does (truncated while being served)
/// closes the channel: the peer sees a short body, never a hang. The HTTP server codecs add one
/// before themselves, named kName, the first time they write a file.
///
/// Outbound ByteBuf or FileRegion in, ByteBuf out. Loop thread only; one per channel.

#include <cstddef>
#include <deque>
#include <variant>
#include <vector>

#include "weft/buffer/byte_buf.h"
#include "weft/channel/context.h"
#include "weft/channel/file_region.h"
#include "weft/channel/handler.h"
#include "weft/core/unique_function.h"

namespace weft {

/// Writes FileRegions as bytes in bounded chunks (see the file's description). Loop thread only.
class FileRegionWriter final : public Handler {
 public:
  /// The name the HTTP server codecs give the writer they add.
  static constexpr const char* kName = "file-writer";
  /// The most bytes read from a file at a time.
  static constexpr std::size_t kChunkSize = 64 * 1024;

  /// Outbound ByteBuf (or FileRegion) in, ByteBuf out; inbound events pass through.
  MessageTypes message_types() const noexcept override {
    return {nullptr, nullptr, &typeid(ByteBuf), &typeid(ByteBuf)};
  }
  /// A FileRegion starts (or queues behind the file being sent); a ByteBuf passes on, or queues.
  void write_message(Context& ctx, MessageRef message) override;
  /// Sends what the channel's writability allows, then passes the flush on.
  void flush(Context& ctx) override;
  /// Goes on with the file once the channel is writable again; passes the event on.
  void writability_changed(Context& ctx) override;
  /// Drops what is queued; passes the event on.
  void channel_inactive(Context& ctx) override;
  /// Gives back the bytes it held toward writability.
  void handler_removed(Context& ctx) override;

  /// The number of messages waiting (a file being sent counts as one), for tests.
  std::size_t queued() const noexcept { return queue_.size(); }
  /// Runs `done` once everything written so far has been passed on (at once when nothing waits):
  /// a graceful close waits for it, or the file's tail would be cut off. Dropped, not run, when the
  /// channel closes first. Loop thread only.
  void when_drained(UniqueFunction<void()> done);

 private:
  using Entry = std::variant<ByteBuf, FileRegion>;
  // Writes chunks of the front file and the messages behind it while the channel is writable.
  // Returns whether it wrote anything.
  bool pump(Context& ctx);
  void fail(Context& ctx, const char* why, int error);
  void drop_queue(Context& ctx) noexcept;

  std::deque<Entry> queue_;                      // [0] is the file being sent, when any is
  std::size_t held_ = 0;                         // bytes of queued ByteBufs counted with hold_write_bytes
  bool pumping_ = false;                         // a pump() is on the stack (a write it makes may re-enter)
  std::vector<UniqueFunction<void()>> drained_;  // when_drained()'s, run once queue_ empties
};

}  // namespace weft
