#include "weft/grpc/compression.h"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <limits>
#include <new>
#include <stdexcept>

namespace weft::grpc {

namespace {

constexpr int kMaxWindowBits = 15;
constexpr int kGzipWindowBits = kMaxWindowBits + 16;  // zlib: +16 writes and reads the gzip wrapper
constexpr int kMemLevel = 8;                          // zlib's default

int window_bits(Compression compression) noexcept {
  return compression == Compression::gzip ? kGzipWindowBits : kMaxWindowBits;
}

char lower(char ch) noexcept { return ch >= 'A' && ch <= 'Z' ? static_cast<char>(ch - 'A' + 'a') : ch; }

bool equals_lower(std::string_view text, std::string_view lowercase) noexcept {
  if (text.size() != lowercase.size()) return false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (lower(text[i]) != lowercase[i]) return false;
  }
  return true;
}

std::string_view trim(std::string_view text) noexcept {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

// zlib's streams of this thread, made on first use and reset between messages (deflateInit costs
// 268 KiB and inflateInit 7 KiB + its window: once per thread, not once per message).
class ThreadStreams {
 public:
  ThreadStreams() = default;
  ThreadStreams(const ThreadStreams&) = delete;
  ThreadStreams& operator=(const ThreadStreams&) = delete;
  ~ThreadStreams() {
    for (auto& per_level : deflaters_) {
      for (auto& stream : per_level) {
        if (stream) deflateEnd(&*stream);
      }
    }
    for (auto& stream : inflaters_) {
      if (stream) inflateEnd(&*stream);
    }
  }

  // A deflater for `compression` (deflate or gzip) at `level` (-1..9), reset.
  z_stream& deflater(Compression compression, int level) {
    std::optional<z_stream>& slot = deflaters_[compression == Compression::gzip][static_cast<std::size_t>(level + 1)];
    if (!slot) {
      slot.emplace();  // in place: zlib's state points back at its z_stream, which must not move
      if (deflateInit2(&*slot, level, Z_DEFLATED, window_bits(compression), kMemLevel, Z_DEFAULT_STRATEGY) != Z_OK) {
        slot.reset();
        throw std::bad_alloc();
      }
    } else {
      deflateReset(&*slot);
    }
    return *slot;
  }

  // An inflater for `compression` (deflate or gzip), reset.
  z_stream& inflater(Compression compression) {
    std::optional<z_stream>& slot = inflaters_[compression == Compression::gzip];
    if (!slot) {
      slot.emplace();
      if (inflateInit2(&*slot, window_bits(compression)) != Z_OK) {
        slot.reset();
        throw std::bad_alloc();
      }
    } else {
      inflateReset(&*slot);
    }
    return *slot;
  }

 private:
  // [gzip?][level + 1]; a made stream never moves (the thread's object lives until the thread ends).
  std::array<std::array<std::optional<z_stream>, 11>, 2> deflaters_{};
  std::array<std::optional<z_stream>, 2> inflaters_{};
};

ThreadStreams& thread_streams() {
  thread_local ThreadStreams streams;
  return streams;
}

Status too_large(std::size_t max_bytes) {
  return Status(StatusCode::resource_exhausted,
                "received message larger than max after decompression (more than " + std::to_string(max_bytes) + ")");
}

void write_prefix(ByteBuf& framed, std::uint8_t flag, std::size_t length) {
  framed.write_u8(flag);
  framed.write_u32(static_cast<std::uint32_t>(length));
}

ByteBuf frame_uncompressed(const ByteBuf& message, ByteBufAllocator& allocator) {
  const std::size_t n = message.readable_bytes();
  ByteBuf framed = allocator.buffer(kMessagePrefixBytes + n);
  write_prefix(framed, 0, n);
  if (n > 0) {
    std::copy_n(message.read_ptr(), n, framed.write_ptr());
    framed.advance_writer(n);
  }
  return framed;
}

}  // namespace

std::string_view compression_name(Compression compression) noexcept {
  switch (compression) {
    case Compression::deflate: return "deflate";
    case Compression::gzip: return "gzip";
    case Compression::identity: break;
  }
  return "identity";
}

std::optional<Compression> parse_compression(std::string_view name) noexcept {
  name = trim(name);
  if (equals_lower(name, "identity")) return Compression::identity;
  if (equals_lower(name, "gzip")) return Compression::gzip;
  if (equals_lower(name, "deflate")) return Compression::deflate;
  return std::nullopt;
}

bool accepts_compression(std::string_view accept_encoding, Compression compression) noexcept {
  if (compression == Compression::identity) return true;
  const std::string_view wanted = compression_name(compression);
  while (!accept_encoding.empty()) {
    const std::size_t comma = accept_encoding.find(',');
    if (equals_lower(trim(accept_encoding.substr(0, comma)), wanted)) return true;
    if (comma == std::string_view::npos) break;
    accept_encoding.remove_prefix(comma + 1);
  }
  return false;
}

ByteBuf frame_compressed(const ByteBuf& message, const CompressionOptions& options, ByteBufAllocator& allocator) {
  if (options.level < -1 || options.level > 9) {
    throw std::invalid_argument("grpc::frame_compressed: a zlib level is -1..9, not " + std::to_string(options.level));
  }
  const std::size_t n = message.readable_bytes();
  if (options.algorithm == Compression::identity || n < options.min_bytes || n == 0 ||
      n > std::numeric_limits<uInt>::max()) {
    return frame_uncompressed(message, allocator);
  }
  z_stream& stream = thread_streams().deflater(options.algorithm, options.level);
  // Room for the message as it is: output that does not fit did not shrink it.
  ByteBuf framed = allocator.buffer(kMessagePrefixBytes + n);
  write_prefix(framed, 1, 0);
  stream.next_in = const_cast<Bytef*>(message.read_ptr());  // zlib's API is not const; it only reads
  stream.avail_in = static_cast<uInt>(n);
  stream.next_out = framed.write_ptr();
  stream.avail_out = static_cast<uInt>(n);
  const int rc = deflate(&stream, Z_FINISH);
  if (rc != Z_STREAM_END) {
    // Z_OK or Z_BUF_ERROR: the output did not fit in the message's size (it would not shrink).
    return frame_uncompressed(message, allocator);
  }
  const std::size_t compressed = n - stream.avail_out;
  framed.advance_writer(compressed);
  framed.set_u32(1, static_cast<std::uint32_t>(compressed));
  return framed;
}

Status decompress(const ByteBuf& compressed, Compression compression, std::size_t max_bytes, ByteBuf& out,
                  ByteBufAllocator& allocator) {
  const std::size_t n = compressed.readable_bytes();
  if (compression == Compression::identity) {
    if (n > max_bytes) return too_large(max_bytes);
    out = allocator.buffer(n, std::max<std::size_t>(n, 1));
    if (n > 0) {
      std::copy_n(compressed.read_ptr(), n, out.write_ptr());
      out.advance_writer(n);
    }
    return Status();
  }
  if (n > std::numeric_limits<uInt>::max()) return too_large(max_bytes);
  z_stream& stream = thread_streams().inflater(compression);
  stream.next_in = const_cast<Bytef*>(compressed.read_ptr());
  stream.avail_in = static_cast<uInt>(n);
  // A guess at the size (4x), grown by doubling, never past the bound.
  const std::size_t first = std::min(max_bytes, std::max<std::size_t>(n * 4, 256));
  ByteBuf buffer = allocator.buffer(first, std::max<std::size_t>(max_bytes, 1));
  for (;;) {
    std::uint8_t probe = 0;
    const bool at_bound = buffer.readable_bytes() >= max_bytes;
    if (!at_bound && !buffer.is_writable()) {
      const std::size_t have = buffer.readable_bytes();
      buffer.ensure_writable(std::min(max_bytes - have, std::max<std::size_t>(have, 256)));
    }
    // At the bound, one byte of room: a byte inflated there is one too many.
    stream.next_out = at_bound ? &probe : buffer.write_ptr();
    stream.avail_out = at_bound ? 1 : static_cast<uInt>(std::min<std::size_t>(buffer.writable_bytes(),
                                                                                max_bytes - buffer.readable_bytes()));
    const uInt room = stream.avail_out;
    const int rc = inflate(&stream, Z_NO_FLUSH);
    const std::size_t produced = room - stream.avail_out;
    if (at_bound && produced > 0) return too_large(max_bytes);
    if (!at_bound) buffer.advance_writer(produced);
    if (rc == Z_STREAM_END) break;
    if (rc == Z_OK) continue;
    if (rc == Z_BUF_ERROR && stream.avail_in == 0) {
      return Status(StatusCode::internal, "a compressed message ends before its " +
                                              std::string(compression_name(compression)) + " stream");
    }
    if (rc == Z_BUF_ERROR && stream.avail_out == 0) continue;  // room was the limit: make more
    return Status(StatusCode::internal, "a message is not valid " + std::string(compression_name(compression)) +
                                            (stream.msg != nullptr ? std::string(": ") + stream.msg : std::string()));
  }
  if (stream.avail_in != 0) {
    return Status(StatusCode::internal, "bytes after the end of a compressed message's " +
                                            std::string(compression_name(compression)) + " stream");
  }
  out = std::move(buffer);
  return Status();
}

DecompressingDeframer::DecompressingDeframer(std::size_t max_message_bytes, std::string_view grpc_encoding)
    : deframer_(max_message_bytes, false, true), max_message_bytes_(max_message_bytes) {
  if (grpc_encoding.empty()) return;
  if (std::optional<Compression> known = parse_compression(grpc_encoding)) {
    encoding_ = *known;
  } else {
    unknown_encoding_ = true;
    encoding_name_ = std::string(grpc_encoding);
  }
}

std::optional<ByteBuf> DecompressingDeframer::next() {
  if (error_) return std::nullopt;
  std::optional<ByteBuf> message = deframer_.next();
  if (!message || !deframer_.last_compressed()) return message;
  if (unknown_encoding_) {
    error_ = Status(StatusCode::unimplemented, "Compression algorithm '" + encoding_name_ + "' is not supported");
    return std::nullopt;
  }
  if (encoding_ == Compression::identity) {
    error_ = Status(StatusCode::internal, "a compressed message without grpc-encoding");
    return std::nullopt;
  }
  ByteBuf decompressed;
  Status status = decompress(*message, encoding_, max_message_bytes_, decompressed);
  if (!status.ok()) {
    error_ = std::move(status);
    return std::nullopt;
  }
  return decompressed;
}

}  // namespace weft::grpc
