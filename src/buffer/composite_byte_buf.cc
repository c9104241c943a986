#include "weft/buffer/composite_byte_buf.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

namespace weft {

CompositeByteBuf::CompositeByteBuf(ByteBufAllocator& allocator, std::size_t max_components)
    : allocator_(&allocator), max_components_(std::max<std::size_t>(max_components, 1)) {}

void CompositeByteBuf::throw_range(const char* op, std::size_t index, std::size_t n, std::size_t bound) {
  throw std::out_of_range(std::string("CompositeByteBuf::") + op + ": index " + std::to_string(index) +
                          ", length " + std::to_string(n) + " outside bound " + std::to_string(bound));
}

void CompositeByteBuf::add_component(ByteBuf&& buf) {
  ByteBuf taken = std::move(buf);
  if (!taken.is_readable()) return;
  const std::size_t n = taken.readable_bytes();
  components_.push_back(Component{std::move(taken), size_});
  size_ += n;
  tail_owned_ = false;
  if (components_.size() > max_components_) consolidate();
}

void CompositeByteBuf::write_bytes(const void* data, std::size_t n) {
  if (n == 0) return;
  if (!tail_owned_) {
    components_.push_back(Component{allocator_->buffer(std::max<std::size_t>(n, 256)), size_});
    tail_owned_ = true;
  }
  components_.back().buf.write_bytes(data, n);
  size_ += n;
}

std::size_t CompositeByteBuf::first_component(std::size_t index) const noexcept {
  // The last component whose offset is <= index.
  auto it = std::upper_bound(components_.begin(), components_.end(), index,
                             [](std::size_t i, const Component& c) { return i < c.offset; });
  if (it == components_.begin()) return components_.size();
  const auto i = static_cast<std::size_t>(it - components_.begin()) - 1;
  return index < components_[i].offset + components_[i].buf.readable_bytes() ? i : components_.size();
}

void CompositeByteBuf::set_reader_index(std::size_t index) {
  if (index > size_) throw_range("set_reader_index", index, 0, size_);
  reader_ = index;
}

void CompositeByteBuf::skip_bytes(std::size_t n) {
  if (n > readable_bytes()) throw_range("skip_bytes", reader_, n, size_);
  reader_ += n;
}

void CompositeByteBuf::get_bytes(std::size_t index, void* dst, std::size_t n) const {
  if (n > size_ || index > size_ - n) throw_range("get_bytes", index, n, size_);
  auto* out = static_cast<std::uint8_t*>(dst);
  for (std::size_t i = first_component(index); n > 0; ++i) {
    const Component& c = components_[i];
    const std::size_t from = index - c.offset;
    const std::size_t take = std::min(n, c.buf.readable_bytes() - from);
    std::memcpy(out, c.buf.read_ptr() + from, take);
    out += take;
    index += take;
    n -= take;
  }
}

void CompositeByteBuf::read_bytes(void* dst, std::size_t n) {
  if (n > readable_bytes()) throw_range("read_bytes", reader_, n, size_);
  get_bytes(reader_, dst, n);
  reader_ += n;
}

std::string CompositeByteBuf::read_string(std::size_t n) {
  if (n > readable_bytes()) throw_range("read_string", reader_, n, size_);
  std::string s(n, '\0');
  read_bytes(s.data(), n);
  return s;
}

ByteBuf CompositeByteBuf::read_slice(std::size_t n) {
  if (n > readable_bytes()) throw_range("read_slice", reader_, n, size_);
  if (n == 0) return ByteBuf();
  const std::size_t i = first_component(reader_);
  const Component& c = components_[i];
  const std::size_t from = reader_ - c.offset;
  if (from + n <= c.buf.readable_bytes()) {
    ByteBuf s = c.buf.slice(c.buf.reader_index() + from, n);
    reader_ += n;
    return s;
  }
  ByteBuf out = allocator_->buffer(n);
  get_bytes(reader_, out.write_ptr(), n);
  out.advance_writer(n);
  reader_ += n;
  return out;
}

std::ptrdiff_t CompositeByteBuf::index_of(std::uint8_t value) const noexcept {
  for (std::size_t i = first_component(reader_); i < components_.size(); ++i) {
    const Component& c = components_[i];
    const std::size_t from = reader_ > c.offset ? reader_ - c.offset : 0;
    const std::size_t len = c.buf.readable_bytes() - from;
    const void* hit = std::memchr(c.buf.read_ptr() + from, value, len);
    if (hit != nullptr) {
      return static_cast<std::ptrdiff_t>(c.offset + (static_cast<const std::uint8_t*>(hit) - c.buf.read_ptr()));
    }
  }
  return -1;
}

std::ptrdiff_t CompositeByteBuf::index_of(std::string_view needle) const {
  if (needle.empty()) return static_cast<std::ptrdiff_t>(reader_);
  if (needle.size() > readable_bytes()) return -1;
  const auto first = static_cast<std::uint8_t>(needle[0]);
  // The next occurrence of the needle's first byte at or after `from`, or -1.
  auto next_first = [&](std::size_t from) -> std::ptrdiff_t {
    for (std::size_t i = first_component(from); i < components_.size(); ++i) {
      const Component& c = components_[i];
      const std::size_t skip = from > c.offset ? from - c.offset : 0;
      const void* p = std::memchr(c.buf.read_ptr() + skip, first, c.buf.readable_bytes() - skip);
      if (p != nullptr) {
        return static_cast<std::ptrdiff_t>(c.offset + (static_cast<const std::uint8_t*>(p) - c.buf.read_ptr()));
      }
    }
    return -1;
  };
  std::string window(needle.size(), '\0');
  for (std::size_t start = reader_; start + needle.size() <= size_;) {
    const std::ptrdiff_t hit = next_first(start);
    if (hit < 0 || static_cast<std::size_t>(hit) + needle.size() > size_) return -1;
    get_bytes(static_cast<std::size_t>(hit), window.data(), needle.size());
    if (window == needle) return hit;
    start = static_cast<std::size_t>(hit) + 1;
  }
  return -1;
}

std::string CompositeByteBuf::to_string() const {
  std::string s(readable_bytes(), '\0');
  if (!s.empty()) get_bytes(reader_, s.data(), s.size());
  return s;
}

void CompositeByteBuf::consolidate() {
  if (components_.size() <= 1) return;
  const std::size_t n = readable_bytes();
  std::vector<Component> merged;
  if (n > 0) {
    ByteBuf all = allocator_->buffer(n);
    get_bytes(reader_, all.write_ptr(), n);
    all.advance_writer(n);
    merged.push_back(Component{std::move(all), 0});
  }
  components_ = std::move(merged);  // releases the old components
  marked_reader_ = marked_reader_ > reader_ ? marked_reader_ - reader_ : 0;
  reader_ = 0;
  size_ = n;
  tail_owned_ = false;
}

void CompositeByteBuf::discard_read_components() {
  std::size_t drop = 0;
  while (drop < components_.size() &&
         components_[drop].offset + components_[drop].buf.readable_bytes() <= reader_) {
    ++drop;
  }
  if (drop == 0) return;
  const std::size_t shift = drop < components_.size() ? components_[drop].offset : size_;
  components_.erase(components_.begin(), components_.begin() + static_cast<std::ptrdiff_t>(drop));
  for (Component& c : components_) c.offset -= shift;
  if (components_.empty()) tail_owned_ = false;
  reader_ -= shift;
  size_ -= shift;
  marked_reader_ = marked_reader_ > shift ? marked_reader_ - shift : 0;
}

ByteBuf CompositeByteBuf::to_byte_buf() {
  discard_read_components();
  ByteBuf out;
  if (components_.size() == 1) {
    out = std::move(components_[0].buf);
    out.skip_bytes(reader_);
  } else if (!components_.empty()) {
    consolidate();
    out = std::move(components_[0].buf);
  }
  clear();
  return out;
}

void CompositeByteBuf::clear() noexcept {
  components_.clear();
  reader_ = size_ = marked_reader_ = 0;
  tail_owned_ = false;
}

std::size_t CompositeByteBuf::count_iovecs() const noexcept {
  const std::size_t i = first_component(reader_);
  return i < components_.size() ? components_.size() - i : 0;
}

std::size_t CompositeByteBuf::fill_iovecs(::iovec* out, std::size_t max) const noexcept {
  std::size_t filled = 0;
  for (std::size_t i = first_component(reader_); i < components_.size() && filled < max; ++i) {
    const Component& c = components_[i];
    const std::size_t from = reader_ > c.offset ? reader_ - c.offset : 0;
    out[filled].iov_base = const_cast<std::uint8_t*>(c.buf.read_ptr() + from);
    out[filled].iov_len = c.buf.readable_bytes() - from;
    ++filled;
  }
  return filled;
}

}  // namespace weft
