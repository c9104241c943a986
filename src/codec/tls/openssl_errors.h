#pragma once
// OpenSSL's thread-local error queue, read into strings for weft's errors.

#include <string>

namespace weft::detail {

// The reasons OpenSSL queued on this thread, oldest first, joined with "; " (e.g. "certificate
// verify failed"); empties the queue. Empty when none was queued.
std::string take_openssl_errors();

}  // namespace weft::detail
