#include "weft/dns/hosts_file.h"

#include <fstream>
#include <sstream>

#include "host_name.h"

namespace weft {

HostsFile HostsFile::parse(std::string_view text) {
  HostsFile table;
  while (!text.empty()) {
    std::size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view{} : text.substr(end + 1);
    line = line.substr(0, line.find('#'));
    std::optional<SocketAddress> address;
    while (!line.empty()) {
      std::size_t start = line.find_first_not_of(" \t\r");
      if (start == std::string_view::npos) break;
      line.remove_prefix(start);
      std::size_t stop = line.find_first_of(" \t\r");
      std::string_view word = line.substr(0, stop);
      line = stop == std::string_view::npos ? std::string_view{} : line.substr(stop);
      if (!address) {
        address = dns_detail::numeric_address(word);
        if (!address) break;  // not a numeric address: the line is skipped
        continue;
      }
      std::string name = dns_detail::normalize_host_name(word);
      if (name.empty()) continue;
      auto& addresses = table.names_[std::move(name)];
      bool seen = false;
      for (const SocketAddress& a : addresses) seen = seen || a.to_string() == address->to_string();
      if (!seen) addresses.push_back(*address);
    }
  }
  return table;
}

HostsFile HostsFile::load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  std::ostringstream text;
  text << in.rdbuf();
  return parse(text.str());
}

const std::vector<SocketAddress>& HostsFile::lookup(std::string_view name) const {
  static const std::vector<SocketAddress> none;
  auto it = names_.find(std::string(name));
  return it == names_.end() ? none : it->second;
}

}  // namespace weft
