// weft-fetch: fetches URLs with weft's HTTP client and prints "STATUS BYTES SECONDS URL" per URL and
// a summary; the exit status is non-zero when any failed. See docs/client.md.

#include <CLI/CLI.hpp>
#include <cstdio>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "fetch.h"

namespace {

// Whether `arg`, an option, takes the next argument as its value ("--timeout 5", "-c 16", "-kc 16").
bool takes_next(std::string_view arg) {
  if (arg.starts_with("--")) {
    return arg == "--concurrency" || arg == "--timeout" || arg == "--dns-server";
  }
  const std::size_t c = arg.find('c', 1);  // -c is the one short option with a value: "-c16" holds it
  return c == arg.size() - 1;
}

// Splits argv: the URLs go to `urls` as they are (views of argv), the options (and their values) to `options` for
// CLI11, which copies an argument three times: a list of thousands of URLs cost more instructions
// per URL to parse than to fetch. After "--", every argument is a URL.
void split_arguments(int argc, char** argv, std::vector<const char*>& options, std::vector<std::string_view>& urls) {
  options.push_back(argv[0]);
  bool only_urls = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (!only_urls && arg == "--") {
      only_urls = true;
    } else if (only_urls || arg.size() < 2 || arg.front() != '-') {
      urls.emplace_back(arg);
    } else {
      options.push_back(argv[i]);
      if (takes_next(arg) && i + 1 < argc) options.push_back(argv[++i]);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  weft::fetch::FetchOptions options;
  std::vector<const char*> option_args;
  split_arguments(argc, argv, option_args, options.urls);
  CLI::App app{"weft-fetch: fetch URLs with weft's HTTP client"};
  app.add_option("--concurrency,-c", options.concurrency, "requests in flight at once")->check(CLI::Range(1, 100000));
  app.add_flag("--http2", options.http2, "HTTP/2: h2 by ALPN for https, h2c by prior knowledge for http");
  app.add_flag("--insecure,-k", options.insecure, "https: accept any certificate");
  app.add_option("--timeout", options.timeout_s, "seconds each request may take (0: no limit)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--dns-server", options.dns_servers,
                 "a DNS server to resolve names with, ADDRESS:PORT (repeatable; default: /etc/resolv.conf's)");
  std::vector<std::string> more_urls;  // none: split_arguments took them (here for --help)
  app.add_option("urls", more_urls, "the URLs (after \"--\": every argument)");
  try {
    app.parse(static_cast<int>(option_args.size()), option_args.data());
    options.urls.insert(options.urls.end(), more_urls.begin(), more_urls.end());
    if (options.urls.empty()) throw CLI::RequiredError("urls");
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    return weft::fetch::run_fetch(options, stdout);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "weft-fetch: --dns-server: %s\n", e.what());
    return 2;
  }
}
