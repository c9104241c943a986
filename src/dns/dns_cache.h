#pragma once
// The resolver's cache: name and family -> addresses (positive) or an error code (negative), each
// until its expiry. Bounded: past max_entries, expired entries go first, then the oldest. One
// resolver's, on its loop's thread.

#include <string>
#include <unordered_map>
#include <vector>

#include "weft/channel/socket_address.h"
#include "weft/core/clock.h"
#include "weft/dns/dns_error.h"

namespace weft::dns_detail {

struct CacheEntry {
  std::vector<SocketAddress> addresses;        // port 0; empty for a negative entry
  DnsErrorCode error = DnsErrorCode::failure;  // a negative entry's
  TimePoint expires;
  TimePoint stored;
};

class DnsCache {
 public:
  explicit DnsCache(std::size_t max_entries) : max_entries_(max_entries) {}
  // The live entry of `key`, or null (an expired one is dropped).
  const CacheEntry* find(const std::string& key, TimePoint now);
  void put(const std::string& key, CacheEntry entry, TimePoint now);
  void clear() noexcept { entries_.clear(); }
  std::size_t size() const noexcept { return entries_.size(); }

 private:
  void make_room(TimePoint now);

  std::size_t max_entries_;
  std::unordered_map<std::string, CacheEntry> entries_;
};

}  // namespace weft::dns_detail
