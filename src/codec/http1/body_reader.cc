#include "weft/codec/http1/body_reader.h"

#include <stdexcept>
#include <string>
#include <utility>

#include "body_source.h"
#include "weft/codec/http1/server_codec.h"

namespace weft::http {

namespace detail {

void BodySource::push(ByteBuf chunk) {
  if (abandoned_ || ended()) return;
  const std::size_t n = chunk.readable_bytes();
  if (n == 0) return;
  arrived_ += n;
  if (arrived_ > limit_) {
    fail(std::make_exception_ptr(
        BodyTooLargeError("request body past its route's limit of " + std::to_string(limit_) + " bytes")));
    return;
  }
  buffered_ += n;
  if (buffered_ > peak_buffered_) peak_buffered_ = buffered_;
  queue_.push_back(std::move(chunk));
  copied_tail_ = false;
  if (waiting_) signal_.notify();
}

void BodySource::push_copy(const std::uint8_t* data, std::size_t n, ByteBufAllocator& allocator, std::size_t size) {
  if (abandoned_ || ended() || n == 0) return;
  ByteBuf* tail = copied_tail_ && !queue_.empty() ? &queue_[queue_.size() - 1] : nullptr;
  if (tail == nullptr || tail->writable_bytes() < n) {
    ByteBuf fresh = allocator.buffer(n > size ? n : size);
    fresh.write_bytes(data, n);
    push(std::move(fresh));
    copied_tail_ = true;
    return;
  }
  arrived_ += n;
  if (arrived_ > limit_) {
    fail(std::make_exception_ptr(
        BodyTooLargeError("request body past its route's limit of " + std::to_string(limit_) + " bytes")));
    return;
  }
  tail->write_bytes(data, n);
  buffered_ += n;
  if (buffered_ > peak_buffered_) peak_buffered_ = buffered_;
  if (waiting_) signal_.notify();
}

void BodySource::end(std::string trailer_block) {
  if (ended()) return;
  ended_ = true;
  trailers_ = std::move(trailer_block);
  if (waiting_) signal_.notify();
}

void BodySource::fail(std::exception_ptr error) {
  if (ended()) return;
  error_ = std::move(error);
  queue_.clear();
  copied_tail_ = false;
  buffered_ = 0;
  if (waiting_) signal_.notify();
}

Task<std::optional<ByteBuf>> BodySource::next() {
  if (abandoned_) throw std::logic_error("BodyReader::next after the body was let go");
  if (waiting_) throw std::logic_error("BodyReader::next while another next() waits");
  if (continue_owed_) {
    continue_owed_ = false;
    if (codec_ != nullptr) codec_->body_wanted(*this, sequence_);
  }
  while (queue_.empty() && error_ == nullptr && !ended_) {
    waiting_ = true;
    try {
      co_await signal_.wait();
    } catch (...) {
      waiting_ = false;
      throw;
    }
    waiting_ = false;
  }
  if (error_ != nullptr) std::rethrow_exception(error_);
  if (queue_.empty()) co_return std::nullopt;  // ended
  ByteBuf chunk = queue_.pop_front();
  if (queue_.empty()) copied_tail_ = false;
  buffered_ -= chunk.readable_bytes();
  received_ += chunk.readable_bytes();
  if (link_ != nullptr) link_->body_taken(*this, chunk.readable_bytes());
  if (codec_ != nullptr && drained()) codec_->body_taken(*this);
  co_return std::optional<ByteBuf>(std::move(chunk));
}

void BodySource::limit(std::uint64_t max_bytes) {
  limit_ = max_bytes;
  if ((content_length_ && *content_length_ > max_bytes) || arrived_ > max_bytes) {
    // Also when it has all arrived already: the route is not to see it.
    ended_ = false;
    error_ = nullptr;
    fail(std::make_exception_ptr(BodyTooLargeError("request body of " +
                                                   std::to_string(content_length_.value_or(arrived_)) +
                                                   " bytes past its route's limit of " + std::to_string(max_bytes))));
  }
}

void BodySource::abandon() noexcept {
  if (abandoned_) return;
  abandoned_ = true;
  queue_.clear();
  const std::size_t dropped = std::exchange(buffered_, 0);
  if (codec_ != nullptr) codec_->body_abandoned(*this);  // still linked: the body has not arrived whole
  if (link_ != nullptr) link_->body_abandoned(*this, dropped);
}

}  // namespace detail

BodyReader::BodyReader(std::shared_ptr<detail::BodySource> source) noexcept : source_(std::move(source)) {}

BodyReader::BodyReader(BodyReader&& other) noexcept = default;

BodyReader& BodyReader::operator=(BodyReader&& other) noexcept {
  if (this != &other) {
    if (source_ != nullptr) source_->abandon();
    source_ = std::move(other.source_);
  }
  return *this;
}

BodyReader::~BodyReader() {
  if (source_ != nullptr) source_->abandon();
}

Task<std::optional<ByteBuf>> BodyReader::next() {
  if (source_ == nullptr) throw std::logic_error("BodyReader::next on an empty handle");
  return source_->next();
}

void BodyReader::limit(std::uint64_t max_bytes) {
  if (source_ != nullptr) source_->limit(max_bytes);
}

std::optional<std::uint64_t> BodyReader::content_length() const noexcept {
  return source_ != nullptr ? source_->content_length() : std::nullopt;
}
std::uint64_t BodyReader::received_bytes() const noexcept { return source_ != nullptr ? source_->received_bytes() : 0; }
std::size_t BodyReader::buffered_bytes() const noexcept { return source_ != nullptr ? source_->buffered_bytes() : 0; }
std::size_t BodyReader::peak_buffered_bytes() const noexcept {
  return source_ != nullptr ? source_->peak_buffered_bytes() : 0;
}
std::string_view BodyReader::trailer_block() const noexcept {
  return source_ != nullptr ? std::string_view(source_->trailer_block()) : std::string_view();
}

}  // namespace weft::http
