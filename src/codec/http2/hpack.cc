#include "hpack.h"

#include <algorithm>
#include <bit>
#include <cstring>

namespace weft::http2::hpack {
namespace {

struct HuffmanTransition {
  std::uint8_t state;
  std::uint8_t flags;
  std::uint8_t symbol;
};
constexpr std::uint8_t kHuffmanEmit = 1;
constexpr std::uint8_t kHuffmanAccept = 2;
constexpr std::uint8_t kHuffmanFail = 4;

#include "hpack_huffman_table.inc"

struct StaticEntry {
  std::string_view name;
  std::string_view value;
};

// RFC 7541 Appendix A; index 0 is unused.
constexpr StaticEntry kStatic[62] = {
    {"", ""},
    {":authority", ""},
    {":method", "GET"},
    {":method", "POST"},
    {":path", "/"},
    {":path", "/index.html"},
    {":scheme", "http"},
    {":scheme", "https"},
    {":status", "200"},
    {":status", "204"},
    {":status", "206"},
    {":status", "304"},
    {":status", "400"},
    {":status", "404"},
    {":status", "500"},
    {"accept-charset", ""},
    {"accept-encoding", "gzip, deflate"},
    {"accept-language", ""},
    {"accept-ranges", ""},
    {"accept", ""},
    {"access-control-allow-origin", ""},
    {"age", ""},
    {"allow", ""},
    {"authorization", ""},
    {"cache-control", ""},
    {"content-disposition", ""},
    {"content-encoding", ""},
    {"content-language", ""},
    {"content-length", ""},
    {"content-location", ""},
    {"content-range", ""},
    {"content-type", ""},
    {"cookie", ""},
    {"date", ""},
    {"etag", ""},
    {"expect", ""},
    {"expires", ""},
    {"from", ""},
    {"host", ""},
    {"if-match", ""},
    {"if-modified-since", ""},
    {"if-none-match", ""},
    {"if-range", ""},
    {"if-unmodified-since", ""},
    {"last-modified", ""},
    {"link", ""},
    {"location", ""},
    {"max-forwards", ""},
    {"proxy-authenticate", ""},
    {"proxy-authorization", ""},
    {"range", ""},
    {"referer", ""},
    {"refresh", ""},
    {"retry-after", ""},
    {"server", ""},
    {"set-cookie", ""},
    {"strict-transport-security", ""},
    {"transfer-encoding", ""},
    {"user-agent", ""},
    {"vary", ""},
    {"via", ""},
    {"www-authenticate", ""},
};
constexpr std::uint32_t kStaticCount = 61;
constexpr std::uint32_t kFirstDynamic = 62;
constexpr std::uint32_t kEntryOverhead = 32;  // RFC 7541 4.1

// ---- integers and strings (RFC 7541 5.1, 5.2) ----

// Reads an integer with an N-bit prefix at p (p < end). Values above 2^32 - 1, or with more than
// five continuation bytes, are errors.
inline bool decode_int(const std::uint8_t*& p, const std::uint8_t* end, unsigned prefix_bits, std::uint32_t& out) {
  const std::uint32_t max_prefix = (1u << prefix_bits) - 1;
  const std::uint32_t v = *p++ & max_prefix;
  if (v < max_prefix) [[likely]] {
    out = v;
    return true;
  }
  std::uint64_t acc = v;
  unsigned shift = 0;
  for (int i = 0; i < 5; ++i) {
    if (p == end) return false;
    const std::uint8_t b = *p++;
    acc += static_cast<std::uint64_t>(b & 0x7f) << shift;
    if (acc > UINT32_MAX) return false;
    if ((b & 0x80) == 0) {
      out = static_cast<std::uint32_t>(acc);
      return true;
    }
    shift += 7;
  }
  return false;
}

inline std::uint8_t* encode_int(std::uint8_t* w, std::uint8_t first, unsigned prefix_bits, std::uint64_t v) {
  const std::uint32_t max_prefix = (1u << prefix_bits) - 1;
  if (v < max_prefix) [[likely]] {
    *w++ = static_cast<std::uint8_t>(first | v);
    return w;
  }
  *w++ = static_cast<std::uint8_t>(first | max_prefix);
  v -= max_prefix;
  while (v >= 128) {
    *w++ = static_cast<std::uint8_t>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  *w++ = static_cast<std::uint8_t>(v);
  return w;
}

// Decodes `len` Huffman-coded bytes at p to out (advanced). False on EOS, or padding that is longer
// than 7 bits or not all ones.
inline bool huffman_decode(const std::uint8_t* p, std::size_t len, char*& out) {
  std::uint32_t state = 0;
  std::uint8_t flags = kHuffmanAccept;
  char* o = out;
  for (std::size_t i = 0; i < len; ++i) {
    const std::uint8_t b = p[i];
    HuffmanTransition t = kHuffmanDecode[state * 16 + (b >> 4)];
    if (t.flags & kHuffmanFail) [[unlikely]] return false;
    *o = static_cast<char>(t.symbol);
    o += t.flags & kHuffmanEmit;
    t = kHuffmanDecode[t.state * 16 + (b & 0x0f)];
    if (t.flags & kHuffmanFail) [[unlikely]] return false;
    *o = static_cast<char>(t.symbol);
    o += t.flags & kHuffmanEmit;
    state = t.state;
    flags = t.flags;
  }
  out = o;
  return (flags & kHuffmanAccept) != 0;
}

inline std::size_t huffman_length(std::string_view s) {
  std::size_t bits = 0;
  for (const char c : s) bits += kHuffmanBits[static_cast<std::uint8_t>(c)];
  return (bits + 7) / 8;
}

inline std::uint8_t* huffman_encode(std::uint8_t* w, std::string_view s) {
  std::uint64_t acc = 0;
  unsigned bits = 0;
  for (const char c : s) {
    const auto sym = static_cast<std::uint8_t>(c);
    acc = (acc << kHuffmanBits[sym]) | kHuffmanCode[sym];
    bits += kHuffmanBits[sym];
    while (bits >= 8) {
      bits -= 8;
      *w++ = static_cast<std::uint8_t>(acc >> bits);
    }
  }
  if (bits > 0) *w++ = static_cast<std::uint8_t>((acc << (8 - bits)) | (0xffu >> bits));  // EOS prefix
  return w;
}

// A string literal; Huffman-coded when `huffman` and that is shorter.
inline std::uint8_t* encode_string(std::uint8_t* w, std::string_view s, bool huffman_allowed) {
  const std::size_t huffman = huffman_allowed ? huffman_length(s) : s.size();
  if (huffman < s.size()) {
    w = encode_int(w, 0x80, 7, huffman);
    return huffman_encode(w, s);
  }
  w = encode_int(w, 0, 7, s.size());
  if (!s.empty()) std::memcpy(w, s.data(), s.size());
  return w + s.size();
}

// ---- the Encoder's name lookup ----

inline std::uint64_t load64(const char* p) {
  std::uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
inline std::uint32_t load32(const char* p) {
  std::uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// a[0, n) == b[0, n), inline: the Encoder's strings are mostly short.
inline bool equal(const char* a, const char* b, std::size_t n) noexcept {
  if (n >= 8) {
    const std::size_t last = n - 8;
    for (std::size_t i = 0; i < last; i += 8) {
      if (load64(a + i) != load64(b + i)) return false;
    }
    return load64(a + last) == load64(b + last);
  }
  if (n >= 4) return load32(a) == load32(b) && load32(a + n - 4) == load32(b + n - 4);
  if (n == 0) return true;
  return a[0] == b[0] && a[n / 2] == b[n / 2] && a[n - 1] == b[n - 1];  // every byte of 1 to 3
}

inline std::uint32_t hash_name(std::string_view s) noexcept {
  constexpr std::uint64_t k = 0x9e3779b97f4a7c15ull;
  const char* p = s.data();
  const std::size_t n = s.size();
  std::uint64_t h = n * k;
  if (n >= 8) {
    const char* last = p + n - 8;
    for (; p < last; p += 8) h = ((h ^ load64(p)) * k) ^ (h >> 31);
    h = (h ^ load64(last)) * k;
  } else if (n >= 4) {
    h = (h ^ ((static_cast<std::uint64_t>(load32(p)) << 32) | load32(p + n - 4))) * k;
  } else if (n > 0) {
    h = (h ^ ((static_cast<std::uint64_t>(static_cast<std::uint8_t>(p[0])) << 16) |
              (static_cast<std::uint64_t>(static_cast<std::uint8_t>(p[n / 2])) << 8) |
              static_cast<std::uint8_t>(p[n - 1]))) * k;
  }
  return static_cast<std::uint32_t>(h >> 32);
}

// The static table's names in an open-addressed hash table: each name's first index and how many
// entries in a row have that name.
struct StaticNames {
  struct Slot {
    std::uint32_t hash = 0;
    std::uint8_t index = 0;  // 0: empty
    std::uint8_t count = 0;
  };
  static constexpr std::uint32_t kSlots = 128;
  Slot slots[kSlots];

  StaticNames() {
    for (std::uint32_t i = 1; i <= kStaticCount;) {
      std::uint32_t n = 1;
      while (i + n <= kStaticCount && kStatic[i + n].name == kStatic[i].name) ++n;
      std::uint32_t at = hash_name(kStatic[i].name) & (kSlots - 1);
      while (slots[at].index != 0) at = (at + 1) & (kSlots - 1);
      slots[at] = {hash_name(kStatic[i].name), static_cast<std::uint8_t>(i), static_cast<std::uint8_t>(n)};
      i += n;
    }
  }

  const Slot* find(std::uint32_t hash, std::string_view name) const noexcept {
    for (std::uint32_t at = hash & (kSlots - 1);; at = (at + 1) & (kSlots - 1)) {
      const Slot& s = slots[at];
      if (s.index == 0) return nullptr;
      if (s.hash == hash && kStatic[s.index].name.size() == name.size() &&
          equal(kStatic[s.index].name.data(), name.data(), name.size())) {
        return &s;
      }
    }
  }
};
const StaticNames kStaticNames;

// Names whose values seldom repeat: not added to the dynamic table (by static index).
constexpr std::uint64_t kVolatileNames = (1ull << 4) | (1ull << 5) | (1ull << 21) | (1ull << 34) | (1ull << 40) |
                                         (1ull << 41) | (1ull << 46) | (1ull << 55);
constexpr std::uint32_t kContentLength = 28;

}  // namespace

// ---- DynamicTable ----

namespace detail {

// No storage until the first entry: an idle connection's tables cost nothing.
DynamicTable::DynamicTable(std::uint32_t capacity) : capacity_(capacity) {}

// Room for one more entry of `len` bytes. The storage grows with the entries, to twice the live
// bytes (so that compaction, which moves them to the front, stays rare), and the slots to twice
// the live entries.
void DynamicTable::make_room(std::uint32_t len) {
  const std::uint64_t first = inserted_ - count_ + 1;
  const std::uint32_t live_start = count_ == 0 ? tail_pos_ : slot(first).pos;
  const std::uint32_t live = tail_pos_ - live_start;
  if (!slots_ || count_ + 1 > slot_mask_ + 1) {
    const std::uint32_t slot_count = std::max<std::uint32_t>(8, std::bit_ceil(count_ + 1) * 2);
    auto slots = std::make_unique<Slot[]>(slot_count);
    const std::uint32_t new_mask = slot_count - 1;
    for (std::uint64_t id = first; id <= inserted_ && count_ > 0; ++id) slots[id & new_mask] = slot(id);
    slots_ = std::move(slots);
    slot_mask_ = new_mask;
  }
  if (!bytes_ || live + len > bytes_size_) {
    const auto bytes_size = static_cast<std::uint32_t>(std::max<std::uint64_t>(256, 2ull * (live + len)));
    auto bytes = std::make_unique<char[]>(bytes_size);
    if (live > 0) std::memcpy(bytes.get(), bytes_.get() + (live_start - base_pos_), live);
    bytes_ = std::move(bytes);
    bytes_size_ = bytes_size;
    base_pos_ = live_start;
  } else if ((tail_pos_ - base_pos_) + len > bytes_size_) {
    std::memmove(bytes_.get(), bytes_.get() + (live_start - base_pos_), live);
    base_pos_ = live_start;
  }
}

void DynamicTable::evict_to(std::uint32_t n) noexcept {
  while (size_ > n) {
    const Slot& s = slot(inserted_ - count_ + 1);
    size_ -= s.name_len + s.value_len + kEntryOverhead;
    --count_;
  }
}

void DynamicTable::set_capacity(std::uint32_t n) {
  capacity_ = n;
  evict_to(n);
}

bool DynamicTable::insert(std::string_view name, std::string_view value) {
  const std::uint64_t need = static_cast<std::uint64_t>(name.size()) + value.size() + kEntryOverhead;
  if (need > capacity_) {
    evict_to(0);
    return false;
  }
  if (bytes_ && name.data() >= bytes_.get() && name.data() < bytes_.get() + bytes_size_) [[unlikely]] {
    name_copy_.assign(name);  // its entry may be evicted, or moved below
    name = name_copy_;
  }
  evict_to(capacity_ - static_cast<std::uint32_t>(need));
  const auto len = static_cast<std::uint32_t>(name.size() + value.size());
  if (count_ == 0) base_pos_ = tail_pos_;
  make_room(len);
  char* w = bytes_.get() + (tail_pos_ - base_pos_);
  if (!name.empty()) std::memcpy(w, name.data(), name.size());
  if (!value.empty()) std::memcpy(w + name.size(), value.data(), value.size());
  ++inserted_;
  slot(inserted_) = Slot{
      tail_pos_, static_cast<std::uint32_t>(name.size()), static_cast<std::uint32_t>(value.size()), 0, 0, 0, false};
  tail_pos_ += len;
  ++count_;
  size_ += static_cast<std::uint32_t>(need);
  return true;
}

}  // namespace detail

// ---- Decoder ----

Decoder::Decoder(std::uint32_t max_table_size) : table_(max_table_size), max_table_size_(max_table_size) {}

void Decoder::set_max_table_size(std::uint32_t n) {
  max_table_size_ = n;
  if (n < table_.capacity()) update_required_ = true;
}

std::pair<std::string_view, std::string_view> Decoder::table_entry(std::uint32_t i) const noexcept {
  const auto& s = table_.slot(table_.inserted() - i);
  return {table_.name(s), table_.value(s)};
}

namespace {

// A string literal at p (p < end): raw, a view of the block; Huffman-coded, decoded at scratch
// (advanced).
inline bool read_string(const std::uint8_t*& p, const std::uint8_t* end, char*& scratch, std::string_view& out) {
  if (p == end) return false;
  const bool huffman = (*p & 0x80) != 0;
  std::uint32_t len;
  if (!decode_int(p, end, 7, len) || len > static_cast<std::size_t>(end - p)) return false;
  if (!huffman) {
    out = {reinterpret_cast<const char*>(p), len};
  } else {
    char* start = scratch;
    if (!huffman_decode(p, len, scratch)) return false;
    out = {start, static_cast<std::size_t>(scratch - start)};
  }
  p += len;
  return true;
}

}  // namespace

int Decoder::decode(const std::uint8_t* p, std::size_t size, FieldSink sink, void* context) {
  const std::uint8_t* const end = p + size;
  // Dynamic table size updates: only at the start (RFC 7541 4.2), and first when one is due.
  if (update_required_ && (p == end || (*p & 0xe0) != 0x20)) return kCompressionError;
  while (p != end && (*p & 0xe0) == 0x20) {
    std::uint32_t n;
    if (!decode_int(p, end, 5, n) || n > max_table_size_) return kCompressionError;
    table_.set_capacity(n);
    update_required_ = false;
  }
  if (p == end) return 0;
  // Huffman output: at most 8 symbols per 5 bits of input.
  if (const std::size_t need = size / 5 * 8 + 8; need > scratch_size_) [[unlikely]] {
    scratch_size_ = std::max(need, 2 * scratch_size_);
    scratch_ = std::make_unique<char[]>(scratch_size_);
  }
  while (p != end) {
    const std::uint8_t b = *p;
    if (b & 0x80) {  // indexed field (6.1)
      std::uint32_t index;
      if (b != 0xff) [[likely]] {
        index = b & 0x7f;
        ++p;
      } else if (!decode_int(p, end, 7, index)) {
        return kCompressionError;
      }
      int rc;
      if (index - 1 < kStaticCount) {
        const StaticEntry& e = kStatic[index];
        field_vouched_ = false;
        rc = sink(context, e.name, e.value);
      } else {
        const std::uint32_t i = index - kFirstDynamic;
        if (index == 0 || i >= table_.count()) return kCompressionError;
        const auto& s = table_.slot(table_.inserted() - i);
        const char* name = table_.name_of(s);
        field_vouched_ = s.vouched;
        rc = sink(context, {name, s.name_len}, {name + s.name_len, s.value_len});
      }
      if (rc != 0) return rc;
      continue;
    }
    // Literal fields (6.2): with incremental indexing (01), without (0000), never indexed (0001).
    bool add = false;
    unsigned prefix = 4;
    if (b & 0x40) {
      add = true;
      prefix = 6;
    } else if (b & 0x20) {
      return kCompressionError;  // a size update after a field
    }
    std::uint32_t name_index;
    if (!decode_int(p, end, prefix, name_index)) return kCompressionError;
    char* scratch = scratch_.get();
    std::string_view name;
    if (name_index == 0) {
      if (!read_string(p, end, scratch, name)) return kCompressionError;
    } else if (name_index <= kStaticCount) {
      name = kStatic[name_index].name;
    } else {
      const std::uint32_t i = name_index - kFirstDynamic;
      if (i >= table_.count()) return kCompressionError;
      name = table_.name(table_.slot(table_.inserted() - i));
    }
    std::string_view value;
    if (!read_string(p, end, scratch, value)) return kCompressionError;
    field_vouched_ = false;
    literal_vouched_ = false;
    if (const int rc = sink(context, name, value); rc != 0) return rc;
    if (add && table_.insert(name, value)) table_.slot(table_.inserted()).vouched = literal_vouched_;
  }
  return 0;
}

// ---- Encoder ----

Encoder::Encoder(std::uint32_t table_size) : table_(std::min<std::uint32_t>(table_size, 4096)), limit_(table_size) {
  if (table_.capacity() != 4096) {  // the peer's decoder starts at 4096
    update_pending_ = true;
    pending_min_ = table_.capacity();
  }
}

void Encoder::set_peer_max_table_size(std::uint32_t n) {
  const std::uint32_t capacity = std::min(n, limit_);
  if (!update_pending_ && capacity == table_.capacity()) return;  // the table stays as it is
  pending_min_ = update_pending_ ? std::min(pending_min_, capacity) : capacity;
  update_pending_ = true;
  table_.set_capacity(capacity);
}

void Encoder::begin_block(ByteBuf& out) {
  position_ = 0;
  if (!update_pending_) [[likely]] return;
  out.ensure_writable(12);
  std::uint8_t* const start = out.write_ptr();
  std::uint8_t* w = start;
  if (pending_min_ < table_.capacity()) w = encode_int(w, 0x20, 5, pending_min_);
  w = encode_int(w, 0x20, 5, table_.capacity());
  out.advance_writer(static_cast<std::size_t>(w - start));
  update_pending_ = false;
}

void Encoder::encode(ByteBuf& out, std::string_view name, std::string_view value, bool never_index) {
  const std::uint32_t position = position_++;
  if (position < kRecent && !never_index) {
    // The field at this position last time, when it is the same: one index byte.
    const std::uint64_t r = recent_[position];
    if (r >= 64) {
      const std::uint64_t id = r - 64;
      const std::uint64_t index = kFirstDynamic + (table_.inserted() - id);
      if (table_.live(id) && index < 127) {
        const auto& s = table_.slot(id);
        const char* entry = table_.name_of(s);
        if (s.name_len == name.size() && s.value_len == value.size() && equal(entry, name.data(), name.size()) &&
            equal(entry + s.name_len, value.data(), value.size())) {
          out.write_u8(static_cast<std::uint8_t>(0x80 | index));
          return;
        }
      }
    } else if (r != 0) {
      const StaticEntry& e = kStatic[r];
      if (e.name.size() == name.size() && e.value.size() == value.size() && equal(e.name.data(), name.data(), name.size()) &&
          equal(e.value.data(), value.data(), value.size())) {
        out.write_u8(static_cast<std::uint8_t>(0x80 | r));
        return;
      }
    }
  }
  encode_field(out, name, value, never_index, position);
}

[[gnu::noinline]] void Encoder::encode_field(ByteBuf& out, std::string_view name, std::string_view value, bool never_index,
                           std::uint32_t position) {
  std::uint64_t* const recent = position < kRecent ? &recent_[position] : nullptr;
  out.ensure_writable(name.size() + value.size() + 18);  // three integers of at most 6 bytes
  std::uint8_t* const start = out.write_ptr();
  std::uint8_t* w = start;
  const std::uint32_t hash = hash_name(name);
  std::uint64_t name_index = 0;  // static, else dynamic
  std::uint64_t dynamic_name = 0;
  const std::uint32_t value_hash = hash_name(value);
  if (!never_index) {
    // The dynamic table first: the fields that repeat (a static exact match is never added to it).
    // The newest few entries of the bucket only: a name with many values (a date that changed)
    // must not make each field a long walk.
    std::uint32_t steps = 0;
    for (std::uint64_t id = buckets_[hash % kBuckets]; table_.live(id) && steps < kMaxChainSteps; ++steps) {
      const auto& s = table_.slot(id);
      const char* entry = table_.name_of(s);
      if (s.hash == hash) {
        const std::uint64_t index = kFirstDynamic + (table_.inserted() - id);
        if (s.value_hash == value_hash && s.name_len == name.size() && s.value_len == value.size() &&
            equal(entry, name.data(), name.size()) && equal(entry + s.name_len, value.data(), value.size())) {
          if (recent != nullptr) *recent = id + 64;
          w = encode_int(w, 0x80, 7, index);
          out.advance_writer(static_cast<std::size_t>(w - start));
          return;
        }
        if (dynamic_name == 0 && s.name_len == name.size() && equal(entry, name.data(), name.size())) {
          dynamic_name = index;
        }
      }
      id = s.next;
    }
  }
  const StaticNames::Slot* st = kStaticNames.find(hash, name);
  if (st != nullptr) {
    name_index = st->index;
    if (!never_index) {
      for (std::uint32_t i = st->index, last = st->index + st->count; i < last; ++i) {
        if (kStatic[i].value.size() == value.size() && equal(kStatic[i].value.data(), value.data(), value.size())) {
          if (recent != nullptr) *recent = i;
          *w++ = static_cast<std::uint8_t>(0x80 | i);
          out.advance_writer(1);
          return;
        }
      }
    }
  } else {
    name_index = dynamic_name;
  }
  bool add = false;
  if (never_index) {
    w = encode_int(w, 0x10, 4, name_index);
  } else {
    add = static_cast<std::uint64_t>(name.size()) + value.size() + kEntryOverhead <= table_.capacity() / 4 * 3;
    if (add && st != nullptr) {
      if (st->index == kContentLength) {
        // Indexed only once a value repeats: a new length each response would flush the table.
        add = value.size() == last_content_length_len_ && value.size() <= sizeof(last_content_length_) &&
              std::memcmp(value.data(), last_content_length_, value.size()) == 0;
        if (!add && value.size() <= sizeof(last_content_length_)) {
          std::memcpy(last_content_length_, value.data(), value.size());
          last_content_length_len_ = static_cast<std::uint8_t>(value.size());
        }
      } else if ((kVolatileNames >> st->index) & 1) {
        add = false;
      }
    }
    w = add ? encode_int(w, 0x40, 6, name_index) : encode_int(w, 0x00, 4, name_index);
  }
  if (name_index == 0) w = encode_string(w, name, huffman_);
  w = encode_string(w, value, huffman_);
  out.advance_writer(static_cast<std::size_t>(w - start));
  if (add) {
    insert(name, value, hash, value_hash);
    if (recent != nullptr) *recent = table_.inserted() + 64;  // not live if it did not fit
  }
}

void Encoder::insert(std::string_view name, std::string_view value, std::uint32_t hash, std::uint32_t value_hash) {
  if (!table_.insert(name, value)) return;
  const std::uint64_t id = table_.inserted();
  auto& s = table_.slot(id);
  s.hash = hash;
  s.value_hash = value_hash;
  s.next = buckets_[hash % kBuckets];
  buckets_[hash % kBuckets] = id;
}

}  // namespace weft::http2::hpack
