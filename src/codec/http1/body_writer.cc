#include "weft/codec/http1/body_writer.h"

#include <stdexcept>
#include <utility>

#include "body_sink.h"
#include "weft/codec/http1/server_codec.h"
#include "weft/core/log.h"
#include "weft/core/spawn.h"

namespace weft::http {

namespace detail {

Task<void> BodySink::write(ByteBuf chunk) {
  if (finished_) throw std::logic_error("BodyWriter::write after finish()");
  if (busy_) throw std::logic_error("BodyWriter::write while another call waits");
  const std::size_t n = chunk.readable_bytes();
  if (n == 0) co_return;
  if (content_length_ && written_ + n > *content_length_) {
    throw std::length_error("BodyWriter::write past the declared content length");
  }
  if (link_ != nullptr) {
    written_ += n;
    busy_ = true;
    if (!link_->sink_write(std::move(chunk))) {
      while (link_ != nullptr && !link_->sink_writable()) {
        try {
          co_await signal_.wait();
        } catch (...) {
          busy_ = false;
          throw;
        }
      }
    }
    busy_ = false;
    if (link_ == nullptr) throw ChannelClosedError("the response's stream is gone");
    co_return;
  }
  if (codec_ == nullptr) throw ChannelClosedError("the response's connection is gone");
  written_ += n;
  busy_ = true;
  const bool writable = codec_->stream_write(std::move(chunk));
  if (!writable) {
    while (codec_ != nullptr && !codec_->stream_writable()) {
      try {
        co_await signal_.wait();
      } catch (...) {
        busy_ = false;
        throw;
      }
    }
  }
  busy_ = false;
  if (codec_ == nullptr) throw ChannelClosedError("the response's connection is gone");
}

Task<void> BodySink::finish(const HeaderBlock& trailers) {
  if (finished_) throw std::logic_error("BodyWriter::finish called twice");
  if (busy_) throw std::logic_error("BodyWriter::finish while another call waits");
  if (content_length_ && written_ != *content_length_) {
    throw std::length_error("BodyWriter::finish short of the declared content length");
  }
  if (codec_ == nullptr && link_ == nullptr) throw ChannelClosedError("the response's connection is gone");
  finished_ = true;
  if (link_ != nullptr) {
    link_->sink_finish(trailers);
  } else {
    codec_->stream_finish(trailers.bytes());
  }
  co_return;
}

namespace {

weft::detail::Detached run_producer(std::shared_ptr<const BodyProducer> producer, std::shared_ptr<BodySink> sink,
                                    UniqueFunction<void(bool)> done) {
  {
    BodyWriter writer(sink);
    try {
      co_await (*producer)(writer);
    } catch (const std::exception& e) {
      log(LogLevel::debug, "a streamed response's producer failed: {}", e.what());
    } catch (...) {
      log(LogLevel::debug, "a streamed response's producer failed");
    }
  }
  done(sink->finished());
}

}  // namespace

void start_producer(EventLoop& loop, std::shared_ptr<const BodyProducer> producer, std::shared_ptr<BodySink> sink,
                    UniqueFunction<void(bool)> done) {
  weft::detail::Detached runner = run_producer(std::move(producer), std::move(sink), std::move(done));
  if (!weft::detail::start_on(loop, runner.handle)) {
    log(LogLevel::debug, "a streamed response's producer was refused: the loop has ended");
  }
}

}  // namespace detail

BodyWriter::BodyWriter(std::shared_ptr<detail::BodySink> sink) noexcept : sink_(std::move(sink)) {}
BodyWriter::BodyWriter(BodyWriter&&) noexcept = default;
BodyWriter& BodyWriter::operator=(BodyWriter&&) noexcept = default;
BodyWriter::~BodyWriter() = default;

Task<void> BodyWriter::write(ByteBuf chunk) {
  if (sink_ == nullptr) throw std::logic_error("BodyWriter::write on an empty handle");
  return sink_->write(std::move(chunk));
}

Task<void> BodyWriter::finish(const HeaderBlock& trailers) {
  if (sink_ == nullptr) throw std::logic_error("BodyWriter::finish on an empty handle");
  return sink_->finish(trailers);
}

std::optional<std::uint64_t> BodyWriter::content_length() const noexcept {
  return sink_ != nullptr ? sink_->content_length() : std::nullopt;
}
std::uint64_t BodyWriter::written_bytes() const noexcept { return sink_ != nullptr ? sink_->written_bytes() : 0; }

}  // namespace weft::http
