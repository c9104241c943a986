#pragma once
// Command-line flags of the echo examples: `--name value` or `--name=value`, --help.

#include <charconv>
#include <cstdio>
#include <string_view>
#include <system_error>

namespace echo_flags {

// True and `out` set when `text` is a whole integer in [min, max].
inline bool parse_int(std::string_view text, int min, int max, int& out) {
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < min || value > max) return false;
  out = value;
  return true;
}

enum class Verdict { ok, bad_value, unknown };

inline Verdict valid(bool ok) { return ok ? Verdict::ok : Verdict::bad_value; }

// Calls apply(flag, value) -> Verdict for every flag; print_usage(FILE*) on --help. Returns 0 to go on,
// 1 after printing why the flags are bad, -1 after --help (exit 0).
template <class Apply, class Usage>
int for_each_flag(int argc, char** argv, const char* program, Usage print_usage, Apply apply) {
  for (int i = 1; i < argc; ++i) {
    std::string_view flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      print_usage(stdout);
      return -1;
    }
    std::string_view value;
    if (auto eq = flag.find('='); flag.starts_with("--") && eq != std::string_view::npos) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      std::fprintf(stderr, "%s: %.*s needs a value (see --help)\n", program, static_cast<int>(flag.size()), flag.data());
      return 1;
    }
    switch (apply(flag, value)) {
      case Verdict::ok:
        break;
      case Verdict::unknown:
        std::fprintf(stderr, "%s: unknown flag %.*s (see --help)\n", program, static_cast<int>(flag.size()),
                     flag.data());
        return 1;
      case Verdict::bad_value:
        std::fprintf(stderr, "%s: bad value '%.*s' for %.*s (see --help)\n", program, static_cast<int>(value.size()),
                     value.data(), static_cast<int>(flag.size()), flag.data());
        return 1;
    }
  }
  return 0;
}

}  // namespace echo_flags
