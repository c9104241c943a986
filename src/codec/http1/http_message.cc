#include "weft/codec/http1/http_message.h"

#include <atomic>
#include <cstring>
#include <stdexcept>

#include "char_scan.h"
#include "field_section.h"

namespace weft::http {

namespace {

void check_header(std::string_view name, std::string_view value) {
  if (!detail::all_tchar(name)) throw std::invalid_argument("HTTP header name is not a token: '" + std::string(name) + "'");
  if (detail::find_invalid_byte_in_value(value.data(), value.size()) != value.size()) {
    throw std::invalid_argument("HTTP header value of '" + std::string(name) + "' contains CR, LF, NUL or another control");
  }
}

std::atomic<std::uint64_t> g_next_header_block_id{1};

}  // namespace

HeaderBlock::HeaderBlock(HeaderBlock&& other) noexcept : bytes_(std::move(other.bytes_)), id_(other.id_) {
  other.bytes_.clear();
  other.id_ = 0;
}

HeaderBlock& HeaderBlock::operator=(HeaderBlock&& other) noexcept {
  if (this != &other) {
    bytes_ = std::move(other.bytes_);
    id_ = other.id_;
    other.bytes_.clear();
    other.id_ = 0;
  }
  return *this;
}

HeaderBlock& HeaderBlock::add(std::string_view name, std::string_view value) & {
  check_header(name, value);
  bytes_.append(name).append(": ").append(value).append("\r\n");
  id_ = g_next_header_block_id.fetch_add(1, std::memory_order_relaxed);
  return *this;
}

HttpResponse& HttpResponse::header(std::string_view name, std::string_view value) & {
  check_header(name, value);
  append(name, ": ", value, "\r\n");
  return *this;
}

void HttpResponse::append(std::string_view a, std::string_view b, std::string_view c, std::string_view d) {
  const std::size_t n = a.size() + b.size() + c.size() + d.size();
  if (overflow_.empty() && inline_size_ + n <= inline_.size()) {
    char* p = inline_.data() + inline_size_;
    for (std::string_view part : {a, b, c, d}) {
      part.copy(p, part.size());
      p += part.size();
    }
    inline_size_ += n;
    return;
  }
  if (overflow_.empty()) overflow_.assign(inline_.data(), inline_size_);
  overflow_.append(a).append(b).append(c).append(d);
}

HttpResponse& HttpResponse::body(ByteBuf bytes) & noexcept {
  body_ = std::move(bytes);
  body_view_ = {};
  file_ = FileRegion();
  drop_producer();
  return *this;
}

HttpResponse& HttpResponse::body(FileRegion file) & noexcept {
  body_.release();
  body_view_ = {};
  file_ = std::move(file);
  drop_producer();
  return *this;
}

HttpResponse& HttpResponse::stream(BodyProducer producer, std::optional<std::uint64_t> content_length) & {
  if (!producer) throw std::invalid_argument("HttpResponse::stream: an empty producer");
  body_.release();
  body_view_ = {};
  file_ = FileRegion();
  producer_ = std::make_shared<const BodyProducer>(std::move(producer));
  stream_length_ = content_length;
  return *this;
}

HttpResponse::HttpResponse(HttpResponse&& other) noexcept
    : status_(other.status_),
      close_(other.close_),
      request_sequence_(other.request_sequence_),
      shared_headers_(other.shared_headers_),
      inline_size_(other.inline_size_),
      overflow_(std::move(other.overflow_)),
      body_(std::move(other.body_)),
      body_view_(other.body_view_),
      file_(std::move(other.file_)),
      producer_(std::move(other.producer_)),
      stream_length_(other.stream_length_) {
  std::memcpy(inline_.data(), other.inline_.data(), inline_size_);
}

HttpResponse& HttpResponse::operator=(HttpResponse&& other) noexcept {
  if (this == &other) return *this;
  status_ = other.status_;
  close_ = other.close_;
  request_sequence_ = other.request_sequence_;
  shared_headers_ = other.shared_headers_;
  inline_size_ = other.inline_size_;
  std::memcpy(inline_.data(), other.inline_.data(), inline_size_);
  overflow_ = std::move(other.overflow_);
  body_ = std::move(other.body_);
  body_view_ = other.body_view_;
  file_ = std::move(other.file_);
  producer_ = std::move(other.producer_);
  stream_length_ = other.stream_length_;
  return *this;
}

void HttpResponse::own_borrowed() {
  if (!body_.has_storage() && !body_view_.empty()) {
    body_ = ByteBuf::copy_of(body_view_);
    body_view_ = {};
  }
  if (shared_headers_ != nullptr) {
    // The shared block is written before the response's own headers: keep that order.
    std::string headers(shared_headers_->bytes());
    headers.append(header_block());
    shared_headers_ = nullptr;
    if (headers.size() <= inline_.size()) {
      overflow_.clear();
      std::memcpy(inline_.data(), headers.data(), headers.size());
      inline_size_ = headers.size();
    } else {
      overflow_ = std::move(headers);
    }
  }
}

namespace {
// The value of the line named `name` in "Name: value\r\n" lines.
std::optional<std::string_view> find_line(std::string_view lines, std::string_view name) noexcept {
  while (!lines.empty()) {
    const std::size_t end = lines.find("\r\n");
    const std::string_view line = lines.substr(0, end);
    lines.remove_prefix(end == std::string_view::npos ? lines.size() : end + 2);
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos || !iequals(line.substr(0, colon), name)) continue;
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
    return value;
  }
  return std::nullopt;
}
}  // namespace

std::optional<std::string_view> HttpResponse::find_header(std::string_view name) const noexcept {
  if (auto v = find_line(shared_header_block(), name)) return v;
  return find_line(header_block(), name);
}

}  // namespace weft::http
