#pragma once
/// @file
/// DnsError: why a name did not resolve, and which name it was.

#include <string>
#include <string_view>

#include "weft/core/error.h"

namespace weft {

/// The kind of a resolution failure.
enum class DnsErrorCode {
  not_found,       ///< the name does not exist (NXDOMAIN)
  no_address,      ///< the name exists but has no address of the family asked for (NODATA)
  timeout,         ///< no answer within the resolver's timeout
  server_failure,  ///< the server failed or refused (SERVFAIL, REFUSED, a malformed answer, unreachable)
  bad_name,        ///< not a host name (empty, too long, a label over 63 bytes, forbidden characters)
  cancelled,       ///< the resolver was destroyed before the answer came
  failure,         ///< anything else (out of memory, a local setup failure)
};

/// A short name of `code` ("NXDOMAIN", "timeout", ...). Thread-safe.
std::string_view to_string(DnsErrorCode code) noexcept;

/// A name could not be resolved: what() names the host and the reason, code() says which.
class DnsError : public Error {
 public:
  /// `host` as the caller gave it; `detail` (may be empty) adds what the resolver knows.
  DnsError(DnsErrorCode code, std::string host, std::string_view detail = {});
  /// Thread-safe.
  DnsErrorCode code() const noexcept { return code_; }
  /// Thread-safe. The name that failed.
  const std::string& host() const noexcept { return host_; }

 private:
  DnsErrorCode code_;
  std::string host_;
};

}  // namespace weft
