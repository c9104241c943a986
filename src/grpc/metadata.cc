#include "weft/grpc/metadata.h"

#include <array>
#include <cstdint>

#include "weft/codec/http1/http_message.h"

namespace weft::grpc {

namespace {

constexpr std::string_view kBinarySuffix = "-bin";
constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

constexpr std::array<std::int8_t, 256> make_decode_table() {
  std::array<std::int8_t, 256> table{};
  for (auto& entry : table) entry = -1;
  for (int i = 0; i < 64; ++i) table[static_cast<unsigned char>(kAlphabet[i])] = static_cast<std::int8_t>(i);
  return table;
}
constexpr std::array<std::int8_t, 256> kDecode = make_decode_table();

bool ends_with_bin(std::string_view key) noexcept {
  if (key.size() < kBinarySuffix.size()) return false;
  const std::string_view tail = key.substr(key.size() - kBinarySuffix.size());
  for (std::size_t i = 0; i < tail.size(); ++i) {
    char ch = tail[i];
    if (ch >= 'A' && ch <= 'Z') ch = static_cast<char>(ch - 'A' + 'a');
    if (ch != kBinarySuffix[i]) return false;
  }
  return true;
}

std::string quoted(std::string_view key) { return "'" + std::string(key) + "'"; }

}  // namespace

bool is_binary_metadata_key(std::string_view key) noexcept { return ends_with_bin(key); }

bool is_reserved_metadata_key(std::string_view key) noexcept {
  static constexpr std::array<std::string_view, 9> kTransport = {
      "content-type", "te", "user-agent", "host", "connection", "keep-alive", "proxy-connection",
      "transfer-encoding", "upgrade"};
  if (key.substr(0, 5) == "grpc-") return true;
  for (const std::string_view owned : kTransport) {
    if (key == owned) return true;
  }
  return false;
}

std::string base64_encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const std::uint32_t n = (std::uint32_t{static_cast<unsigned char>(bytes[i])} << 16) |
                            (std::uint32_t{static_cast<unsigned char>(bytes[i + 1])} << 8) |
                            std::uint32_t{static_cast<unsigned char>(bytes[i + 2])};
    out.push_back(kAlphabet[(n >> 18) & 63]);
    out.push_back(kAlphabet[(n >> 12) & 63]);
    out.push_back(kAlphabet[(n >> 6) & 63]);
    out.push_back(kAlphabet[n & 63]);
  }
  const std::size_t rest = bytes.size() - i;
  if (rest > 0) {
    std::uint32_t n = std::uint32_t{static_cast<unsigned char>(bytes[i])} << 16;
    if (rest == 2) n |= std::uint32_t{static_cast<unsigned char>(bytes[i + 1])} << 8;
    out.push_back(kAlphabet[(n >> 18) & 63]);
    out.push_back(kAlphabet[(n >> 12) & 63]);
    if (rest == 2) out.push_back(kAlphabet[(n >> 6) & 63]);
  }
  return out;  // unpadded, as the spec asks senders
}

std::optional<std::string> base64_decode(std::string_view text) {
  // Padding: at most two '=', only at the end of a length that is a multiple of four.
  if (!text.empty() && text.back() == '=') {
    if (text.size() % 4 != 0) return std::nullopt;
    text.remove_suffix(1);
    if (!text.empty() && text.back() == '=') text.remove_suffix(1);
  }
  if (text.size() % 4 == 1) return std::nullopt;
  std::string out;
  out.reserve(text.size() / 4 * 3 + 2);
  std::uint32_t bits = 0;
  int held = 0;
  for (const char ch : text) {
    const std::int8_t value = kDecode[static_cast<unsigned char>(ch)];
    if (value < 0) return std::nullopt;
    bits = (bits << 6) | static_cast<std::uint32_t>(value);
    held += 6;
    if (held >= 8) {
      held -= 8;
      out.push_back(static_cast<char>((bits >> held) & 0xFF));
    }
  }
  return out;
}

void check_metadata(std::string_view key, std::string_view value) {
  if (key.empty()) throw InvalidMetadata("grpc metadata: an empty key");
  for (const char ch : key) {
    const bool allowed = (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-' || ch == '_' || ch == '.';
    if (!allowed) {
      throw InvalidMetadata("grpc metadata: the key " + quoted(key) +
                            " has a character other than a-z 0-9 - _ . (keys are lowercase)");
    }
  }
  if (is_reserved_metadata_key(key)) throw InvalidMetadata("grpc metadata: the key " + quoted(key) + " is reserved");
  if (is_binary_metadata_key(key)) return;
  for (const char ch : value) {
    const auto byte = static_cast<unsigned char>(ch);
    if (byte < 0x20 || byte > 0x7E) {
      throw InvalidMetadata("grpc metadata: the value of " + quoted(key) +
                            " has a byte outside 0x20..0x7E (binary values go under a key ending in -bin)");
    }
  }
}

std::string encode_metadata_value(std::string_view key, std::string_view value) {
  check_metadata(key, value);
  return is_binary_metadata_key(key) ? base64_encode(value) : std::string(value);
}

std::optional<std::vector<std::string>> decode_metadata_values(std::string_view key, std::string_view wire_value) {
  std::vector<std::string> values;
  if (!is_binary_metadata_key(key)) {
    values.emplace_back(wire_value);
    return values;
  }
  for (;;) {
    const std::size_t comma = wire_value.find(',');
    std::string_view part = wire_value.substr(0, comma);
    while (!part.empty() && part.front() == ' ') part.remove_prefix(1);
    while (!part.empty() && part.back() == ' ') part.remove_suffix(1);
    std::optional<std::string> decoded = base64_decode(part);
    if (!decoded) return std::nullopt;
    values.push_back(std::move(*decoded));
    if (comma == std::string_view::npos) break;
    wire_value.remove_prefix(comma + 1);
  }
  return values;
}

std::optional<std::string> decode_first_metadata_value(std::string_view key, std::optional<std::string_view> wire_value) {
  if (!wire_value) return std::nullopt;
  std::optional<std::vector<std::string>> decoded = decode_metadata_values(key, *wire_value);
  if (!decoded || decoded->empty()) return std::nullopt;
  return std::move(decoded->front());
}

std::optional<Status> check_binary_metadata(const http::HttpRequest& request) {
  for (const http::Header& header : request.head()) {
    if (std::optional<Status> bad = check_binary_metadata(header.name, header.value)) return bad;
  }
  return std::nullopt;
}

std::optional<Status> check_binary_metadata(std::string_view key, std::string_view wire_value) {
  if (!is_binary_metadata_key(key) || decode_metadata_values(key, wire_value)) return std::nullopt;
  return Status(StatusCode::internal, "illegal base64 encoding in binary metadata " + quoted(key));
}

}  // namespace weft::grpc
