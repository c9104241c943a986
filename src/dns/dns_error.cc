#include "weft/dns/dns_error.h"

#include <fmt/format.h>

namespace weft {

std::string_view to_string(DnsErrorCode code) noexcept {
  switch (code) {
    case DnsErrorCode::not_found: return "NXDOMAIN (no such name)";
    case DnsErrorCode::no_address: return "no address of the family asked for";
    case DnsErrorCode::timeout: return "timeout";
    case DnsErrorCode::server_failure: return "server failure";
    case DnsErrorCode::bad_name: return "not a host name";
    case DnsErrorCode::cancelled: return "cancelled";
    case DnsErrorCode::failure: break;
  }
  return "resolution failed";
}

DnsError::DnsError(DnsErrorCode code, std::string host, std::string_view detail)
    : Error(detail.empty() ? fmt::format("dns: cannot resolve '{}': {}", host, to_string(code))
                           : fmt::format("dns: cannot resolve '{}': {} ({})", host, to_string(code), detail)),
      code_(code),
      host_(std::move(host)) {}

}  // namespace weft
