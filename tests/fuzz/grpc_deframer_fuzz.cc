// libFuzzer target: gRPC's MessageDeframer (length-prefixed messages out of a body that arrives in
// pieces). Invariants checked: the messages do not depend on how the body is cut into chunks (fed
// whole and fed in the pieces the input's first bytes choose, the same messages come out, or the
// same error); no message is larger than the limit or than the input; after an error nothing more.

#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "weft/buffer/byte_buf.h"
#include "weft/grpc/message_framing.h"

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

struct Outcome {
  std::vector<std::string> messages;
  std::optional<int> error;  // the status code
};

// Feeds `body` in chunks whose sizes come from `cuts` (one byte each, 0 meaning the rest).
Outcome deframe(std::string_view body, std::string_view cuts, std::size_t limit) {
  weft::grpc::MessageDeframer deframer(limit);
  Outcome out;
  std::size_t at = 0, k = 0;
  while (at < body.size()) {
    std::size_t n = k < cuts.size() ? static_cast<unsigned char>(cuts[k++]) : 0;
    if (n == 0 || n > body.size() - at) n = body.size() - at;
    deframer.feed(weft::ByteBuf::copy_of(body.substr(at, n)));
    at += n;
    while (std::optional<weft::ByteBuf> m = deframer.next()) {
      check(!deframer.error().has_value());
      check(m->readable_bytes() <= limit);
      out.messages.push_back(m->to_string());
    }
    if (deframer.error()) {
      out.error = static_cast<int>(deframer.error()->code);
      check(!deframer.next().has_value());
      break;
    }
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  // The first byte: how many of the next bytes choose chunk sizes; then the limit's choice.
  const std::size_t cut_count = std::min<std::size_t>(data[0] % 16, size - 2);
  const std::string_view cuts(reinterpret_cast<const char*>(data + 1), cut_count);
  const std::size_t limit = std::size_t{1} << (data[1 + cut_count] % 17);  // 1 B .. 64 KiB
  const std::string_view body(reinterpret_cast<const char*>(data + 2 + cut_count), size - 2 - cut_count);

  const Outcome whole = deframe(body, {}, limit);
  const Outcome pieces = deframe(body, cuts, limit);
  check(whole.error == pieces.error);
  check(whole.messages == pieces.messages);
  std::size_t total = 0;
  for (const auto& m : whole.messages) total += 5 + m.size();
  check(total <= body.size());
  return 0;
}
