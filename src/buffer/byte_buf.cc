#include "weft/buffer/byte_buf.h"

#include <algorithm>
#include <cassert>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

#include "weft/buffer/byte_buf_allocator.h"
#include "weft/buffer/leak_detector.h"

namespace weft {

static_assert(sizeof(ByteBuf) <= 40, "ByteBuf travels through pipelines by move; keep it small");
static_assert(kMaxCapacityLimit <= 0x7FFF'FFFFu, "indices are 31-bit (marks share a word with the read-only flag)");
static_assert(kDefaultMaxCapacity <= kMaxCapacityLimit);

ByteBuf ByteBuf::copy_of(std::string_view bytes) { return copy_of(bytes.data(), bytes.size()); }

ByteBuf ByteBuf::copy_of(const void* data, std::size_t n) {
  if (n > kMaxCapacityLimit) {
    throw std::length_error("ByteBuf::copy_of: " + std::to_string(n) + " bytes exceed kMaxCapacityLimit");
  }
  ByteBuf buf = default_allocator().buffer(n, std::max(n, kDefaultMaxCapacity));
  if (n > 0) std::memcpy(buf.base_, data, n);
  buf.writer_ = static_cast<std::uint32_t>(n);
  return buf;
}

void ByteBuf::discard_read_bytes() {
  if (read_only_) throw_read_only("discard_read_bytes");
  if (reader_ == 0) return;
  const std::size_t readable = readable_bytes();
  if (readable > 0) std::memmove(base_, base_ + reader_, readable);
  const std::uint32_t shift = reader_;
  marked_reader_ = marked_reader_ > shift ? marked_reader_ - shift : 0;
  marked_writer_ = marked_writer_ > shift ? marked_writer_ - shift : 0;
  writer_ = static_cast<std::uint32_t>(readable);
  reader_ = 0;
}

void ByteBuf::prepare_write(std::size_t n) {
  if (read_only_) throw_read_only("write");
  if (n > writable_bytes()) grow_for(n);
}

void ByteBuf::throw_read_only(const char* op) {
  throw std::logic_error(std::string("ByteBuf::") + op + ": the buffer is a read-only view");
}

void ByteBuf::touch_slow(const char* hint, const void* caller) noexcept {
  detail::leak_touch(storage_, hint, caller);
}

void ByteBuf::grow_for(std::size_t n) {
  if (n > max_writable_bytes()) {
    throw std::length_error("ByteBuf::ensure_writable: " + std::to_string(n) + " bytes requested, writer_index " +
                            std::to_string(writer_) + ", max_capacity " + std::to_string(max_capacity_) +
                            (capacity_ == max_capacity_ && storage_ != nullptr && base_ != storage_->data
                                 ? " (a slice cannot grow)"
                                 : ""));
  }
  // Here max_capacity_ > capacity_, so this is a growable handle (not a slice, not empty) whose window
  // starts at the block's start.
  assert(storage_ != nullptr && base_ == storage_->data);
  const std::size_t target = ByteBufAllocator::calculate_new_capacity(std::size_t{writer_} + n, max_capacity_);
  ByteBufStorage* const old = storage_;
  ByteBufAllocator* const alloc = old->allocator;
  ByteBufStorage* fresh;
  if (old->refs.load(std::memory_order_acquire) == 1) {
    // Sole owner: nobody else can see the block, so it may be resized in place.
    fresh = alloc->grow_storage(old, target, capacity_);
  } else {
    // Shared with slices or duplicates: copy on grow, leaving them the old block.
    fresh = alloc->new_storage(target, __builtin_return_address(0));
    if (capacity_ > 0) std::memcpy(fresh->data, base_, capacity_);
    release_storage(old);
  }
  assert(fresh->capacity >= target && fresh->refs.load(std::memory_order_relaxed) == 1);
  storage_ = fresh;
  base_ = fresh->data;
  capacity_ = static_cast<std::uint32_t>(std::min<std::size_t>(fresh->capacity, max_capacity_));
}

void ByteBuf::write_bytes(const void* data, std::size_t n) {
  if (n == 0) return;
  const auto* src = static_cast<const std::uint8_t*>(data);
  if (read_only_) throw_read_only("write_bytes");
  if (n > writable_bytes()) {
    // Growth may move the storage; if data points into it, follow the bytes to their new place.
    const auto addr = reinterpret_cast<std::uintptr_t>(src);
    const auto lo = reinterpret_cast<std::uintptr_t>(base_);
    const bool inside = storage_ != nullptr && addr >= lo && addr < lo + capacity_;
    const std::size_t offset = inside ? addr - lo : 0;
    grow_for(n);
    if (inside) src = base_ + offset;
  }
  std::memmove(base_ + writer_, src, n);
  writer_ += static_cast<std::uint32_t>(n);
}

void ByteBuf::write_bytes(const ByteBuf& src) {
  if (&src == this) {
    const std::size_t n = readable_bytes();
    ensure_writable(n);
    if (n > 0) std::memcpy(base_ + writer_, base_ + reader_, n);  // [reader, writer) and [writer, +n) are disjoint
    writer_ += static_cast<std::uint32_t>(n);
    return;
  }
  write_bytes(src.read_ptr(), src.readable_bytes());
}

void ByteBuf::write_zero(std::size_t n) {
  if (n == 0) return;
  ensure_writable(n);
  std::memset(base_ + writer_, 0, n);
  writer_ += static_cast<std::uint32_t>(n);
}

void ByteBuf::read_bytes(void* dst, std::size_t n) {
  if (n > readable_bytes()) throw_index_error("read_bytes", reader_, n, writer_);
  if (n > 0) std::memcpy(dst, base_ + reader_, n);
  reader_ += static_cast<std::uint32_t>(n);
}

void ByteBuf::get_bytes(std::size_t index, void* dst, std::size_t n) const {
  if (n > capacity_ || index > capacity_ - n) throw_index_error("get_bytes", index, n, capacity_);
  if (n > 0) std::memcpy(dst, base_ + index, n);
}

void ByteBuf::set_bytes(std::size_t index, const void* src, std::size_t n) {
  if (read_only_) throw_read_only("set_bytes");
  if (n > capacity_ || index > capacity_ - n) throw_index_error("set_bytes", index, n, capacity_);
  if (n > 0) std::memmove(base_ + index, src, n);
}

ByteBuf ByteBuf::slice(std::size_t index, std::size_t length) const {
  if (length > capacity_ || index > capacity_ - length) throw_index_error("slice", index, length, capacity_);
  if (storage_ == nullptr) return ByteBuf();
  storage_->refs.fetch_add(1, std::memory_order_relaxed);
  return ByteBuf(storage_, base_ + index, 0, length, length, length, read_only_);
}

ByteBuf ByteBuf::read_slice(std::size_t n) {
  if (n > readable_bytes()) throw_index_error("read_slice", reader_, n, writer_);
  ByteBuf s = slice(reader_, n);
  reader_ += static_cast<std::uint32_t>(n);
  return s;
}

ByteBuf ByteBuf::duplicate() const {
  if (storage_ == nullptr) return ByteBuf();
  storage_->refs.fetch_add(1, std::memory_order_relaxed);
  ByteBuf d(storage_, base_, reader_, writer_, capacity_, max_capacity_, read_only_);
  d.marked_reader_ = marked_reader_;
  d.marked_writer_ = marked_writer_;
  return d;
}

ByteBuf ByteBuf::as_read_only() const {
  if (storage_ == nullptr) return ByteBuf();
  storage_->refs.fetch_add(1, std::memory_order_relaxed);
  ByteBuf d(storage_, base_, reader_, writer_, capacity_, capacity_, true);
  d.marked_reader_ = marked_reader_;
  d.marked_writer_ = marked_writer_;
  return d;
}

void ByteBuf::read_bytes(ByteBuf& dst, std::size_t n) {
  if (n > readable_bytes()) throw_index_error("read_bytes", reader_, n, writer_);
  if (&dst == this) throw std::invalid_argument("ByteBuf::read_bytes: destination is the source");
  dst.write_bytes(base_ + reader_, n);
  reader_ += static_cast<std::uint32_t>(n);
}

std::string ByteBuf::read_string(std::size_t n) {
  if (n > readable_bytes()) throw_index_error("read_string", reader_, n, writer_);
  std::string s(reinterpret_cast<const char*>(base_ + reader_), n);
  reader_ += static_cast<std::uint32_t>(n);
  return s;
}

std::string ByteBuf::get_string(std::size_t index, std::size_t n) const {
  if (n > capacity_ || index > capacity_ - n) throw_index_error("get_string", index, n, capacity_);
  return std::string(reinterpret_cast<const char*>(base_ + index), n);
}

ByteBuf ByteBuf::copy() const {
  ByteBufAllocator& alloc = storage_ != nullptr ? *storage_->allocator : default_allocator();
  const std::size_t n = readable_bytes();
  ByteBuf out = alloc.buffer(n, std::max(n, kDefaultMaxCapacity));
  if (n > 0) std::memcpy(out.base_, base_ + reader_, n);
  out.writer_ = static_cast<std::uint32_t>(n);
  return out;
}

std::ptrdiff_t ByteBuf::index_of(std::uint8_t value) const noexcept {
  const std::size_t n = readable_bytes();
  if (n == 0) return -1;
  const void* hit = std::memchr(base_ + reader_, value, n);
  return hit == nullptr ? -1 : static_cast<const std::uint8_t*>(hit) - base_;
}

std::ptrdiff_t ByteBuf::index_of(std::uint8_t value, std::size_t from, std::size_t to) const {
  if (from > to || to > capacity_) throw_index_error("index_of", from, to - from, capacity_);
  if (from == to) return -1;
  const void* hit = std::memchr(base_ + from, value, to - from);
  return hit == nullptr ? -1 : static_cast<const std::uint8_t*>(hit) - base_;
}

std::ptrdiff_t ByteBuf::last_index_of(std::uint8_t value) const noexcept {
  const std::size_t n = readable_bytes();
  if (n == 0) return -1;
  const void* hit = ::memrchr(base_ + reader_, value, n);
  return hit == nullptr ? -1 : static_cast<const std::uint8_t*>(hit) - base_;
}

std::ptrdiff_t ByteBuf::index_of(std::string_view needle) const noexcept {
  return index_of(needle, reader_, writer_);
}

std::ptrdiff_t ByteBuf::index_of(std::string_view needle, std::size_t from, std::size_t to) const {
  if (from > to || to > capacity_) throw_index_error("index_of", from, to - from, capacity_);
  if (needle.empty()) return static_cast<std::ptrdiff_t>(from);
  if (needle.size() > to - from) return -1;
  if (needle.size() == 1) return index_of(static_cast<std::uint8_t>(needle[0]), from, to);
  const void* hit = ::memmem(base_ + from, to - from, needle.data(), needle.size());
  return hit == nullptr ? -1 : static_cast<const std::uint8_t*>(hit) - base_;
}

std::string ByteBuf::hex_dump() const {
  static constexpr char kDigits[] = "0123456789abcdef";
  const std::size_t n = readable_bytes();
  std::string out(2 * n, '\0');
  const std::uint8_t* p = base_ + reader_;
  for (std::size_t i = 0; i < n; ++i) {
    out[2 * i] = kDigits[p[i] >> 4];
    out[2 * i + 1] = kDigits[p[i] & 0xF];
  }
  return out;
}

void ByteBuf::swap(ByteBuf& other) noexcept {
  std::swap(storage_, other.storage_);
  std::swap(base_, other.base_);
  std::swap(reader_, other.reader_);
  std::swap(writer_, other.writer_);
  std::swap(capacity_, other.capacity_);
  std::swap(max_capacity_, other.max_capacity_);
  std::swap(marked_reader_, other.marked_reader_);
  const std::uint32_t mw = marked_writer_;
  marked_writer_ = other.marked_writer_;
  other.marked_writer_ = mw;
  const std::uint32_t ro = read_only_;
  read_only_ = other.read_only_;
  other.read_only_ = ro;
}

void ByteBuf::return_to_allocator(ByteBufStorage* storage) noexcept {
  if (storage->leak_record != nullptr) [[unlikely]] detail::leak_untrack(storage);
  storage->allocator->free_storage(storage);
}

void ByteBuf::throw_index_error(const char* op, std::size_t index, std::size_t length, std::size_t bound) {
  throw std::out_of_range(std::string("ByteBuf::") + op + ": index " + std::to_string(index) + ", length " +
                          std::to_string(length) + " outside bound " + std::to_string(bound));
}

}  // namespace weft
