#pragma once
// weft-fetch's work, as a library its tests call: fetch every URL with client::HttpClient, a few at
// a time, print one line per URL and a summary. See docs/client.md.

#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace weft::fetch {

struct FetchOptions {
  // The URLs, by reference (argv's: a list of thousands is not copied); their texts outlive run_fetch.
  std::vector<std::string_view> urls;
  int concurrency = 16;   // requests in flight at once
  bool http2 = false;     // h2 by ALPN for https, h2c by prior knowledge for http; else HTTP/1.1 only
  bool insecure = false;  // https: no certificate checks
  double timeout_s = 30;  // each request's whole time (zero: none)
  // The DNS servers host names are resolved with, "ADDRESS:PORT" ("127.0.0.1:53", "[::1]:53");
  // empty: those of /etc/resolv.conf. /etc/hosts is read first either way.
  std::vector<std::string> dns_servers;
};

// Fetches `options.urls`; writes "STATUS BYTES SECONDS URL" per URL as each ends (a failure:
// "ERR 0 SECONDS URL error"), then "fetched N URLs: K ok, F failed, B bytes in S s". A status of
// 400 or more counts as a failure. Returns 0 when none failed, 1 otherwise. Throws
// std::invalid_argument for a DNS server that is not ADDRESS:PORT.
int run_fetch(const FetchOptions& options, std::FILE* out);

// The URLs of a list (weft-fetch --input): one per line, the spaces and tabs around it dropped; blank
// lines and lines that start with '#' skipped; CRLF line ends taken. Views into `text`.
std::vector<std::string_view> url_lines(std::string_view text);

}  // namespace weft::fetch
