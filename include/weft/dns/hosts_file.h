#pragma once
/// @file
/// HostsFile: the names of an /etc/hosts-format file, looked up before DNS.

#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "weft/channel/socket_address.h"

namespace weft {

/// The name -> addresses table of a hosts(5) file: "ADDRESS NAME [ALIAS...]" per line, '#' to the
/// end of a line is a comment, a line whose address is not numeric IPv4/IPv6 is skipped. Names match
/// case-insensitively. A value: const methods are thread-safe.
class HostsFile {
 public:
  /// An empty table.
  HostsFile() = default;
  /// The table of `text`, in hosts(5) format.
  static HostsFile parse(std::string_view text);
  /// The table of the file at `path`; a file that does not exist (or cannot be read) gives an empty
  /// table, as it does to the C library.
  static HostsFile load(const std::string& path);

  /// The addresses of `name` (lower case, no trailing dot), port 0, in the file's order; empty when
  /// the file does not name it.
  const std::vector<SocketAddress>& lookup(std::string_view name) const;
  /// Whether the table holds no name.
  bool empty() const noexcept { return names_.empty(); }

 private:
  std::unordered_map<std::string, std::vector<SocketAddress>> names_;
};

}  // namespace weft
