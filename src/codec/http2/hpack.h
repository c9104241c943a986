#pragma once
// HPACK (RFC 7541), weft's own: the header compression of HTTP/2. A Decoder turns a header block
// into fields (static table, dynamic table, Huffman strings, size updates) and an Encoder writes
// fields into a ByteBuf (static and dynamic table indexing, raw or Huffman strings). One of
// each per connection and direction. Neither allocates per block once its buffers have grown.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "weft/buffer/byte_buf.h"

namespace weft::http2::hpack {

// Any decoding failure is a connection error of type COMPRESSION_ERROR (RFC 9113 4.3).
enum class DecodeError : std::uint8_t { none, compression };

// What Decoder::decode returns for a malformed block.
inline constexpr int kCompressionError = -1000;

// Called for each field of a block, in order. The views are valid during the call only.
// Return 0 to go on; non-zero stops decoding and decode() returns that value (the caller's abort).
using FieldSink = int (*)(void* context, std::string_view name, std::string_view value);

namespace detail {

// The dynamic table (RFC 7541 2.3.2, 4): entries in one byte buffer (name then value, appended;
// the live bytes are moved to the front when the end is reached, which the buffer's size of twice
// the capacity makes rare) described by a ring of slots, newest last. Nothing is allocated per
// insert. Not thread-safe: one owner.
class DynamicTable {
 public:
  struct Slot {
    std::uint32_t pos;         // where the name starts, as a count of bytes ever appended
    std::uint32_t name_len;
    std::uint32_t value_len;
    std::uint32_t hash;        // the Encoder's hash of the name (unused by the Decoder)
    std::uint32_t value_hash;  // the Encoder's hash of the value (unused by the Decoder)
    std::uint64_t next;        // the Encoder's chain: an older entry of the same bucket, 0 for none
    bool vouched;              // the Decoder's sink vouched for the field (unused by the Encoder)
  };

  explicit DynamicTable(std::uint32_t capacity);

  std::uint32_t capacity() const noexcept { return capacity_; }
  // The table's size in RFC 7541 4.1 terms (each entry: name + value + 32).
  std::uint32_t size() const noexcept { return size_; }
  std::uint32_t count() const noexcept { return count_; }
  // Entries are numbered from 1 as they are inserted: the newest is inserted() and the oldest
  // inserted() - count() + 1. HPACK index 62 is the newest.
  std::uint64_t inserted() const noexcept { return inserted_; }
  bool live(std::uint64_t id) const noexcept { return id != 0 && inserted_ - id < count_; }

  const Slot& slot(std::uint64_t id) const noexcept { return slots_[id & slot_mask_]; }
  Slot& slot(std::uint64_t id) noexcept { return slots_[id & slot_mask_]; }
  const char* name_of(const Slot& s) const noexcept { return bytes_.get() + (s.pos - base_pos_); }
  std::string_view name(const Slot& s) const noexcept { return {name_of(s), s.name_len}; }
  std::string_view value(const Slot& s) const noexcept { return {name_of(s) + s.name_len, s.value_len}; }

  // Evicts until size() <= n; n becomes the capacity (storage grows when n is above any before).
  void set_capacity(std::uint32_t n);
  // Evicts as needed and appends the entry (which becomes inserted()); false when it is larger than
  // the capacity (the table is then empty, RFC 7541 4.4). `name` may be one of the table's own names.
  bool insert(std::string_view name, std::string_view value);

 private:
  void evict_to(std::uint32_t n) noexcept;
  void make_room(std::uint32_t len);

  std::unique_ptr<char[]> bytes_;
  std::uint32_t bytes_size_ = 0;
  std::uint32_t base_pos_ = 0;  // the position of bytes_[0]
  std::uint32_t tail_pos_ = 0;  // the position of the next byte appended
  std::unique_ptr<Slot[]> slots_;
  std::uint32_t slot_mask_ = 0;
  std::uint32_t capacity_ = 0;
  std::uint32_t size_ = 0;
  std::uint32_t count_ = 0;
  std::uint64_t inserted_ = 0;
  std::string name_copy_;       // an evicted name being inserted again
};

}  // namespace detail

// Decodes the header blocks of one direction of a connection. Not thread-safe: one per connection,
// used on its event loop's thread only.
class Decoder {
 public:
  // max_table_size: the SETTINGS_HEADER_TABLE_SIZE this side announced (a size update above it is
  // an error); it is also the table's capacity until the peer sends a size update. The table's
  // storage is about twice the capacity in bytes. Until the peer acknowledges a SETTINGS with a
  // smaller size its encoder may use 4096: construct with 4096 and call set_max_table_size() on the
  // acknowledgement. Loop thread only.
  explicit Decoder(std::uint32_t max_table_size = 4096);

  // Decodes one whole header block (HEADERS + CONTINUATION payloads joined). Returns 0, or the
  // sink's non-zero value, or kCompressionError on malformed input. The dynamic table is updated
  // as the block says, even for fields the sink ignores. After a non-zero return the table may
  // lack the block's later entries: the connection cannot decode further blocks (close it).
  // Never reads outside [block, block + size). Loop thread only.
  int decode(const std::uint8_t* block, std::size_t size, FieldSink sink, void* context);

  // For the sink, during its call: whether the field is a dynamic table entry that the sink vouched
  // for when it was inserted (see vouch()), so that checks of its bytes alone need not run again.
  bool field_vouched() const noexcept { return field_vouched_; }
  // For the sink, during its call for a literal field: the field's bytes passed the sink's checks;
  // if it is inserted in the dynamic table, later references to it are field_vouched().
  void vouch() noexcept { literal_vouched_ = true; }

  // A new announced limit (call it when the peer has acknowledged the SETTINGS that carried it).
  // When it is below the table's capacity, the next block must start with a size update to at most
  // n, or it is a compression error. Loop thread only.
  void set_max_table_size(std::uint32_t n);

  // The dynamic table, for tests: its size (RFC 7541 4.1), entry count and entry i (0: the newest,
  // HPACK index 62). Loop thread only.
  std::uint32_t table_size() const noexcept { return table_.size(); }
  std::uint32_t table_count() const noexcept { return table_.count(); }
  std::uint32_t table_capacity() const noexcept { return table_.capacity(); }
  std::pair<std::string_view, std::string_view> table_entry(std::uint32_t i) const noexcept;

 private:
  detail::DynamicTable table_;
  std::uint32_t max_table_size_;
  bool update_required_ = false;
  bool field_vouched_ = false;
  bool literal_vouched_ = false;
  std::unique_ptr<char[]> scratch_;  // Huffman-decoded strings of the current field
  std::size_t scratch_size_ = 0;
};

// Encodes the header blocks of one direction of a connection. Not thread-safe: one per
// connection, used on its event loop's thread only.
class Encoder {
 public:
  // table_size: the most dynamic table this encoder uses (its memory); the table is the smaller of
  // it and the peer's SETTINGS_HEADER_TABLE_SIZE (4096 until the peer says). Loop thread only.
  explicit Encoder(std::uint32_t table_size = 4096);

  // The peer's SETTINGS_HEADER_TABLE_SIZE: the table shrinks to fit (or grows up to it, never above
  // the constructor's table_size), and the next block starts with dynamic table size updates (the
  // smallest value since the last block, then the new one: RFC 7541 4.2, 6.3). Loop thread only.
  void set_peer_max_table_size(std::uint32_t n);

  // Starts a block in `out` (pending size updates). Call it first for each block. Loop thread only.
  void begin_block(ByteBuf& out);

  // Appends one field's encoding to `out`: an exact match in the static or dynamic table is one
  // index; otherwise a literal (name indexed when it can be) that is added to the dynamic table
  // unless never_index, the entry would take over 3/4 of the table, or the name's values seldom
  // repeat (:path, age, etag, if-modified-since, if-none-match, location, set-cookie; content-length
  // only when its value is the same as the last one). never_index: a never-indexed literal (RFC 7541
  // 6.2.3), not in the table. Strings are raw, or Huffman-coded when set_huffman(true) and that is
  // shorter. Loop thread only.
  void encode(ByteBuf& out, std::string_view name, std::string_view value, bool never_index = false);

  // Whether literals may be Huffman-coded (default: no). Huffman coding costs about 12 instructions
  // per byte (here, and more in the peer's decoder) to save about a quarter of the bytes of text;
  // the fields that repeat are one index byte either way. Loop thread only.
  void set_huffman(bool on) noexcept { huffman_ = on; }

  // The dynamic table's size and entry count, for tests. Loop thread only.
  std::uint32_t table_size() const noexcept { return table_.size(); }
  std::uint32_t table_count() const noexcept { return table_.count(); }

 private:
  static constexpr std::uint32_t kBuckets = 64;
  static constexpr std::uint32_t kRecent = 16;
  static constexpr std::uint32_t kMaxChainSteps = 8;

  void encode_field(ByteBuf& out, std::string_view name, std::string_view value, bool never_index, std::uint32_t position);
  void insert(std::string_view name, std::string_view value, std::uint32_t hash, std::uint32_t value_hash);

  detail::DynamicTable table_;
  std::uint32_t limit_;                // the constructor's table_size
  std::uint32_t pending_min_ = 0;      // the smallest capacity since the last block
  bool update_pending_ = false;
  std::uint64_t buckets_[kBuckets] = {};  // newest entry of each name-hash bucket
  // What the field at each position of the last blocks was: a static index (1-61), a dynamic entry
  // (its id + 64) or nothing (0). A response head repeats: its fields are checked there first.
  std::uint64_t recent_[kRecent] = {};
  std::uint32_t position_ = 0;  // of the next field in the block
  bool huffman_ = false;
  char last_content_length_[20] = {};
  std::uint8_t last_content_length_len_ = 0xff;  // none yet
};

}  // namespace weft::http2::hpack
