#include "weft/codec/http1/query.h"

#include <algorithm>

#include "field_section.h"

namespace weft::http {
bool percent_decode_append(std::string_view text, std::string& out, PlusDecoding plus) {
  const bool plus_is_space = plus == PlusDecoding::space;
  std::size_t i = 0;
  while (i < text.size()) {
    // The run of plain bytes up to the next escape (or '+') is copied in one append.
    std::size_t run = i;
    while (run < text.size() && text[run] != '%' && !(plus_is_space && text[run] == '+')) ++run;
    out.append(text.data() + i, run - i);
    if (run == text.size()) break;
    if (text[run] == '+') {
      out.push_back(' ');
      i = run + 1;
      continue;
    }
    if (text.size() - run < 3) return false;  // '%' needs two hex digits after it
    const int high = detail::hex_value(text[run + 1]), low = detail::hex_value(text[run + 2]);
    if (high < 0 || low < 0) return false;
    out.push_back(static_cast<char>(high * 16 + low));
    i = run + 3;
  }
  return true;
}

std::optional<std::string> percent_decode(std::string_view text, PlusDecoding plus) {
  std::string out;
  out.reserve(text.size());
  if (!percent_decode_append(text, out, plus)) return std::nullopt;
  return out;
}

std::optional<QueryParams> QueryParams::parse(std::string_view query) {
  QueryParams params;
  params.decoded_.reserve(query.size());
  while (!query.empty()) {
    const std::string_view pair = query.substr(0, query.find('&'));
    query.remove_prefix(std::min(query.size(), pair.size() + 1));
    if (pair.empty()) continue;
    const std::size_t eq = pair.find('=');
    const std::string_view name = pair.substr(0, eq);
    const std::string_view value = eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1);
    Pair p{};
    p.name_begin = params.decoded_.size();
    if (!percent_decode_append(name, params.decoded_, PlusDecoding::space)) return std::nullopt;
    p.name_size = params.decoded_.size() - p.name_begin;
    p.value_begin = params.decoded_.size();
    if (!percent_decode_append(value, params.decoded_, PlusDecoding::space)) return std::nullopt;
    p.value_size = params.decoded_.size() - p.value_begin;
    params.pairs_.push_back(p);
  }
  return params;
}

QueryParam QueryParams::operator[](std::size_t i) const noexcept {
  const Pair& p = pairs_[i];
  const std::string_view all = decoded_;
  return {all.substr(p.name_begin, p.name_size), all.substr(p.value_begin, p.value_size)};
}

std::optional<std::string_view> QueryParams::get(std::string_view name) const noexcept {
  for (std::size_t i = 0; i < pairs_.size(); ++i) {
    QueryParam p = (*this)[i];
    if (p.name == name) return p.value;
  }
  return std::nullopt;
}

}  // namespace weft::http
