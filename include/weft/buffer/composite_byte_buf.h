#pragma once
/// @file
/// CompositeByteBuf: several ByteBufs read as one sequence of bytes, without copying them together.
///
///   components:  [ buf 0 readable ][ buf 1 readable ][ buf 2 readable ]
///   indices:     0 ........ reader_index() ............ writer_index() == total bytes
///
/// add_component() takes a buffer's reference (no copy); its readable bytes become the next bytes of
/// the composite. Reads (read_*, get_*, index_of, for_each_byte, read_slice) work across component
/// boundaries. consolidate() copies what is left into one buffer on demand, and add_component() does
/// it by itself when the count passes max_components. fill_iovecs() exports the readable bytes for
/// one writev/sendmsg.
///
/// Thread contract: like ByteBuf, a CompositeByteBuf is used by one thread at a time (it may move).
/// Errors: reading past readable_bytes() or get_* past writer_index() throws std::out_of_range.

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "weft/buffer/byte_buf.h"
#include "weft/buffer/byte_buf_allocator.h"

namespace weft {

/// Several ByteBufs read as one sequence of bytes, without copying them together (see the file's
/// description). Used by one thread at a time.
class CompositeByteBuf {
 public:
  /// Thread-safe. Empty; consolidation and write_bytes() allocate from `allocator`.
  explicit CompositeByteBuf(ByteBufAllocator& allocator = default_allocator(), std::size_t max_components = 16);
  /// Takes `other`'s components; owner only (of both).
  CompositeByteBuf(CompositeByteBuf&&) noexcept = default;
  /// Releases the components held, then takes `other`'s; owner only (of both).
  CompositeByteBuf& operator=(CompositeByteBuf&&) noexcept = default;
  CompositeByteBuf(const CompositeByteBuf&) = delete;
  CompositeByteBuf& operator=(const CompositeByteBuf&) = delete;

  // ---- components --------------------------------------------------------------------------------

  /// Owner only. Appends buf's readable bytes (sharing them; buf is consumed). An unreadable buffer
  /// is dropped. Past max_components, everything unread is consolidated into one component.
  void add_component(ByteBuf&& buf);
  /// Owner only. Copies n bytes to the end (into a tail buffer the composite allocates).
  void write_bytes(const void* data, std::size_t n);
  /// Owner only.
  void write_bytes(std::string_view bytes) { write_bytes(bytes.data(), bytes.size()); }
  /// Const, owner only.
  std::size_t num_components() const noexcept { return components_.size(); }
  /// Const, owner only. Component i; its readable bytes are the composite's bytes at
  /// [component_offset(i), component_offset(i) + readable_bytes()).
  const ByteBuf& component(std::size_t i) const { return components_.at(i).buf; }
  /// Const, owner only.
  std::size_t component_offset(std::size_t i) const { return components_.at(i).offset; }
  /// Owner only. Copies the unread bytes into one new buffer, which becomes the only component (the
  /// reader index becomes 0). No-op with one component or none.
  void consolidate();
  /// Owner only. Drops components that have been read completely (their references go); indices
  /// shift down by the bytes dropped.
  void discard_read_components();
  /// Owner only. Moves the unread bytes out as one ByteBuf: the component itself when exactly one is
  /// left (zero-copy), a consolidated copy otherwise. The composite is empty afterwards.
  ByteBuf to_byte_buf();
  /// Owner only. Drops every component.
  void clear() noexcept;

  // ---- indices -----------------------------------------------------------------------------------

  /// Const, owner only.
  std::size_t reader_index() const noexcept { return reader_; }
  /// Const, owner only. Total bytes of all components.
  std::size_t writer_index() const noexcept { return size_; }
  /// Const, owner only.
  std::size_t readable_bytes() const noexcept { return size_ - reader_; }
  /// Const, owner only.
  bool is_readable(std::size_t n = 1) const noexcept { return n <= readable_bytes(); }
  /// Owner only. Throws std::out_of_range unless index <= writer_index().
  void set_reader_index(std::size_t index);
  /// Owner only. Throws std::out_of_range if n > readable_bytes().
  void skip_bytes(std::size_t n);
  /// Owner only.
  void mark_reader_index() noexcept { marked_reader_ = reader_; }
  /// Owner only. Throws std::out_of_range if the mark is past writer_index() (after discards).
  void reset_reader_index() { set_reader_index(marked_reader_); }

  // ---- reading across components -----------------------------------------------------------------

  /// Owner only. Copies the next n bytes to dst and advances; throws std::out_of_range (reading
  /// nothing) if n > readable_bytes().
  void read_bytes(void* dst, std::size_t n);
  /// Owner only. The next n bytes as a string.
  std::string read_string(std::size_t n);
  /// Owner only. The next n bytes as a ByteBuf: a slice of one component when they lie inside it
  /// (zero-copy), a copy otherwise.
  ByteBuf read_slice(std::size_t n);
  /// Const, owner only. Copies n bytes from absolute index; throws std::out_of_range past writer_index().
  void get_bytes(std::size_t index, void* dst, std::size_t n) const;

  /// @name Integers: read_*
  //@{
  /// Owner only. Consumes an integer at the reader, big-endian (`_le`: little-endian), across components; throws std::out_of_range past readable_bytes().
  std::uint8_t read_u8() { return read_int<std::uint8_t, false>(); }
  std::uint16_t read_u16() { return read_int<std::uint16_t, false>(); }
  std::uint32_t read_u32() { return read_int<std::uint32_t, false>(); }
  std::uint64_t read_u64() { return read_int<std::uint64_t, false>(); }
  std::uint16_t read_u16_le() { return read_int<std::uint16_t, true>(); }
  std::uint32_t read_u32_le() { return read_int<std::uint32_t, true>(); }
  std::uint64_t read_u64_le() { return read_int<std::uint64_t, true>(); }
  //@}
  /// @name Integers: get_*
  //@{
  /// Const, owner only. The integer at absolute `index`, big-endian (`_le`: little-endian); moves no index; throws std::out_of_range past writer_index().
  std::uint8_t get_u8(std::size_t index) const { return get_int<std::uint8_t, false>(index); }
  std::uint16_t get_u16(std::size_t index) const { return get_int<std::uint16_t, false>(index); }
  std::uint32_t get_u32(std::size_t index) const { return get_int<std::uint32_t, false>(index); }
  std::uint64_t get_u64(std::size_t index) const { return get_int<std::uint64_t, false>(index); }
  std::uint16_t get_u16_le(std::size_t index) const { return get_int<std::uint16_t, true>(index); }
  std::uint32_t get_u32_le(std::size_t index) const { return get_int<std::uint32_t, true>(index); }
  std::uint64_t get_u64_le(std::size_t index) const { return get_int<std::uint64_t, true>(index); }
  //@}

  /// Const, owner only. Absolute index of the first `value` among the readable bytes, or -1.
  std::ptrdiff_t index_of(std::uint8_t value) const noexcept;
  /// Const, owner only. Absolute index where `needle` first starts among the readable bytes (it may
  /// span components), or -1. An empty needle matches at reader_index().
  std::ptrdiff_t index_of(std::string_view needle) const;
  /// Const, owner only. Calls f(std::uint8_t) on each readable byte until it returns false; returns
  /// the absolute index of that byte, or -1.
  template <class F>
  std::ptrdiff_t for_each_byte(F&& f) const {
    for (std::size_t i = first_component(reader_); i < components_.size(); ++i) {
      const Component& c = components_[i];
      const std::size_t from = reader_ > c.offset ? reader_ - c.offset : 0;
      const std::uint8_t* p = c.buf.read_ptr();
      for (std::size_t j = from; j < c.buf.readable_bytes(); ++j) {
        if (!f(p[j])) return static_cast<std::ptrdiff_t>(c.offset + j);
      }
    }
    return -1;
  }
  /// Const, owner only. A copy of the readable bytes.
  std::string to_string() const;

  // ---- export ------------------------------------------------------------------------------------

  /// Const, owner only. Fills up to max iovecs with the readable bytes, in order; returns how many
  /// it filled (fewer than needed when max is too small: count_iovecs() tells).
  std::size_t fill_iovecs(::iovec* out, std::size_t max) const noexcept;
  /// Const, owner only. Iovecs needed for all readable bytes.
  std::size_t count_iovecs() const noexcept;

 private:
  struct Component {
    ByteBuf buf;         ///< its readable bytes are the component's bytes
    std::size_t offset;  ///< index of its first byte in the composite
  };

  // Index of the component holding absolute index `index` (< size_), or components_.size().
  std::size_t first_component(std::size_t index) const noexcept;
  [[noreturn]] static void throw_range(const char* op, std::size_t index, std::size_t n, std::size_t bound);

  template <class T, bool kLittle>
  T get_int(std::size_t index) const {
    T v;
    get_bytes(index, &v, sizeof(T));
    return swap_if_needed<T, kLittle>(v);
  }
  template <class T, bool kLittle>
  T read_int() {
    T v;
    read_bytes(&v, sizeof(T));
    return swap_if_needed<T, kLittle>(v);
  }
  template <class T, bool kLittle>
  static T swap_if_needed(T v) noexcept {
    if constexpr (sizeof(T) > 1) {
      if ((std::endian::native == std::endian::little) != kLittle) {
        if constexpr (sizeof(T) == 2) v = static_cast<T>(__builtin_bswap16(v));
        if constexpr (sizeof(T) == 4) v = static_cast<T>(__builtin_bswap32(v));
        if constexpr (sizeof(T) == 8) v = static_cast<T>(__builtin_bswap64(v));
      }
    }
    return v;
  }

  ByteBufAllocator* allocator_;
  std::size_t max_components_;
  std::vector<Component> components_;
  std::size_t reader_ = 0;
  std::size_t size_ = 0;
  std::size_t marked_reader_ = 0;
  bool tail_owned_ = false;  // the last component is a buffer write_bytes() allocated (may append)
};

}  // namespace weft
