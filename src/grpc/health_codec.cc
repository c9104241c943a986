// health.proto's two messages by hand: HealthCheckRequest{string service = 1} and
// HealthCheckResponse{ServingStatus status = 1}, with protobuf's rules for what else a message holds.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "weft/grpc/health.h"

namespace weft::grpc {

namespace {

enum WireType : std::uint32_t {
  kVarint = 0,
  kFixed64 = 1,
  kLengthDelimited = 2,
  kStartGroup = 3,
  kEndGroup = 4,
  kFixed32 = 5
};

// Reads protobuf's wire format from the front of `in_`; every read fails (false) past the end.
class Reader {
 public:
  explicit Reader(std::string_view in) noexcept : in_(in) {}
  bool done() const noexcept { return in_.empty(); }

  bool varint(std::uint64_t& value) noexcept {
    value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (in_.empty()) return false;
      const auto byte = static_cast<std::uint8_t>(in_.front());
      in_.remove_prefix(1);
      value |= std::uint64_t{byte & 0x7fu} << shift;
      if ((byte & 0x80u) == 0) return shift < 63 || byte <= 1;  // a tenth byte holds one bit
    }
    return false;
  }
  bool bytes(std::size_t n, std::string_view& out) noexcept {
    if (in_.size() < n) return false;
    out = in_.substr(0, n);
    in_.remove_prefix(n);
    return true;
  }
  bool tag(std::uint32_t& field, std::uint32_t& wire_type) noexcept {
    std::uint64_t key = 0;
    if (!varint(key) || key > 0xffffffffu) return false;
    field = static_cast<std::uint32_t>(key >> 3);
    wire_type = static_cast<std::uint32_t>(key & 7u);
    return field != 0;
  }
  bool length_delimited(std::string_view& out) noexcept {
    std::uint64_t n = 0;
    return varint(n) && n <= in_.size() && bytes(static_cast<std::size_t>(n), out);
  }

  // Skips the value of a field not wanted, as protobuf keeps it among the unknown fields. A group
  // (deprecated, but valid) up to its end tag; `depth` bounds nested groups.
  bool skip(std::uint32_t field, std::uint32_t wire_type, int depth = 0) noexcept {
    std::string_view ignored;
    std::uint64_t value = 0;
    switch (wire_type) {
      case kVarint: return varint(value);
      case kFixed64: return bytes(8, ignored);
      case kLengthDelimited: return length_delimited(ignored);
      case kFixed32: return bytes(4, ignored);
      case kStartGroup: {
        if (depth >= 32) return false;
        for (;;) {
          std::uint32_t inner = 0, inner_type = 0;
          if (!tag(inner, inner_type)) return false;
          if (inner_type == kEndGroup) return inner == field;
          if (!skip(inner, inner_type, depth + 1)) return false;
        }
      }
      default:  // an end group with no start, or 6 and 7
        return false;
    }
  }

 private:
  std::string_view in_;
};

void append_varint(std::string& out, std::uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

}  // namespace

std::string_view serving_status_name(ServingStatus status) noexcept {
  switch (status) {
    case ServingStatus::unknown: return "UNKNOWN";
    case ServingStatus::serving: return "SERVING";
    case ServingStatus::not_serving: return "NOT_SERVING";
    case ServingStatus::service_unknown: return "SERVICE_UNKNOWN";
  }
  return "INVALID";
}

ByteBuf health_encode_request(std::string_view service) {
  std::string out;
  if (!service.empty()) {  // proto3 leaves a default value out
    out.push_back(static_cast<char>((1u << 3) | kLengthDelimited));
    append_varint(out, service.size());
    out.append(service);
  }
  return ByteBuf::copy_of(out);
}

std::optional<std::string> health_decode_request(std::string_view bytes) {
  Reader in(bytes);
  std::string_view service;
  while (!in.done()) {
    std::uint32_t field = 0, wire_type = 0;
    if (!in.tag(field, wire_type)) return std::nullopt;
    if (field == 1 && wire_type == kLengthDelimited) {
      if (!in.length_delimited(service)) return std::nullopt;
    } else if (!in.skip(field, wire_type)) {  // field 1 of another wire type too: an unknown field
      return std::nullopt;
    }
  }
  return std::string(service);
}

ByteBuf health_encode_response(ServingStatus status) {
  std::string out;
  if (status != ServingStatus::unknown) {  // proto3 leaves a default value out
    out.push_back(static_cast<char>((1u << 3) | kVarint));
    // An enum is an int32: a negative one takes ten bytes, sign-extended.
    append_varint(out, static_cast<std::uint64_t>(static_cast<std::int64_t>(status)));
  }
  return ByteBuf::copy_of(out);
}

std::optional<ServingStatus> health_decode_response(std::string_view bytes) {
  Reader in(bytes);
  std::uint64_t status = 0;
  while (!in.done()) {
    std::uint32_t field = 0, wire_type = 0;
    if (!in.tag(field, wire_type)) return std::nullopt;
    if (field == 1 && wire_type == kVarint) {
      if (!in.varint(status)) return std::nullopt;
    } else if (!in.skip(field, wire_type)) {
      return std::nullopt;
    }
  }
  return static_cast<ServingStatus>(static_cast<std::int32_t>(status));
}

}  // namespace weft::grpc
