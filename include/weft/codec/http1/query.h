#pragma once
/// @file
/// URI helpers for request targets: percent-decoding (RFC 3986) and query strings as HTML forms and
/// browsers send them (application/x-www-form-urlencoded).
///
/// Malformed input has one answer everywhere: a '%' that is not followed by two hex digits makes the
/// whole text malformed (nullopt / false); no reading of it is the sender's, so none is guessed.
/// Decoded bytes are returned as they are, %00, %2F and invalid UTF-8 included: a caller that uses
/// them as a file name or as text checks them for that use.
///
/// Every function here is pure: thread-safe, and a QueryParams is safe to read from many threads.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace weft::http {

/// How '+' decodes: as itself in paths (RFC 3986), as a space in query strings (HTML forms).
enum class PlusDecoding : std::uint8_t { literal, space };

/// Appends the decoding of `text` to `out`. False when an escape is malformed; `out` then holds what
/// was decoded before it.
bool percent_decode_append(std::string_view text, std::string& out, PlusDecoding plus = PlusDecoding::literal);

/// The decoding of `text`, or nullopt when an escape is malformed.
std::optional<std::string> percent_decode(std::string_view text, PlusDecoding plus = PlusDecoding::literal);

/// One decoded name/value pair of a query string.
struct QueryParam {
  /// The decoded name.
  std::string_view name;
  /// The decoded value ("" for a pair without '=').
  std::string_view value;
};

/// A query string's name/value pairs, decoded ('+' as a space), in the order sent:
/// - pairs are separated by '&'; empty pairs ("a=1&&b=2", a leading or trailing '&') are skipped;
/// - the first '=' separates name and value ("a=b=c" is a -> "b=c"); a pair without '=' has an
///   empty value ("flag" is flag -> ""), and "=v" has an empty name;
/// - a name may repeat: get() returns the first value, iteration gives all of them.
/// The views it hands out point into the QueryParams and live as long as it (moves included).
class QueryParams {
 public:
  /// `query` is the part of the target after '?', without it (HttpRequest::query()). nullopt when
  /// any escape in it is malformed. Allocates twice (decoded bytes, pair index).
  static std::optional<QueryParams> parse(std::string_view query);

  /// The value of the first pair named `name` (compared decoded and case-sensitively).
  std::optional<std::string_view> get(std::string_view name) const noexcept;
  /// Whether a pair is named `name`.
  bool contains(std::string_view name) const noexcept { return get(name).has_value(); }

  /// The number of pairs.
  std::size_t size() const noexcept { return pairs_.size(); }
  /// size() == 0.
  bool empty() const noexcept { return pairs_.empty(); }
  /// The i-th pair, in the order sent; requires i < size().
  QueryParam operator[](std::size_t i) const noexcept;

  /// A forward iterator over the pairs, in the order sent.
  class Iterator {
   public:
    /// What it yields.
    using value_type = QueryParam;
    /// Distance between iterators.
    using difference_type = std::ptrdiff_t;
    Iterator() noexcept = default;
    /// The i-th pair of `owner`.
    Iterator(const QueryParams* owner, std::size_t i) noexcept : owner_(owner), i_(i) {}
    /// The pair.
    QueryParam operator*() const noexcept { return (*owner_)[i_]; }
    /// Moves to the next pair.
    Iterator& operator++() noexcept {
      ++i_;
      return *this;
    }
    /// Moves to the next pair; returns the iterator as it was.
    Iterator operator++(int) noexcept { return Iterator(owner_, i_++); }
    /// Same owner and position.
    bool operator==(const Iterator& other) const noexcept = default;

   private:
    const QueryParams* owner_ = nullptr;
    std::size_t i_ = 0;
  };
  /// The first pair.
  Iterator begin() const noexcept { return Iterator(this, 0); }
  /// Past the last pair.
  Iterator end() const noexcept { return Iterator(this, pairs_.size()); }

 private:
  // Offsets, not views, into decoded_: a short string moves its bytes when the QueryParams moves.
  struct Pair {
    std::size_t name_begin, name_size, value_begin, value_size;
  };
  std::string decoded_;
  std::vector<Pair> pairs_;
};

}  // namespace weft::http
