#include "openssl_errors.h"

#include <openssl/err.h>

namespace weft::detail {

std::string take_openssl_errors() {
  std::string out;
  while (unsigned long code = ERR_get_error()) {
    const char* reason = ERR_reason_error_string(code);
    if (!out.empty()) out += "; ";
    if (reason != nullptr) {
      out += reason;
    } else {
      char buf[256];
      ERR_error_string_n(code, buf, sizeof buf);
      out += buf;
    }
  }
  return out;
}

}  // namespace weft::detail
