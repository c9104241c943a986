#include "response_scanner.h"

#include <algorithm>
#include <charconv>

namespace weft::load {

void ResponseScanner::reset() {
  state_ = State::head;
  remaining_ = 0;
  carry_.clear();
}

ResponseScanner::Counts ResponseScanner::scan(std::string_view bytes) {
  Counts counts;
  if (state_ == State::failed) {
    counts.error = true;
    return counts;
  }
  std::size_t pos = 0;
  while (pos < bytes.size() && step(bytes, pos, counts)) {
  }
  if (state_ == State::failed) counts.error = true;
  return counts;
}

// Lines inside chunked framing (size lines, CRLFs, trailers); `line` excludes the CRLF.
bool ResponseScanner::read_line(std::string_view data, std::size_t& pos, std::string_view& line) {
  const std::size_t eol = data.find('\n', pos);
  if (eol == std::string_view::npos) {
    carry_.append(data.substr(pos));
    pos = data.size();
    if (carry_.size() > limits_.max_chunk_line) state_ = State::failed;
    return false;
  }
  if (!carry_.empty()) {
    carry_.append(data.substr(pos, eol + 1 - pos));
    line = carry_;
  } else {
    line = data.substr(pos, eol + 1 - pos);
  }
  pos = eol + 1;
  if (line.size() < 2 || line[line.size() - 2] != '\r') {
    state_ = State::failed;
    return false;
  }
  line.remove_suffix(2);
  return true;
}

bool ResponseScanner::scan_head(std::string_view data, std::size_t& pos, Counts& counts) {
  std::string_view view = data.substr(pos);
  if (!carry_.empty()) {
    // Only as much of the new bytes as a head may span; the rest is parsed in place afterwards.
    const std::size_t before = carry_.size();
    carry_.append(view.substr(0, std::min(view.size(), limits_.max_header_section + 4)));
    http::ParseResult r = http::parse_response_head(carry_, head_, limits_);
    if (r.kind == http::ParseResult::Kind::incomplete) {
      pos += carry_.size() - before;
      if (carry_.size() > limits_.max_header_section + 4) state_ = State::failed;
      return false;
    }
    if (r.kind == http::ParseResult::Kind::error) {
      state_ = State::failed;
      return false;
    }
    pos += r.consumed - before;
    carry_.clear();
  } else {
    http::ParseResult r = http::parse_response_head(view, head_, limits_);
    if (r.kind == http::ParseResult::Kind::incomplete) {
      if (view.size() > limits_.max_header_section + 4) {
        state_ = State::failed;
      } else {
        carry_.assign(view);
        pos = data.size();
      }
      return false;
    }
    if (r.kind == http::ParseResult::Kind::error) {
      state_ = State::failed;
      return false;
    }
    pos += r.consumed;
  }
  if (head_.status >= 100 && head_.status < 200) return true;  // interim: the final response follows
  const bool no_body = head_.status == 204 || head_.status == 304;
  if (no_body || (!head_.chunked && head_.content_length.value_or(0) == 0)) {
    if (!no_body && !head_.chunked && !head_.content_length) {
      state_ = State::failed;  // a body delimited by close cannot be counted per request
      return false;
    }
    ++counts.responses;
    if (head_.status < 200 || head_.status > 299) ++counts.non_2xx;
    return true;
  }
  if (head_.status < 200 || head_.status > 299) ++counts.non_2xx;
  if (head_.chunked) {
    state_ = State::chunk_size;
  } else {
    remaining_ = *head_.content_length;
    state_ = State::fixed_body;
  }
  return true;
}

bool ResponseScanner::step(std::string_view data, std::size_t& pos, Counts& counts) {
  std::string_view line;
  switch (state_) {
    case State::head:
      return scan_head(data, pos, counts);
    case State::fixed_body: {
      const std::uint64_t take = std::min<std::uint64_t>(remaining_, data.size() - pos);
      pos += static_cast<std::size_t>(take);
      remaining_ -= take;
      if (remaining_ != 0) return false;
      ++counts.responses;
      state_ = State::head;
      return true;
    }
    case State::chunk_size: {
      if (!read_line(data, pos, line)) return false;
      line = line.substr(0, line.find(';'));
      std::uint64_t size = 0;
      auto [end, ec] = std::from_chars(line.data(), line.data() + line.size(), size, 16);
      carry_.clear();
      if (ec != std::errc() || line.empty() || size > limits_.max_body) {
        state_ = State::failed;
        return false;
      }
      remaining_ = size;
      state_ = size == 0 ? State::trailers : State::chunk_data;
      return true;
    }
    case State::chunk_data: {
      const std::uint64_t take = std::min<std::uint64_t>(remaining_, data.size() - pos);
      pos += static_cast<std::size_t>(take);
      remaining_ -= take;
      if (remaining_ != 0) return false;
      state_ = State::chunk_crlf;
      return true;
    }
    case State::chunk_crlf:
      if (!read_line(data, pos, line)) return false;
      carry_.clear();
      if (!line.empty()) {
        state_ = State::failed;
        return false;
      }
      state_ = State::chunk_size;
      return true;
    case State::trailers:
      if (!read_line(data, pos, line)) return false;
      carry_.clear();
      if (line.empty()) {
        ++counts.responses;
        state_ = State::head;
      }
      return true;
    case State::failed:
      return false;
  }
  return false;
}

}  // namespace weft::load
