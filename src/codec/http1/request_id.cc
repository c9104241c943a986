#include "weft/codec/http1/request_id.h"

#include <array>
#include <cstdint>
#include <random>

namespace weft::http {
namespace {

bool is_id_char(char c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         std::string_view("-_.:/+=@").find(c) != std::string_view::npos;
}

// splitmix64 (Vigna): a fast generator whose outputs are all distinct over its period; seeded per
// thread from std::random_device, so ids of different threads and processes do not collide.
std::uint64_t next_random() noexcept {
  thread_local std::uint64_t state = [] {
    std::random_device device;
    return (static_cast<std::uint64_t>(device()) << 32) ^ device();
  }();
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace

RequestId::RequestId(std::string header) : header_(std::move(header)) {
  // Validates the name the way responses do (throws std::invalid_argument).
  HttpResponse probe;
  probe.header(header_, "x");
}

bool RequestId::acceptable(std::string_view id) noexcept {
  if (id.empty() || id.size() > 128) return false;
  for (char c : id) {
    if (!is_id_char(c)) return false;
  }
  return true;
}

std::string RequestId::generate() {
  constexpr std::string_view kHex = "0123456789abcdef";
  std::string id(32, '0');
  for (std::size_t half = 0; half < 2; ++half) {
    std::uint64_t bits = next_random();
    for (std::size_t i = 0; i < 16; ++i, bits >>= 4) id[half * 16 + i] = kHex[bits & 0xf];
  }
  return id;
}

std::optional<HttpResponse> RequestId::before(Request& request) {
  std::optional<std::string_view> incoming = request.header(header_);
  request.set(kKey, incoming && acceptable(*incoming) ? std::string(*incoming) : generate());
  return std::nullopt;
}

void RequestId::after(Request& request, HttpResponse& response) {
  std::optional<std::string_view> id = of(request);
  if (id && !response.find_header(header_)) response.header(header_, *id);
}

}  // namespace weft::http
