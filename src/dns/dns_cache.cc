#include "dns_cache.h"

namespace weft::dns_detail {

const CacheEntry* DnsCache::find(const std::string& key, TimePoint now) {
  auto it = entries_.find(key);
  if (it == entries_.end()) return nullptr;
  if (it->second.expires <= now) {
    entries_.erase(it);
    return nullptr;
  }
  return &it->second;
}

void DnsCache::put(const std::string& key, CacheEntry entry, TimePoint now) {
  if (max_entries_ == 0 || entry.expires <= now) return;
  if (entries_.size() >= max_entries_ && !entries_.contains(key)) make_room(now);
  entry.stored = now;
  entries_.insert_or_assign(key, std::move(entry));
}

void DnsCache::make_room(TimePoint now) {
  std::erase_if(entries_, [now](const auto& kv) { return kv.second.expires <= now; });
  while (entries_.size() >= max_entries_) {
    auto oldest = entries_.begin();
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (it->second.stored < oldest->second.stored) oldest = it;
    }
    entries_.erase(oldest);
  }
}

}  // namespace weft::dns_detail
