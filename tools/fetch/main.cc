// weft-fetch: fetches URLs with weft's HTTP client and prints "STATUS BYTES SECONDS URL" per URL and
// a summary; the exit status is non-zero when any failed. See docs/client.md.

#include <CLI/CLI.hpp>
#include <cstdio>
#include <stdexcept>

#include "fetch.h"

int main(int argc, char** argv) {
  weft::fetch::FetchOptions options;
  CLI::App app{"weft-fetch: fetch URLs with weft's HTTP client"};
  app.add_option("--concurrency,-c", options.concurrency, "requests in flight at once")->check(CLI::Range(1, 100000));
  app.add_flag("--http2", options.http2, "HTTP/2: h2 by ALPN for https, h2c by prior knowledge for http");
  app.add_flag("--insecure,-k", options.insecure, "https: accept any certificate");
  app.add_option("--timeout", options.timeout_s, "seconds each request may take (0: no limit)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--dns-server", options.dns_servers,
                 "a DNS server to resolve names with, ADDRESS:PORT (repeatable; default: /etc/resolv.conf's)");
  app.add_option("urls", options.urls, "the URLs")->required();
  CLI11_PARSE(app, argc, argv);
  try {
    return weft::fetch::run_fetch(options, stdout);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "weft-fetch: --dns-server: %s\n", e.what());
    return 2;
  }
}
