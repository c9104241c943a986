// The hosts(5) parser: comments, aliases, case, IPv6, lines that are not entries.

#include "weft/dns/hosts_file.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace weft {
namespace {

std::vector<std::string> lookup(const HostsFile& hosts, std::string_view name) {
  std::vector<std::string> out;
  for (const SocketAddress& a : hosts.lookup(name)) out.push_back(a.host());
  return out;
}

TEST(HostsFile, NamesAndAliasesOfEachLine) {
  HostsFile hosts = HostsFile::parse(
      "127.0.0.1\tlocalhost\n"
      "# a comment line\n"
      "  192.0.2.5   Web.Example.  www.example   # trailing comment\n"
      "2001:db8::5 web.example\n"
      "::1 localhost ip6-localhost\r\n");
  EXPECT_EQ(lookup(hosts, "localhost"), (std::vector<std::string>{"127.0.0.1", "::1"}));
  EXPECT_EQ(lookup(hosts, "web.example"), (std::vector<std::string>{"192.0.2.5", "2001:db8::5"}));
  EXPECT_EQ(lookup(hosts, "www.example"), std::vector<std::string>{"192.0.2.5"});
  EXPECT_EQ(lookup(hosts, "ip6-localhost"), std::vector<std::string>{"::1"});
  EXPECT_TRUE(lookup(hosts, "example").empty());
}

TEST(HostsFile, SkipsLinesThatAreNotEntries) {
  HostsFile hosts = HostsFile::parse(
      "not-an-address name.example\n"
      "300.1.1.1 bad.example\n"
      "192.0.2.1\n"
      "192.0.2.2 bad..name good.example\n"
      "#192.0.2.3 commented.example\n"
      "192.0.2.4 dup.example\n192.0.2.4 dup.example\n");
  EXPECT_TRUE(lookup(hosts, "name.example").empty());
  EXPECT_TRUE(lookup(hosts, "bad.example").empty());
  EXPECT_TRUE(lookup(hosts, "commented.example").empty());
  EXPECT_EQ(lookup(hosts, "good.example"), std::vector<std::string>{"192.0.2.2"});
  EXPECT_EQ(lookup(hosts, "dup.example"), std::vector<std::string>{"192.0.2.4"});
}

TEST(HostsFile, MissingFileIsEmpty) {
  EXPECT_TRUE(HostsFile::load("/nonexistent/weft-hosts").empty());
  EXPECT_TRUE(HostsFile::parse("").empty());
}

}  // namespace
}  // namespace weft
