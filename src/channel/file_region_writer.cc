#include "weft/channel/file_region_writer.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "weft/buffer/byte_buf_allocator.h"
#include "weft/channel/channel.h"
#include "weft/core/log.h"

namespace weft {

void FileRegionWriter::write_message(Context& ctx, MessageRef message) {
  if (message.is<FileRegion>()) {
    FileRegion& region = message.as<FileRegion>();
    if (region.length() == 0) return;
    queue_.emplace_back(std::move(region));
    if (queue_.size() == 1) pump(ctx);
    return;
  }
  if (!message.is<ByteBuf>()) throw_type_mismatch(ctx, "outbound", typeid(ByteBuf), message.type());
  if (queue_.empty()) {
    ctx.write(std::move(message.as<ByteBuf>()));
    return;
  }
  ByteBuf& bytes = message.as<ByteBuf>();
  const std::size_t n = bytes.readable_bytes();
  queue_.emplace_back(std::move(bytes));
  held_ += n;
  ctx.channel().hold_write_bytes(n);
}

void FileRegionWriter::flush(Context& ctx) {
  pump(ctx);
  ctx.flush();
}

void FileRegionWriter::writability_changed(Context& ctx) {
  if (ctx.channel().is_writable() && !queue_.empty() && pump(ctx)) ctx.flush();
  ctx.fire_writability_changed();
}

void FileRegionWriter::channel_inactive(Context& ctx) {
  drop_queue(ctx);
  ctx.fire_channel_inactive();
}

void FileRegionWriter::handler_removed(Context& ctx) { drop_queue(ctx); }

void FileRegionWriter::when_drained(UniqueFunction<void()> done) {
  if (queue_.empty()) {
    done();
    return;
  }
  drained_.push_back(std::move(done));
}

bool FileRegionWriter::pump(Context& ctx) {
  if (pumping_ || queue_.empty()) return false;
  pumping_ = true;
  Channel& channel = ctx.channel();
  bool wrote = false;
  while (!queue_.empty() && channel.is_open()) {
    if (ByteBuf* bytes = std::get_if<ByteBuf>(&queue_.front())) {
      ByteBuf out = std::move(*bytes);
      queue_.pop_front();
      const std::size_t n = out.readable_bytes();
      held_ -= n;
      ctx.write(std::move(out));  // queued first, then the hold is taken back: no writability flap
      channel.release_held_write_bytes(n);
      wrote = true;
      continue;
    }
    FileRegion& region = std::get<FileRegion>(queue_.front());
    if (channel.sends_files() && ctx.writes_to_channel()) {
      // The transport sends it from the file (sendfile); the write queue counts its bytes.
      FileRegion whole = std::move(region);
      queue_.pop_front();
      ctx.write(std::move(whole));
      wrote = true;
      continue;
    }
    if (!channel.is_writable()) break;
    const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(region.length(), kChunkSize));
    ByteBuf chunk = ctx.allocator().buffer(want);
    const ssize_t got = ::pread(region.fd(), chunk.write_ptr(), want, static_cast<off_t>(region.offset()));
    if (got <= 0) {
      if (got < 0 && errno == EINTR) continue;
      fail(ctx, got == 0 ? "the file ended before its region" : "reading the file failed", got == 0 ? 0 : errno);
      break;
    }
    chunk.advance_writer(static_cast<std::size_t>(got));
    region.advance(static_cast<std::uint64_t>(got));
    if (region.length() == 0) queue_.pop_front();
    ctx.write(std::move(chunk));
    wrote = true;
  }
  pumping_ = false;
  if (queue_.empty() && !drained_.empty() && channel.is_open()) {
    std::vector<UniqueFunction<void()>> done = std::move(drained_);
    drained_.clear();
    ctx.flush();  // what the callbacks wait for has been written: it leaves before they run
    for (auto& f : done) f();
  }
  return wrote;
}

void FileRegionWriter::fail(Context& ctx, const char* why, int error) {
  log(LogLevel::warn, "channel {}: file region: {}{}{}; closing", ctx.channel().id(), why, error != 0 ? ": " : "",
      error != 0 ? std::strerror(error) : "");
  drop_queue(ctx);
  ctx.close();
}

void FileRegionWriter::drop_queue(Context& ctx) noexcept {
  queue_.clear();
  drained_.clear();
  if (held_ != 0) {
    const std::size_t n = held_;
    held_ = 0;
    ctx.channel().release_held_write_bytes(n);
  }
}

}  // namespace weft
