#include "weft/metrics/tls_metrics.h"

#include <string_view>

namespace weft::metrics::detail {

bool make_tls_handles(TlsHandles& h) noexcept {
  try {
    Family& family =
        Registry::global().counter("weft_tls_handshakes", "TLS handshakes, by side and result.", {"side", "result"});
    constexpr std::array<std::string_view, 2> kSides = {"client", "server"};
    constexpr std::array<std::string_view, 3> kResults = {"full", "resumed", "failed"};
    TlsHandles made;
    for (std::size_t side = 0; side < 2; ++side) {
      for (std::size_t result = 0; result < 3; ++result) {
        made.handshakes[side][result] = family.counter({kSides[side], kResults[result]});
      }
    }
    made.made = true;
    h = made;
    return true;
  } catch (...) {
    return false;
  }
}

}  // namespace weft::metrics::detail
