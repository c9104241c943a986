// weft-fetch: fetches URLs with weft's HTTP client and prints "STATUS BYTES SECONDS URL" per URL and
// a summary; the exit status is non-zero when any failed. See docs/client.md.

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "fetch.h"

namespace {

// Whether `arg`, an option, takes the next argument as its value ("--timeout 5", "-c 16", "-kc 16").
bool takes_next(std::string_view arg) {
  if (arg.starts_with("--")) {
    return arg == "--concurrency" || arg == "--timeout" || arg == "--dns-server" || arg == "--input";
  }
  // -c and -i are the short options with a value, last in a group ("-kc 16"); "-c16" holds its own.
  return arg.back() == 'c' || arg.back() == 'i';
}

// The whole of `path` ("-": standard input) into `text`; false, with errno's message in `error`, when it
// cannot be read.
bool read_all(const std::string& path, std::string& text, std::string& error) {
  std::FILE* in = path == "-" ? stdin : std::fopen(path.c_str(), "rb");
  if (in == nullptr) {
    error = std::strerror(errno);
    return false;
  }
  char block[64 * 1024];
  std::size_t n = 0;
  while ((n = std::fread(block, 1, sizeof block, in)) > 0) text.append(block, n);
  const bool ok = std::ferror(in) == 0;
  if (!ok) error = std::strerror(errno);
  if (in != stdin) std::fclose(in);
  return ok;
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
  std::string input;
  app.add_option("--input,-i", input, "a file of URLs, one per line ('#' comments; \"-\": standard input)");
  std::vector<std::string> more_urls;  // none: split_arguments took them (here for --help)
  app.add_option("urls", more_urls, "the URLs (after \"--\": every argument)");
  try {
    app.parse(static_cast<int>(option_args.size()), option_args.data());
    options.urls.insert(options.urls.end(), more_urls.begin(), more_urls.end());
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  std::string listed;  // --input's text: options.urls views it until the end
  if (!input.empty()) {
    std::string error;
    if (!read_all(input, listed, error)) {
      std::fprintf(stderr, "weft-fetch: --input %s: %s\n", input.c_str(), error.c_str());
      return 2;
    }
    for (std::string_view url : weft::fetch::url_lines(listed)) options.urls.push_back(url);
  }
  if (options.urls.empty()) {
    std::fprintf(stderr, "weft-fetch: no URLs (give them as arguments or with --input)\n");
    return 2;
  }
  try {
    return weft::fetch::run_fetch(options, stdout);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "weft-fetch: --dns-server: %s\n", e.what());
    return 2;
  }
}
