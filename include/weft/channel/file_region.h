#pragma once
/// @file
/// FileRegion: a byte range of an open file, written to a channel as a message (Netty's FileRegion).
/// The descriptor is shared by every region of the same opening and closed with the last one, so a
/// region may be copied, moved and kept by the write queue while the application lets go of it.
///
/// A region is written through a FileRegionWriter (the HTTP server codecs put one in their pipeline
/// when they first write a file): it reads the file in bounded chunks into pooled buffers while the
/// channel is writable, so serving a large file to a slow reader holds a bounded amount of memory;
/// or, on a transport that sends files itself (Channel::sends_files()) with no TLS handler in the
/// way, it passes the region whole to the channel's write queue, sent with sendfile(2) (epoll,
/// blocking) or splice(2) through a pipe (io_uring).

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace weft {

/// An open, read-only file descriptor, closed when the last owner lets go. Thread-safe to share
/// (the descriptor is only read with pread, which has no file position).
class FileHandle {
 public:
  /// Takes ownership of `fd` (>= 0).
  explicit FileHandle(int fd) noexcept : fd_(fd) {}
  FileHandle(const FileHandle&) = delete;
  FileHandle& operator=(const FileHandle&) = delete;
  ~FileHandle();
  /// The descriptor.
  int fd() const noexcept { return fd_; }

 private:
  int fd_;
};

/// A byte range [offset, offset + length) of a shared open file (see the file's description).
/// A value type; thread-safe to copy between threads (the handle is shared by reference count).
class FileRegion {
 public:
  /// An empty region (no file).
  FileRegion() noexcept = default;
  /// The bytes [offset, offset + length) of `file`.
  FileRegion(std::shared_ptr<const FileHandle> file, std::uint64_t offset, std::uint64_t length) noexcept
      : file_(std::move(file)), offset_(offset), length_(length) {}
  /// Opens `path` read-only (O_CLOEXEC) and covers [offset, offset + length). Throws std::system_error
  /// when it cannot be opened.
  static FileRegion open(const std::string& path, std::uint64_t offset, std::uint64_t length);

  /// Whether the region names a file.
  explicit operator bool() const noexcept { return file_ != nullptr; }
  /// The file's descriptor; -1 for an empty region.
  int fd() const noexcept { return file_ != nullptr ? file_->fd() : -1; }
  /// The shared file.
  const std::shared_ptr<const FileHandle>& file() const noexcept { return file_; }
  /// Where the region starts in the file.
  std::uint64_t offset() const noexcept { return offset_; }
  /// The region's length in bytes (what is still to be written of it).
  std::uint64_t length() const noexcept { return length_; }
  /// Drops the first `n` bytes (n <= length()): they were written.
  void advance(std::uint64_t n) noexcept {
    offset_ += n;
    length_ -= n;
  }
  /// The memory a region holds, for bounds that count bytes: its own size, not the file's (the
  /// bytes are read in bounded chunks only as they are sent).
  std::size_t message_size() const noexcept { return sizeof(FileRegion); }

 private:
  std::shared_ptr<const FileHandle> file_;
  std::uint64_t offset_ = 0;
  std::uint64_t length_ = 0;
};

}  // namespace weft
