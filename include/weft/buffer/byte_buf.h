#pragma once
/// @file
/// ByteBuf: a move-only handle on a reference-counted block of bytes (ByteBufStorage) made by a
/// ByteBufAllocator, with a reader index and a writer index over a window of that block.
///
///      +-------------------+------------------+------------------+
///      | discardable bytes |  readable bytes  |  writable bytes  |
///      +-------------------+------------------+------------------+
///      |                   |                  |                  |
///      0      <=      reader_index   <=   writer_index    <=    capacity   (<= max_capacity)
///
/// Ownership: each handle owns exactly one reference to its storage block. Destroying the handle (or
/// release()) drops it; when the last reference goes, the block returns to the allocator that made it,
/// on whichever thread dropped it. slice() and duplicate() make new handles on the same block (they take
/// a reference; writes through one are visible through the others). A slice has a fixed window and
/// cannot grow. A buffer that grows while its block is shared moves to a new block ("copy on grow"): the
/// slices keep the old bytes, the grown buffer no longer shares memory with them.
///
/// Thread contract: a handle is not thread-safe; one thread at a time uses it (it may move between
/// threads). Methods marked "Owner only" need that exclusive use; "const, owner only" methods may run
/// concurrently with other const calls on the same handle. Handles on the same block may live and die
/// on different threads: the reference count is atomic.
///
/// Retained variants: Netty's retainedSlice()/retainedDuplicate() are simply slice()/duplicate() here,
/// since every handle owns its reference; there is no non-retained slice to misuse.
///
/// Read-only views (as_read_only()) share the bytes but refuse every content change (write_*, set_*,
/// advance_writer, discard_read_bytes, growth) with std::logic_error; index moves are allowed.
///
/// Errors: index and length violations throw std::out_of_range; growth beyond max_capacity() (and any
/// growth of a slice) throws std::length_error. Absolute get_*/set_* accept any index inside
/// [0, capacity()), as in Netty; read_* accept only readable bytes.

#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include <sys/uio.h>

namespace weft {

class ByteBufAllocator;

/// Initial capacity of ByteBufAllocator::buffer() when none is given.
inline constexpr std::size_t kDefaultInitialCapacity = 256;
/// Hard ceiling of any buffer's capacity (2 GiB - 1, Netty's Integer.MAX_VALUE); larger max_capacity
/// arguments are clamped to it. 31 bits, so that a handle keeps its read-only flag beside a mark.
inline constexpr std::size_t kMaxCapacityLimit = 0x7FFF'FFFFu;
/// Default upper bound for growth (as Netty).
inline constexpr std::size_t kDefaultMaxCapacity = kMaxCapacityLimit;
/// Growth doubles up to this size and then adds this much at a time.
inline constexpr std::size_t kCapacityGrowthThreshold = std::size_t{4} << 20;

/// A block of bytes owned by an allocator and shared by ByteBuf handles.
///
/// The allocator creates it (anywhere it likes: in front of the data in one malloc, in a pool chunk's
/// metadata, ...) with refs == 1 and allocator == itself. ByteBuf retains (relaxed increment) and
/// releases (acq_rel decrement) it; when the count reaches zero, ByteBuf calls
/// allocator->free_storage(block) exactly once, possibly on a thread other than the one that allocated
/// it. The allocator must outlive every block it made. allocator_tag, allocator_context and
/// allocator_handle are for the allocator's own use (e.g. size-class index, owning arena or thread
/// cache, position of the run inside a chunk); ByteBuf never touches them.
struct ByteBufStorage {
  /// A block of `size` bytes at `bytes`, made by `owner`, with one reference.
  ByteBufStorage(ByteBufAllocator* owner, std::uint8_t* bytes, std::size_t size) noexcept
      : allocator(owner), data(bytes), capacity(size) {}
  ByteBufStorage(const ByteBufStorage&) = delete;
  ByteBufStorage& operator=(const ByteBufStorage&) = delete;

  /// The reference count: one per ByteBuf handle on the block.
  std::atomic<std::uint32_t> refs{1};
  /// For the allocator's own use.
  std::uint32_t allocator_tag = 0;
  /// The allocator that made the block and takes it back (free_storage).
  ByteBufAllocator* allocator;
  /// The first byte of the block.
  std::uint8_t* data;
  std::size_t capacity;  ///< usable bytes at data (may exceed what was asked for)
  /// For the allocator's own use.
  void* allocator_context = nullptr;
  /// For the allocator's own use.
  std::uint64_t allocator_handle = 0;
  /// Owned by the leak detector (leak_detector.h): its record of this block when the block is tracked,
  /// null otherwise. Allocators leave it alone (a constructor sets it to null; ByteBufAllocator's
  /// wrappers carry it across reallocate_storage).
  void* leak_record = nullptr;
};

/// A move-only handle on a reference-counted block of bytes, with a reader and a writer index
/// (see the file's description for ownership, the thread contract and errors).
class ByteBuf {
 public:
  /// Thread-safe. An empty handle: no storage, capacity 0, max capacity 0 (writing to it throws).
  ByteBuf() noexcept = default;
  /// Thread-safe (touches only the handles involved). Moves the reference; `other` becomes empty.
  ByteBuf(ByteBuf&& other) noexcept
      : storage_(other.storage_),
        base_(other.base_),
        reader_(other.reader_),
        writer_(other.writer_),
        capacity_(other.capacity_),
        max_capacity_(other.max_capacity_),
        marked_reader_(other.marked_reader_),
        marked_writer_(other.marked_writer_),
        read_only_(other.read_only_) {
    other.reset_fields();
  }
  /// Owner only. Releases this handle's reference, then takes `other`'s; `other` becomes empty.
  ByteBuf& operator=(ByteBuf&& other) noexcept {
    if (this != &other) {
      release();
      storage_ = other.storage_;
      base_ = other.base_;
      reader_ = other.reader_;
      writer_ = other.writer_;
      capacity_ = other.capacity_;
      max_capacity_ = other.max_capacity_;
      marked_reader_ = other.marked_reader_;
      marked_writer_ = other.marked_writer_;
      read_only_ = other.read_only_;
      other.reset_fields();
    }
    return *this;
  }
  ByteBuf(const ByteBuf&) = delete;
  ByteBuf& operator=(const ByteBuf&) = delete;
  /// Owner only. Drops this handle's reference.
  ~ByteBuf() { release(); }

  /// Thread-safe. A new buffer from default_allocator() holding a copy of `bytes` (capacity may be larger).
  static ByteBuf copy_of(std::string_view bytes);
  /// Thread-safe. A new buffer from default_allocator() holding a copy of n bytes at data.
  static ByteBuf copy_of(const void* data, std::size_t n);

  // ---- indices and capacity -------------------------------------------------------------------

  /// Const, owner only. Index of the next byte read_*() returns.
  std::size_t reader_index() const noexcept { return reader_; }
  /// Const, owner only. Index where the next write_*() puts its bytes.
  std::size_t writer_index() const noexcept { return writer_; }
  /// Owner only. Throws std::out_of_range unless index <= writer_index().
  void set_reader_index(std::size_t index) {
    if (index > writer_) throw_index_error("set_reader_index", index, 0, writer_);
    reader_ = static_cast<std::uint32_t>(index);
  }
  /// Owner only. Throws std::out_of_range unless reader_index() <= index <= capacity().
  void set_writer_index(std::size_t index) {
    if (index < reader_ || index > capacity_) throw_index_error("set_writer_index", index, 0, capacity_);
    writer_ = static_cast<std::uint32_t>(index);
  }
  /// Owner only. Sets both; throws std::out_of_range unless reader <= writer <= capacity().
  void set_index(std::size_t reader, std::size_t writer) {
    if (reader > writer || writer > capacity_) throw_index_error("set_index", reader, writer - reader, capacity_);
    reader_ = static_cast<std::uint32_t>(reader);
    writer_ = static_cast<std::uint32_t>(writer);
  }
  /// Owner only. Remembers reader_index() for reset_reader_index() (initially 0).
  void mark_reader_index() noexcept { marked_reader_ = reader_; }
  /// Owner only. Moves the reader back to the mark; throws std::out_of_range if the mark is now past
  /// writer_index().
  void reset_reader_index() { set_reader_index(marked_reader_); }
  /// Owner only. Remembers writer_index() for reset_writer_index() (initially 0).
  void mark_writer_index() noexcept { marked_writer_ = writer_; }
  /// Owner only. Moves the writer back to the mark; throws std::out_of_range if the mark is now before
  /// reader_index() or past capacity().
  void reset_writer_index() { set_writer_index(marked_writer_); }
  /// Const, owner only. Bytes in this handle's window (grows with ensure_writable()).
  std::size_t capacity() const noexcept { return capacity_; }
  /// Const, owner only. The capacity growth may reach; equals capacity() for slices.
  std::size_t max_capacity() const noexcept { return max_capacity_; }
  /// Const, owner only. writer_index() - reader_index().
  std::size_t readable_bytes() const noexcept { return writer_ - reader_; }
  /// What a queued buffer counts for in bounds on messages (see weft::message_size).
  std::size_t message_size() const noexcept { return readable_bytes(); }
  /// Const, owner only. capacity() - writer_index(): bytes writable without growing.
  std::size_t writable_bytes() const noexcept { return capacity_ - writer_; }
  /// Const, owner only. max_capacity() - writer_index(): bytes writable with growth.
  std::size_t max_writable_bytes() const noexcept { return max_capacity_ - writer_; }
  /// Const, owner only. readable_bytes() > 0.
  bool is_readable() const noexcept { return writer_ > reader_; }
  /// Const, owner only. readable_bytes() >= n.
  bool is_readable(std::size_t n) const noexcept { return n <= readable_bytes(); }
  /// Const, owner only. writable_bytes() >= n (without growing).
  bool is_writable(std::size_t n = 1) const noexcept { return n <= writable_bytes(); }

  // ---- raw access ------------------------------------------------------------------------------

  /// Const, owner only. Start of this handle's window (index 0); null for an empty handle.
  const std::uint8_t* data() const noexcept { return base_; }
  /// Owner only. Start of this handle's window (index 0); null for an empty handle.
  std::uint8_t* data() noexcept { return base_; }
  /// Const, owner only. First readable byte; valid until the buffer grows, is released or destroyed.
  const std::uint8_t* read_ptr() const noexcept { return base_ + reader_; }
  /// Owner only. First writable byte (e.g. for recv()); see ensure_writable() and advance_writer().
  std::uint8_t* write_ptr() noexcept { return base_ + writer_; }
  /// Owner only. Commits n bytes written at write_ptr(); throws std::out_of_range if n > writable_bytes(),
  /// std::logic_error on a read-only view.
  void advance_writer(std::size_t n) {
    if (read_only_) throw_read_only("advance_writer");
    if (n > writable_bytes()) throw_index_error("advance_writer", writer_, n, capacity_);
    writer_ += static_cast<std::uint32_t>(n);
  }
  /// Owner only. Advances the reader by n; throws std::out_of_range if n > readable_bytes().
  void skip_bytes(std::size_t n) {
    if (n > readable_bytes()) throw_index_error("skip_bytes", reader_, n, writer_);
    reader_ += static_cast<std::uint32_t>(n);
  }
  /// Owner only. Makes writable_bytes() >= n, growing the storage (doubling from 64 up to
  /// kCapacityGrowthThreshold, then in steps of it, capped at max_capacity()). Throws std::length_error
  /// when n > max_writable_bytes() (always for a slice that lacks room); std::bad_alloc on allocation
  /// failure. Either way the buffer is unchanged. Invalidates read_ptr()/write_ptr()/data() on growth.
  void ensure_writable(std::size_t n) {
    if (n > writable_bytes() || read_only_) [[unlikely]] prepare_write(n);
  }
  /// Owner only. reader_index = writer_index = 0 (the bytes stay in place).
  void clear() noexcept { reader_ = writer_ = 0; }
  /// Owner only. Moves the readable bytes to index 0 (memmove; visible to handles sharing the block);
  /// marks move with them (clamped at 0). Throws std::logic_error on a read-only view.
  void discard_read_bytes();

  // ---- integers: big-endian (network order) by default, *_le for little-endian -----------------
  // Owner only, all of them. write_* append at the writer (growing as ensure_writable());
  // read_* consume at the reader and throw std::out_of_range past readable_bytes();
  // get_*/set_* work at an absolute index in [0, capacity()) and move no index.

  /// @name Integers: write_*
  //@{
  /// Owner only. Appends `v` at the writer, big-endian (`_le`: little-endian), growing as ensure_writable() does.
  void write_u8(std::uint8_t v) { write_int<std::uint8_t, false>(v); }
  void write_u16(std::uint16_t v) { write_int<std::uint16_t, false>(v); }
  void write_u32(std::uint32_t v) { write_int<std::uint32_t, false>(v); }
  void write_u64(std::uint64_t v) { write_int<std::uint64_t, false>(v); }
  void write_u16_le(std::uint16_t v) { write_int<std::uint16_t, true>(v); }
  void write_u32_le(std::uint32_t v) { write_int<std::uint32_t, true>(v); }
  void write_u64_le(std::uint64_t v) { write_int<std::uint64_t, true>(v); }
  void write_i8(std::int8_t v) { write_u8(static_cast<std::uint8_t>(v)); }
  void write_i16(std::int16_t v) { write_u16(static_cast<std::uint16_t>(v)); }
  void write_i32(std::int32_t v) { write_u32(static_cast<std::uint32_t>(v)); }
  void write_i64(std::int64_t v) { write_u64(static_cast<std::uint64_t>(v)); }
  void write_i16_le(std::int16_t v) { write_u16_le(static_cast<std::uint16_t>(v)); }
  void write_i32_le(std::int32_t v) { write_u32_le(static_cast<std::uint32_t>(v)); }
  void write_i64_le(std::int64_t v) { write_u64_le(static_cast<std::uint64_t>(v)); }
  //@}

  /// @name Integers: read_*
  //@{
  /// Owner only. Consumes an integer at the reader, big-endian (`_le`: little-endian); throws std::out_of_range past readable_bytes().
  std::uint8_t read_u8() { return read_int<std::uint8_t, false>(); }
  std::uint16_t read_u16() { return read_int<std::uint16_t, false>(); }
  std::uint32_t read_u32() { return read_int<std::uint32_t, false>(); }
  std::uint64_t read_u64() { return read_int<std::uint64_t, false>(); }
  std::uint16_t read_u16_le() { return read_int<std::uint16_t, true>(); }
  std::uint32_t read_u32_le() { return read_int<std::uint32_t, true>(); }
  std::uint64_t read_u64_le() { return read_int<std::uint64_t, true>(); }
  std::int8_t read_i8() { return static_cast<std::int8_t>(read_u8()); }
  std::int16_t read_i16() { return static_cast<std::int16_t>(read_u16()); }
  std::int32_t read_i32() { return static_cast<std::int32_t>(read_u32()); }
  std::int64_t read_i64() { return static_cast<std::int64_t>(read_u64()); }
  std::int16_t read_i16_le() { return static_cast<std::int16_t>(read_u16_le()); }
  std::int32_t read_i32_le() { return static_cast<std::int32_t>(read_u32_le()); }
  std::int64_t read_i64_le() { return static_cast<std::int64_t>(read_u64_le()); }
  //@}

  /// @name Integers: get_*
  //@{
  /// Const, owner only. The integer at absolute `index`, big-endian (`_le`: little-endian); moves no index; throws std::out_of_range outside [0, capacity()).
  std::uint8_t get_u8(std::size_t index) const { return get_int<std::uint8_t, false>(index); }
  std::uint16_t get_u16(std::size_t index) const { return get_int<std::uint16_t, false>(index); }
  std::uint32_t get_u32(std::size_t index) const { return get_int<std::uint32_t, false>(index); }
  std::uint64_t get_u64(std::size_t index) const { return get_int<std::uint64_t, false>(index); }
  std::uint16_t get_u16_le(std::size_t index) const { return get_int<std::uint16_t, true>(index); }
  std::uint32_t get_u32_le(std::size_t index) const { return get_int<std::uint32_t, true>(index); }
  std::uint64_t get_u64_le(std::size_t index) const { return get_int<std::uint64_t, true>(index); }
  std::int8_t get_i8(std::size_t index) const { return static_cast<std::int8_t>(get_u8(index)); }
  std::int16_t get_i16(std::size_t index) const { return static_cast<std::int16_t>(get_u16(index)); }
  std::int32_t get_i32(std::size_t index) const { return static_cast<std::int32_t>(get_u32(index)); }
  std::int64_t get_i64(std::size_t index) const { return static_cast<std::int64_t>(get_u64(index)); }
  std::int16_t get_i16_le(std::size_t index) const { return static_cast<std::int16_t>(get_u16_le(index)); }
  std::int32_t get_i32_le(std::size_t index) const { return static_cast<std::int32_t>(get_u32_le(index)); }
  std::int64_t get_i64_le(std::size_t index) const { return static_cast<std::int64_t>(get_u64_le(index)); }
  //@}

  /// @name Integers: set_*
  //@{
  /// Owner only. Stores `v` at absolute `index`, big-endian (`_le`: little-endian); moves no index; throws std::out_of_range outside [0, capacity()), std::logic_error on a read-only view.
  void set_u8(std::size_t index, std::uint8_t v) { set_int<std::uint8_t, false>(index, v); }
  void set_u16(std::size_t index, std::uint16_t v) { set_int<std::uint16_t, false>(index, v); }
  void set_u32(std::size_t index, std::uint32_t v) { set_int<std::uint32_t, false>(index, v); }
  void set_u64(std::size_t index, std::uint64_t v) { set_int<std::uint64_t, false>(index, v); }
  void set_u16_le(std::size_t index, std::uint16_t v) { set_int<std::uint16_t, true>(index, v); }
  void set_u32_le(std::size_t index, std::uint32_t v) { set_int<std::uint32_t, true>(index, v); }
  void set_u64_le(std::size_t index, std::uint64_t v) { set_int<std::uint64_t, true>(index, v); }
  void set_i8(std::size_t index, std::int8_t v) { set_u8(index, static_cast<std::uint8_t>(v)); }
  void set_i16(std::size_t index, std::int16_t v) { set_u16(index, static_cast<std::uint16_t>(v)); }
  void set_i32(std::size_t index, std::int32_t v) { set_u32(index, static_cast<std::uint32_t>(v)); }
  void set_i64(std::size_t index, std::int64_t v) { set_u64(index, static_cast<std::uint64_t>(v)); }
  void set_i16_le(std::size_t index, std::int16_t v) { set_u16_le(index, static_cast<std::uint16_t>(v)); }
  void set_i32_le(std::size_t index, std::int32_t v) { set_u32_le(index, static_cast<std::uint32_t>(v)); }
  void set_i64_le(std::size_t index, std::int64_t v) { set_u64_le(index, static_cast<std::uint64_t>(v)); }
  //@}

  // ---- byte ranges -----------------------------------------------------------------------------

  /// Owner only. Appends n bytes from data (which may point into this buffer), growing as needed.
  void write_bytes(const void* data, std::size_t n);
  /// Owner only. Appends the bytes of `bytes`.
  void write_bytes(std::string_view bytes) { write_bytes(bytes.data(), bytes.size()); }
  /// Owner only (of both). Appends src's readable bytes; src (which may be *this) is unchanged.
  void write_bytes(const ByteBuf& src);
  /// Owner only. Appends n zero bytes.
  void write_zero(std::size_t n);
  /// Owner only. Copies the next n readable bytes to dst and advances the reader; throws
  /// std::out_of_range (reading nothing) if n > readable_bytes().
  void read_bytes(void* dst, std::size_t n);
  /// Const, owner only. Copies n bytes from absolute index to dst; throws std::out_of_range past capacity().
  void get_bytes(std::size_t index, void* dst, std::size_t n) const;
  /// Owner only. Copies n bytes from src to absolute index; throws std::out_of_range past capacity().
  void set_bytes(std::size_t index, const void* src, std::size_t n);
  /// Owner only. set_bytes(index, bytes.data(), bytes.size()).
  void set_bytes(std::size_t index, std::string_view bytes) { set_bytes(index, bytes.data(), bytes.size()); }
  /// Owner only (of both). Moves the next n readable bytes to the end of dst (growing it) and advances
  /// this reader; throws std::out_of_range (moving nothing) if n > readable_bytes().
  void read_bytes(ByteBuf& dst, std::size_t n);
  /// Owner only. The next n readable bytes as a string; advances the reader. Throws std::out_of_range
  /// (reading nothing) if n > readable_bytes().
  std::string read_string(std::size_t n);
  /// Const, owner only. n bytes at absolute index as a string; throws std::out_of_range past capacity().
  std::string get_string(std::size_t index, std::size_t n) const;
  /// Owner only. Appends the bytes of s (an alias of write_bytes(std::string_view)).
  void write_string(std::string_view s) { write_bytes(s); }

  // ---- sharing ---------------------------------------------------------------------------------

  /// Const, owner only. A handle on [index, index + length) of this window, sharing the memory and
  /// taking a reference: reader 0, writer = capacity = max_capacity = length. Throws std::out_of_range
  /// past capacity(). An empty handle gives an empty handle.
  ByteBuf slice(std::size_t index, std::size_t length) const;
  /// Const, owner only. slice(reader_index(), readable_bytes()).
  ByteBuf slice() const { return slice(reader_, readable_bytes()); }
  /// Owner only. slice(reader_index(), n), then skip_bytes(n). Throws std::out_of_range if n > readable_bytes().
  ByteBuf read_slice(std::size_t n);
  /// Const, owner only. A handle on the same window with the same indices and max capacity, taking a
  /// reference. It can grow if this can (growing then moves it to a block of its own).
  ByteBuf duplicate() const;
  /// Const, owner only. A handle on the same window and indices that shares the bytes, takes a
  /// reference and refuses content changes (std::logic_error); its slices and duplicates are read-only
  /// too. max_capacity() == capacity(): it never grows.
  ByteBuf as_read_only() const;
  /// Const, owner only. Whether this handle refuses content changes.
  bool is_read_only() const noexcept { return read_only_; }
  /// Const, owner only. A new, independent buffer from the same allocator (default_allocator() for an
  /// empty handle) holding a copy of the readable bytes; reader 0, max capacity kDefaultMaxCapacity (or
  /// the length, if larger).
  ByteBuf copy() const;

  // ---- search ----------------------------------------------------------------------------------

  /// Const, owner only. Absolute index of the first `value` among the readable bytes, or -1.
  std::ptrdiff_t index_of(std::uint8_t value) const noexcept;
  /// Const, owner only. Absolute index of the first `value` in [from, to), or -1; throws
  /// std::out_of_range unless from <= to <= capacity().
  std::ptrdiff_t index_of(std::uint8_t value, std::size_t from, std::size_t to) const;
  /// Const, owner only. Absolute index of the last `value` among the readable bytes, or -1.
  std::ptrdiff_t last_index_of(std::uint8_t value) const noexcept;
  /// Const, owner only. Absolute index where `needle` first starts among the readable bytes, or -1.
  /// An empty needle matches at reader_index().
  std::ptrdiff_t index_of(std::string_view needle) const noexcept;
  /// Const, owner only. As above within [from, to); throws std::out_of_range unless from <= to <= capacity().
  std::ptrdiff_t index_of(std::string_view needle, std::size_t from, std::size_t to) const;
  /// Const, owner only. Calls f(std::uint8_t) on each readable byte in order until it returns false;
  /// returns the absolute index of that byte, or -1 if f accepted every byte.
  template <class F>
  std::ptrdiff_t for_each_byte(F&& f) const {
    return for_each_byte(reader_, writer_, f);
  }
  /// Const, owner only. As above over [from, to); throws std::out_of_range unless from <= to <= capacity().
  template <class F>
  std::ptrdiff_t for_each_byte(std::size_t from, std::size_t to, F&& f) const {
    if (from > to || to > capacity_) throw_index_error("for_each_byte", from, to - from, capacity_);
    for (std::size_t i = from; i < to; ++i) {
      if (!f(base_[i])) return static_cast<std::ptrdiff_t>(i);
    }
    return -1;
  }

  // ---- views and conversion --------------------------------------------------------------------

  /// Const, owner only. The readable bytes; valid until the buffer changes storage or is released.
  std::string_view view() const noexcept {
    return {reinterpret_cast<const char*>(base_ + reader_), readable_bytes()};
  }
  /// Const, owner only. A copy of the readable bytes.
  std::string to_string() const { return std::string(view()); }
  /// Const, owner only. The readable bytes as lowercase hex, two digits per byte, no separators.
  std::string hex_dump() const;
  /// Const, owner only. The readable bytes as one iovec for writev/sendmsg (iov_len 0 when none); valid
  /// until the buffer changes storage or is released. A ByteBuf is always one contiguous range; see
  /// CompositeByteBuf::fill_iovecs for several.
  ::iovec readable_iovec() const noexcept {
    return {const_cast<std::uint8_t*>(base_ + reader_), readable_bytes()};
  }

  // ---- leak detection ---------------------------------------------------------------------------

  /// Owner only. Records `hint` and the caller as the last place this buffer was touched, when the
  /// leak detector tracks its block (see leak_detector.h); otherwise costs one branch.
  void touch(const char* hint = nullptr) noexcept {
    if (storage_ != nullptr && storage_->leak_record != nullptr) [[unlikely]] {
      touch_slow(hint, __builtin_return_address(0));
    }
  }

  // ---- reference and storage -------------------------------------------------------------------

  /// Const, owner only. References held on this handle's storage by all handles (0 for an empty
  /// handle). A snapshot: other threads may change it at any moment.
  std::uint32_t ref_count() const noexcept {
    return storage_ != nullptr ? storage_->refs.load(std::memory_order_acquire) : 0;
  }
  /// Const, owner only. Whether this handle holds a reference to a storage block.
  bool has_storage() const noexcept { return storage_ != nullptr; }
  /// Const, owner only. The allocator that made the storage, or null for an empty handle.
  ByteBufAllocator* allocator() const noexcept { return storage_ != nullptr ? storage_->allocator : nullptr; }
  /// Const, owner only. Whether `other` uses the same storage block as this (e.g. a slice of it).
  bool shares_storage_with(const ByteBuf& other) const noexcept {
    return storage_ != nullptr && storage_ == other.storage_;
  }
  /// Owner only. Drops this handle's reference now (freeing the block if it was the last one); the
  /// handle becomes empty. Idempotent.
  void release() noexcept {
    if (storage_ != nullptr) {
      release_storage(storage_);
      reset_fields();
    }
  }
  /// Owner only (of both). Exchanges the two handles.
  void swap(ByteBuf& other) noexcept;

 private:
  friend class ByteBufAllocator;

  ByteBuf(ByteBufStorage* storage, std::uint8_t* base, std::size_t reader, std::size_t writer,
          std::size_t capacity, std::size_t max_capacity, bool read_only = false) noexcept
      : storage_(storage),
        base_(base),
        reader_(static_cast<std::uint32_t>(reader)),
        writer_(static_cast<std::uint32_t>(writer)),
        capacity_(static_cast<std::uint32_t>(capacity)),
        max_capacity_(static_cast<std::uint32_t>(max_capacity)),
        read_only_(read_only ? 1u : 0u) {}

  void reset_fields() noexcept {
    storage_ = nullptr;
    base_ = nullptr;
    reader_ = writer_ = capacity_ = max_capacity_ = 0;
    marked_reader_ = 0;
    marked_writer_ = 0;
    read_only_ = 0;
  }
  void prepare_write(std::size_t n);
  void touch_slow(const char* hint, const void* caller) noexcept;
  [[noreturn]] static void throw_read_only(const char* op);
  static void release_storage(ByteBufStorage* storage) noexcept {
    // A count of 1 is ours alone: no other handle exists that could change it concurrently, so the
    // common case (a buffer that never had a slice) skips the atomic read-modify-write. The acquire
    // load orders our free after the releases of handles that other threads dropped earlier.
    if (storage->refs.load(std::memory_order_acquire) == 1) {
      storage->refs.store(0, std::memory_order_relaxed);  // allocators get blocks whose count is 0
      return_to_allocator(storage);
    } else if (storage->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      return_to_allocator(storage);
    }
  }
  static void return_to_allocator(ByteBufStorage* storage) noexcept;
  void grow_for(std::size_t n);
  [[noreturn]] static void throw_index_error(const char* op, std::size_t index, std::size_t length,
                                             std::size_t bound);

  template <class T>
  static T byte_swap(T v) noexcept {
    if constexpr (sizeof(T) == 1) {
      return v;
    } else if constexpr (sizeof(T) == 2) {
      return static_cast<T>(__builtin_bswap16(v));
    } else if constexpr (sizeof(T) == 4) {
      return static_cast<T>(__builtin_bswap32(v));
    } else {
      static_assert(sizeof(T) == 8);
      return static_cast<T>(__builtin_bswap64(v));
    }
  }
  template <class T, bool kLittle>
  static T load(const std::uint8_t* p) noexcept {
    T v;
    std::memcpy(&v, p, sizeof(T));
    if ((std::endian::native == std::endian::little) != kLittle) v = byte_swap(v);
    return v;
  }
  template <class T, bool kLittle>
  static void store(std::uint8_t* p, T v) noexcept {
    if ((std::endian::native == std::endian::little) != kLittle) v = byte_swap(v);
    std::memcpy(p, &v, sizeof(T));
  }
  template <class T, bool kLittle>
  void write_int(T v) {
    ensure_writable(sizeof(T));
    store<T, kLittle>(base_ + writer_, v);
    writer_ += static_cast<std::uint32_t>(sizeof(T));
  }
  template <class T, bool kLittle>
  T read_int() {
    if (sizeof(T) > readable_bytes()) throw_index_error("read", reader_, sizeof(T), writer_);
    T v = load<T, kLittle>(base_ + reader_);
    reader_ += static_cast<std::uint32_t>(sizeof(T));
    return v;
  }
  template <class T, bool kLittle>
  T get_int(std::size_t index) const {
    if (sizeof(T) > capacity_ || index > capacity_ - sizeof(T)) {
      throw_index_error("get", index, sizeof(T), capacity_);
    }
    return load<T, kLittle>(base_ + index);
  }
  template <class T, bool kLittle>
  void set_int(std::size_t index, T v) {
    if (read_only_) throw_read_only("set");
    if (sizeof(T) > capacity_ || index > capacity_ - sizeof(T)) {
      throw_index_error("set", index, sizeof(T), capacity_);
    }
    store<T, kLittle>(base_ + index, v);
  }

  // 40 bytes: indices are 32-bit because capacity never exceeds kMaxCapacityLimit (31 bits, which
  // leaves room for the read-only flag beside the writer mark).
  ByteBufStorage* storage_ = nullptr;
  std::uint8_t* base_ = nullptr;  // index 0 of this handle's window
  std::uint32_t reader_ = 0;
  std::uint32_t writer_ = 0;
  std::uint32_t capacity_ = 0;
  std::uint32_t max_capacity_ = 0;
  std::uint32_t marked_reader_ = 0;
  std::uint32_t marked_writer_ : 31 = 0;
  std::uint32_t read_only_ : 1 = 0;
};

/// Owner only (of both). Exchanges two handles.
inline void swap(ByteBuf& a, ByteBuf& b) noexcept { a.swap(b); }

}  // namespace weft
