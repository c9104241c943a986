#include "weft/grpc/server_call.h"

#include <coroutine>
#include <exception>
#include <iterator>
#include <stdexcept>

#include "message_copy.h"
#include "server_metrics.h"
#include "weft/core/loop_signal.h"
#include "weft/core/unique_function.h"
#include "weft/grpc/timeout.h"

namespace weft::grpc {

namespace {
std::string describe(const Status& status) {
  return "gRPC call ended: " + std::string(status_code_name(status.code)) +
         (status.message.empty() ? "" : ": " + status.message);
}
}  // namespace

CallEnded::CallEnded(Status status) : Error(describe(status)), status_(std::move(status)) {}
StatusError::StatusError(Status status) : Error(describe(status)), status_(std::move(status)) {}

bool is_grpc_content_type(std::string_view content_type) noexcept {
  constexpr std::string_view kGrpc = "application/grpc";
  if (content_type.size() < kGrpc.size()) return false;
  for (std::size_t i = 0; i < kGrpc.size(); ++i) {
    char ch = content_type[i];
    if (ch >= 'A' && ch <= 'Z') ch = static_cast<char>(ch - 'A' + 'a');
    if (ch != kGrpc[i]) return false;
  }
  const std::string_view rest = content_type.substr(kGrpc.size());
  return rest.empty() || rest == "+proto" || rest.front() == ';' || rest.substr(0, 7) == "+proto;";
}

ServerCall::ServerCall(Connection<http2::StreamMessage>& connection, http2::StreamHeaders headers,
                       const ServerOptions& options)
    : connection_(connection),
      headers_(std::move(headers)),
      deframer_(options.max_receive_message_bytes, headers_.request.header("grpc-encoding").value_or("")),
      compression_(options.response_compression),
      request_ended_(headers_.end_stream) {
  if (auto value = headers_.request.header("grpc-timeout")) timeout_ = parse_timeout(*value);
}

ServerCall::~ServerCall() { stop_deadline(); }

void ServerCall::add_response_header(std::string_view name, std::string_view value) {
  if (headers_written_ || finished_) {
    throw std::logic_error("grpc::ServerCall: response headers after the head was sent");
  }
  std::string wire_value = encode_metadata_value(name, value);
  response_headers_.emplace_back(name, std::move(wire_value));
}

void ServerCall::add_trailing_metadata(std::string_view name, std::string_view value) {
  if (finished_) throw std::logic_error("grpc::ServerCall: trailing metadata after the call finished");
  std::string wire_value = encode_metadata_value(name, value);
  trailing_metadata_.emplace_back(name, std::move(wire_value));
}

std::vector<std::string> ServerCall::metadata_values(std::string_view key) const {
  std::vector<std::string> values;
  for (const http::Header& header : headers_.request.head()) {
    if (!http::iequals(header.name, key)) continue;
    // A -bin value that does not decode failed the call before its handler (check_binary_metadata).
    if (auto decoded = decode_metadata_values(key, header.value)) {
      for (std::string& value : *decoded) values.push_back(std::move(value));
    }
  }
  return values;
}

std::optional<std::string> ServerCall::metadata(std::string_view key) const {
  return decode_first_metadata_value(key, headers_.request.header(key));
}

void ServerCall::set_compression(CompressionOptions options) {
  if (headers_written_ || finished_) throw std::logic_error("grpc::ServerCall: set_compression after the head was sent");
  if (options.level < -1 || options.level > 9) {
    throw std::invalid_argument("grpc::ServerCall::set_compression: level " + std::to_string(options.level) +
                                " is not -1..9");
  }
  compression_ = options;
}

void ServerCall::throw_ended(std::exception_ptr cause) {
  if (!ended_) {
    // The stream went away under the call: a client reset, or the connection closed.
    bool reset = false;
    try {
      std::rethrow_exception(cause);
    } catch (const http2::StreamResetError&) {
      reset = true;
    } catch (...) {
    }
    mark_ended(Status{StatusCode::cancelled, reset ? "the client reset the stream" : "the stream closed"});
  }
  throw CallEnded(*ended_);
}

template <class Message>
Task<> ServerCall::send(Message message) {
  std::exception_ptr failure;
  try {
    // About to wait for room: what buffer-hinted writes left must leave first, or it never comes.
    if (!connection_.is_closed() && !connection_.channel().is_writable()) connection_.flush();
    co_await connection_.write(std::move(message));
  } catch (...) {
    failure = std::current_exception();
  }
  if (failure) throw_ended(failure);
}

Task<std::optional<ByteBuf>> ServerCall::read() {
  for (;;) {
    if (ended_) throw CallEnded(*ended_);
    if (std::optional<ByteBuf> message = deframer_.next()) {
      ++messages_read_;
      co_return message;
    }
    if (deframer_.error()) {
      Status refused = *deframer_.error();
      fail(std::move(refused));
    }
    if (request_ended_) {
      if (deframer_.has_partial()) {
        Status truncated(StatusCode::internal, "the request ended inside a message");
        fail(std::move(truncated));
      }
      co_return std::nullopt;
    }
    std::optional<http2::StreamMessage> received;
    std::exception_ptr failure;
    try {
      received.emplace(co_await connection_.read());
    } catch (...) {
      failure = std::current_exception();
    }
    if (failure) throw_ended(failure);
    if (auto* data = std::get_if<http2::StreamData>(&*received)) {
      request_ended_ = data->end_stream;
      received_bytes_ += data->data.readable_bytes();
      deframer_.feed(std::move(data->data));
    } else if (std::holds_alternative<http2::StreamTrailers>(*received)) {
      request_ended_ = true;
    }
  }
}

Task<> ServerCall::start_response() {
  if (ended_) throw CallEnded(*ended_);
  if (finished_) throw std::logic_error("grpc::ServerCall::write after finish");
  if (!headers_written_) {
    http::HttpResponse response = response_head(200);
    if (compression_.algorithm != Compression::identity &&
        accepts_compression(headers_.request.header("grpc-accept-encoding").value_or(""), compression_.algorithm)) {
      response_encoding_ = compression_.algorithm;
      response.header("grpc-encoding", compression_name(response_encoding_));
    }
    http2::ResponseHeaders head{std::move(response), false};
    co_await send(std::move(head));
    headers_written_ = true;
  }
}

Task<> ServerCall::write_framed(ByteBuf framed, WriteOptions options) {
  if (!is_one_framed_message(framed)) {
    throw std::invalid_argument("grpc::ServerCall::write_framed: not one uncompressed length-prefixed message");
  }
  // The hot path of a stream of messages runs in this one coroutine frame (start_response, send and
  // after_message_written inlined): a frame per message is what a write costs beyond the codec.
  if (ended_ || finished_ || !headers_written_) co_await start_response();  // the head once; throws when ended
  sent_bytes_ += framed.readable_bytes() - 5;
  http2::StreamData data{std::move(framed), false};
  std::exception_ptr failure;
  try {
    // About to wait for room: what buffer-hinted writes left must leave first, or it never comes.
    if (!connection_.is_closed() && !connection_.channel().is_writable()) connection_.flush();
    co_await connection_.write(std::move(data));
  } catch (...) {
    failure = std::current_exception();
  }
  if (failure) throw_ended(failure);
  if (++writes_this_turn_ >= kWritesPerTurn) {
    writes_this_turn_ = 0;
    connection_.flush();
    auto turn = next_turn(loop());  // named: g++ 12 destroys a temporary twice when it throws
    co_await turn;
    if (ended_) throw CallEnded(*ended_);
  } else if (!options.buffer_hint) {
    connection_.flush();
  }
}

Task<> ServerCall::after_message_written(const WriteOptions& options) {
  if (++writes_this_turn_ >= kWritesPerTurn) {
    writes_this_turn_ = 0;
    connection_.flush();
    auto turn = next_turn(loop());  // named: g++ 12 destroys a temporary twice when it throws
    co_await turn;
    if (ended_) throw CallEnded(*ended_);
    co_return;
  }
  if (!options.buffer_hint) connection_.flush();
}

Task<> ServerCall::write(ByteBuf message, WriteOptions options) {
  const std::size_t n = message.readable_bytes();
  // The head first when compression is asked for: it chooses the response's encoding.
  if (compression_.algorithm != Compression::identity && !headers_written_) co_await start_response();
  if (response_encoding_ != Compression::identity && n >= compression_.min_bytes) {
    // Compressed (or, when it does not shrink, flag 0) into one new buffer: the codec's bytes, not the message's.
    CompressionOptions compress = compression_;
    compress.algorithm = response_encoding_;
    ByteBuf framed_bytes = frame_compressed(message, compress);
    sent_bytes_ += framed_bytes.readable_bytes() - 5;
    http2::StreamData framed{std::move(framed_bytes), false};
    co_await send(std::move(framed));
    co_await after_message_written(options);
    co_return;
  }
  detail::FramedMessage framed = detail::frame_for_send(std::move(message), allocator());
  if (!framed.body.is_readable()) {  // copied behind its prefix: one buffer (counted by write_framed)
    co_await write_framed(std::move(framed.prefix), options);
    co_return;
  }
  sent_bytes_ += n;
  co_await start_response();
  // One unit: the stream holds both parts or neither, so an end written meanwhile (end_now) follows
  // the whole message.
  http2::PrefixedStreamData unit{std::move(framed.prefix), std::move(framed.body)};
  co_await send(std::move(unit));
  co_await after_message_written(options);
}

Task<> ServerCall::finish(Status status) { return finish_with(200, std::move(status)); }

Task<> ServerCall::finish_with(int http_status, Status status) {
  if (finished_ || ended_) co_return;
  finished_ = true;
  record_end(status.code);
  stop_deadline();
  if (!headers_written_) {
    http::HttpResponse head = response_head(http_status);
    for (const auto& field : status_fields(status)) head.header(field.name, field.value);
    http2::ResponseHeaders trailers_only{std::move(head), true};
    co_await send(std::move(trailers_only));
  } else {
    http2::Fields fields = status_fields(status);
    http2::StreamTrailers trailers{std::move(fields)};
    co_await send(std::move(trailers));
  }
  connection_.flush();
}

void ServerCall::fail(Status status) {
  end_now(status);
  mark_ended(std::move(status));  // when the response had ended already
  throw CallEnded(*ended_);
}

http::HttpResponse ServerCall::response_head(int http_status) const {
  // Every call's head: checked once, and its HTTP/2 fields reused by the codec (a HeaderBlock).
  static const http::HeaderBlock kCallHead = http::HeaderBlock()
                                                 .add("content-type", "application/grpc")
                                                 .add("grpc-accept-encoding", kAcceptEncoding);  // the compression spec
  http::HttpResponse head(http_status);
  head.headers(kCallHead);
  for (const auto& [name, value] : response_headers_) head.header(name, value);
  return head;
}

http2::Fields ServerCall::status_fields(const Status& status) const {
  static constexpr std::string_view kCodes[] = {"0", "1",  "2",  "3",  "4",  "5",  "6",  "7", "8",
                                                "9", "10", "11", "12", "13", "14", "15", "16"};
  http2::Fields fields;
  fields.reserve(2 + trailing_metadata_.size());
  const auto code = static_cast<std::size_t>(status.code);
  if (code < std::size(kCodes)) {
    fields.add_unchecked("grpc-status", kCodes[code]);
  } else {
    fields.add("grpc-status", std::to_string(static_cast<int>(status.code)));
  }
  // (percent_encode's output is printable ASCII)
  if (!status.message.empty()) fields.add_unchecked("grpc-message", percent_encode(status.message));
  for (const auto& [name, value] : trailing_metadata_) fields.add(name, value);
  return fields;
}

void ServerCall::start_deadline() {
  if (!timeout_ || finished_) return;
  std::weak_ptr<ServerCall> weak = weak_from_this();
  deadline_timer_ = connection_.channel().loop().schedule(*timeout_, [weak] {
    if (auto call = weak.lock()) {
      call->deadline_timer_.reset();
      call->expire();
    }
  });
}

void ServerCall::stop_deadline() noexcept {
  if (!deadline_timer_) return;
  connection_.channel().loop().cancel(*deadline_timer_);
  deadline_timer_.reset();
}

void ServerCall::expire() { end_now(Status{StatusCode::deadline_exceeded, "Deadline Exceeded"}); }

void ServerCall::end_now(Status status) {
  if (finished_ || ended_) return;
  record_end(status.code);
  Channel& channel = connection_.channel();
  // Written past the Connection: the handler (or another of its coroutines) may be suspended in a
  // write that holds its message, and the Connection has one writer's place. That message was not
  // handed to the stream (it is dropped); every message handed was handed whole (one unit each), so
  // the end follows the last whole message.
  if (!headers_written_) {
    http::HttpResponse head = response_head(200);
    for (const auto& field : status_fields(status)) head.header(field.name, field.value);
    http2::ResponseHeaders trailers_only{std::move(head), true};
    channel.write(std::move(trailers_only));
  } else {
    http2::Fields fields = status_fields(status);
    http2::StreamTrailers trailers{std::move(fields)};
    channel.write(std::move(trailers));
  }
  mark_ended(std::move(status));
  // Closing after the end was written lets it leave; a read or write the handler waits in throws.
  connection_.close();
}

void ServerCall::on_reset() noexcept {
  if (ended_) return;
  mark_ended(Status{StatusCode::cancelled, "the client reset the stream"});
}

void ServerCall::on_stream_closed() noexcept {
  if (ended_ || finished_) return;
  mark_ended(Status{StatusCode::cancelled, "the stream closed"});
}

void ServerCall::on_draining(UniqueFunction<void()> listener) {
  draining_listener_ = std::move(listener);
  if (draining_) on_connection_draining();
}

void ServerCall::on_connection_draining() {
  draining_ = true;
  if (ended_ || finished_ || !draining_listener_) return;
  UniqueFunction<void()> listener = std::move(draining_listener_);
  draining_listener_ = nullptr;
  listener();
}

void ServerCall::mark_ended(Status status) noexcept {
  if (ended_) return;
  record_end(status.code);
  ended_ = std::move(status);
  finished_ = true;
  stop_deadline();
  if (end_listener_) {
    UniqueFunction<void()> listener = std::move(end_listener_);
    end_listener_ = nullptr;
    listener();
  }
}

void ServerCall::start_metrics(std::shared_ptr<detail::MethodMetrics> metrics) noexcept {
  metrics_ = std::move(metrics);
  started_at_ = loop().now();
  metrics_->started();
}

void ServerCall::record_end(StatusCode code) noexcept {
  if (metrics_ == nullptr) return;
  const std::shared_ptr<detail::MethodMetrics> metrics = std::move(metrics_);
  const std::uint64_t prefixes = 5 * messages_read_;
  metrics->ended(code, loop().now() - started_at_, sent_bytes_,
                 received_bytes_ > prefixes ? received_bytes_ - prefixes : 0);
}

}  // namespace weft::grpc
