#pragma once
/// @file
/// grpc::ServerCall: one gRPC call on the server, as its handler's coroutine sees it. The call is
/// an HTTP/2 stream served as a child channel (http2::StreamChannel) with weft::serve; its
/// messages are bytes (ByteBuf), framed and unframed here (message_framing.h).
///
///   Task<> echo(weft::grpc::ServerCall& call) {
///     while (std::optional<ByteBuf> request = co_await call.read())   // nullopt: the client is done
///       co_await call.write(std::move(*request));                     // waits while the stream is unwritable
///     co_await call.finish({});                                       // OK (also done when the handler returns)
///   }
///
/// The call ends in one of two ways. The handler finishes it (finish(), or returning: OK, or
/// throwing StatusError: that status; another exception: UNKNOWN). Or it ends without the handler:
/// the deadline passed (grpc-timeout: DEADLINE_EXCEEDED is sent), the client reset the stream
/// (CANCELLED), the request broke the protocol (a message past the size limit, before or after
/// decompression: RESOURCE_EXHAUSTED; a compressed message without grpc-encoding or one that does not
/// inflate: INTERNAL; one in an encoding weft lacks: UNIMPLEMENTED; a truncated one: INTERNAL); then cancelled()
/// is true and read() and write() throw CallEnded with the status, which the handler may let
/// propagate (the registry expects it).
///
/// Threads: a call lives on its stream's event loop; every method is loop thread only (the
/// handler's coroutine runs there).

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "weft/buffer/byte_buf.h"
#include "weft/channel/connection.h"
#include "weft/grpc/compression.h"
#include "weft/grpc/message_framing.h"
#include "weft/grpc/metadata.h"
#include "weft/grpc/status.h"
#include "weft/codec/http2/stream_channel.h"
#include "weft/core/error.h"
#include "weft/core/event_loop.h"
#include "weft/core/task.h"
#include "weft/core/unique_function.h"

namespace weft::grpc {

/// Thrown by ServerCall::read() and write() once the call has ended without its handler (see the
/// file's description); its status was sent to the client already.
class CallEnded : public Error {
 public:
  /// Thread-safe (a value). The call ended with `status`.
  explicit CallEnded(Status status);
  /// The status the client was sent.
  const Status& status() const noexcept { return status_; }

 private:
  Status status_;
};

/// Thrown by a handler to end its call with `status` (as grpc++'s returned grpc::Status).
class StatusError : public Error {
 public:
  /// Thread-safe (a value). Ends the call with `status` (its code should not be OK).
  explicit StatusError(Status status);
  /// The status to send.
  const Status& status() const noexcept { return status_; }

 private:
  Status status_;
};

/// ServerCall::write(): messages a handler writes before it lets the loop take a turn.
inline constexpr std::uint32_t kWritesPerTurn = 64;

/// Bounds of a gRPC server (grpc++'s ServerBuilder options of the same meaning).
struct ServerOptions {
  /// A request message larger than this ends the call with RESOURCE_EXHAUSTED.
  std::size_t max_receive_message_bytes = kDefaultMaxMessageBytes;
  /// How responses are compressed (identity: not at all). A call compresses only when its request's
  /// grpc-accept-encoding lists the algorithm (else it answers uncompressed); ServerCall::set_compression()
  /// sets it per call.
  CompressionOptions response_compression;
};

/// Whether a request's content-type makes it a gRPC call: application/grpc, optionally followed
/// by "+proto" or by parameters (";..."). Thread-safe (pure).
bool is_grpc_content_type(std::string_view content_type) noexcept;

class ServiceRegistry;
class ResetNotifier;
namespace detail {
class MethodMetrics;  // server_metrics.h
}  // namespace detail
class ReactorDriver;

/// How ServerCall::write() sends a message (grpc++'s grpc::WriteOptions).
struct WriteOptions {
  /// More messages follow at once: the message may wait in the stream, unflushed, until a write
  /// without the hint, flush(), finish(), or the stream turning unwritable (then what waits is
  /// flushed before the write suspends). Many messages then leave in one send instead of one each.
  bool buffer_hint = false;
};

/// One call (see the file's description). Made by ServiceRegistry for each request; its handler
/// gets a reference valid until the handler's coroutine finishes. Loop thread only.
class ServerCall : public std::enable_shared_from_this<ServerCall> {
 public:
  /// Loop thread only. For ServiceRegistry: a call on `connection` (its child channel's coroutine side) for the
  /// request `headers`.
  ServerCall(Connection<http2::StreamMessage>& connection, http2::StreamHeaders headers, const ServerOptions& options);
  ~ServerCall();
  ServerCall(const ServerCall&) = delete;
  ServerCall& operator=(const ServerCall&) = delete;

  /// Loop thread only. The request's head: method path ("/package.Service/Method"), metadata (its headers).
  const http::HttpRequest& request() const noexcept { return headers_.request; }
  /// Thread-safe. The event loop the call runs on.
  EventLoop& loop() const noexcept { return connection_.channel().loop(); }
  /// Loop thread only. The method path.
  std::string_view method() const noexcept { return headers_.request.path(); }
  /// Loop thread only. The timeout the client gave (grpc-timeout), if any.
  std::optional<Duration> timeout() const noexcept { return timeout_; }
  /// Loop thread only. Whether the call ended without its handler: the deadline passed, the client reset the stream,
  /// or its request broke the protocol.
  bool cancelled() const noexcept { return ended_.has_value(); }
  /// Loop thread only. Whether the response has ended (finished by the handler or ended without it).
  bool finished() const noexcept { return finished_; }
  /// Loop thread only. Whether the server asked the call's connection to end (weft::drain_server, the
  /// loop's graceful shutdown): GOAWAY went out, and the drain waits for the open calls. A call that
  /// would stay open for long (a watch, a subscription) should finish; nothing ends it until the
  /// drain's deadline does.
  bool draining() const noexcept { return draining_; }
  /// Loop thread only. Calls `listener` once, on the call's loop, when the call's connection starts to
  /// drain (see draining()): at once when it has already. Replaces a listener set before; not called
  /// once the call has ended. The reactor form's ServerReactor::on_draining.
  void on_draining(UniqueFunction<void()> listener);
  /// Loop thread only. Whether a write() now would not wait (grpc-java's isReady()): false while the
  /// stream holds what the client's flow-control window has not let leave (past its write-buffer
  /// high-water mark), and once the call has ended. A handler that produces messages may check it to
  /// stop producing early; write() waits for it anyway.
  bool is_ready() const noexcept { return !ended_ && !finished_ && connection_.channel().is_writable(); }
  /// Thread-safe (the allocator is). The allocator of the call's channel (pooled on epoll and io_uring): where
  /// write() frames messages, and where a handler that serializes off the loop (on an executor) may take buffers.
  ByteBufAllocator& allocator() const noexcept { return connection_.channel().allocator(); }

  /// Loop thread only. Adds metadata to the response's head: a -bin key's value is bytes, sent in base64.
  /// Before the first write() or finish() only (std::logic_error after). Throws InvalidMetadata for a key
  /// or value gRPC does not allow (metadata.h: uppercase, reserved such as grpc-status, a control byte).
  void add_response_header(std::string_view name, std::string_view value);
  /// Loop thread only. Adds metadata to the trailers (sent with grpc-status), as add_response_header()
  /// checks and encodes it. Before finish() only (std::logic_error after).
  void add_trailing_metadata(std::string_view name, std::string_view value);
  /// Loop thread only. The request's metadata `key` (lowercase): its first value, decoded from base64
  /// under a -bin key (padded or not); nullopt when the request has none.
  std::optional<std::string> metadata(std::string_view key) const;
  /// Loop thread only. Every value of the request's metadata `key`, in order (a -bin header's
  /// comma-separated values each decoded).
  std::vector<std::string> metadata_values(std::string_view key) const;

  /// Loop thread only. How this call's responses are compressed (ServerOptions::response_compression
  /// unless set here). Before the first write() or finish() only (std::logic_error after); a level outside
  /// -1..9 throws std::invalid_argument. Used only when the request's grpc-accept-encoding lists the algorithm.
  void set_compression(CompressionOptions options);
  /// Loop thread only. Whether this call's responses may be compressed: an algorithm other than identity
  /// is configured (ServerOptions::response_compression, set_compression()). When false, write_framed()
  /// sends what write() would.
  bool compresses_responses() const noexcept { return compression_.algorithm != Compression::identity; }
  /// Loop thread only. The encoding the response's messages are in: known once the head was sent
  /// (grpc-encoding), identity before and when the client does not accept the one configured.
  Compression response_encoding() const noexcept { return response_encoding_; }

  /// Loop thread only. The next request message; nullopt once the client has half-closed and every message was
  /// read. Throws CallEnded when the call has ended (or ends meanwhile).
  Task<std::optional<ByteBuf>> read();
  /// Loop thread only. Whether the message read() gave last came compressed (compressed flag 1 in its
  /// prefix, as grpc++'s interop server checks a request's compression); false before the first.
  bool last_read_compressed() const noexcept { return deframer_.last_compressed(); }
  /// Loop thread only. Sends a response message (the response's head first, on the first write). Suspends while the
  /// stream is unwritable (its HTTP/2 flow-control window and the connection's backpressure), and, after every
  /// kWritesPerTurn messages, once through the loop's task queue: a handler that writes in a loop lets the loop
  /// read (a client's RST_STREAM, WINDOW_UPDATEs) and serve the other streams between its messages.
  /// Throws CallEnded when the call has ended, std::logic_error after finish().
  Task<> write(ByteBuf message, WriteOptions options = {});
  /// Loop thread only. As write(), for a message framed already (its 5-byte prefix, compressed flag 0, then the
  /// message: frame_message()), e.g. serialized and framed on an executor thread, as grpc-java frames on the
  /// application's thread. Sent as it is (no copy). Throws std::invalid_argument when the prefix does not match
  /// the bytes.
  Task<> write_framed(ByteBuf framed, WriteOptions options = {});
  /// Loop thread only. Sends what writes with WriteOptions::buffer_hint left waiting.
  void flush() { connection_.flush(); }
  /// Loop thread only. Ends the response with `status` (grpc-status, grpc-message): as trailers, or Trailers-Only
  /// when nothing was written. Does nothing once the call has finished or ended.
  Task<> finish(Status status);

 private:
  friend class ServiceRegistry;
  friend class ResetNotifier;
  friend class ReactorDriver;

  template <class Message>
  Task<> send(Message message);  // Connection::write, failures as CallEnded
  Task<> after_message_written(const WriteOptions& options);  // flush, and the turn's yield
  [[noreturn]] void throw_ended(std::exception_ptr cause);
  [[noreturn]] void fail(Status status);  // ends the call for a broken request (end_now), then throws CallEnded
  Task<> start_response();  // the response's head, before the first message
  http::HttpResponse response_head(int http_status) const;
  http2::Fields status_fields(const Status& status) const;
  Task<> finish_with(int http_status, Status status);  // Trailers-Only with an HTTP status (415)
  void start_deadline();
  void stop_deadline() noexcept;
  void expire();                 // the deadline passed
  void end_now(Status status);   // writes `status` past the Connection, marks the call ended, closes
  void on_reset() noexcept;      // the client's RST_STREAM (seen by the registry's watcher)
  void on_stream_closed() noexcept;  // the stream channel went inactive (the connection gone)
  void on_connection_draining();     // http2::ConnectionDrainingEvent (seen by the registry's watcher)
  void mark_ended(Status status) noexcept;  // ended without the handler: ended_, then end_listener_
  // Metrics (server_metrics.h): the call started now, counted in `metrics`; its end, counted once.
  void start_metrics(std::shared_ptr<detail::MethodMetrics> metrics) noexcept;
  void record_end(StatusCode code) noexcept;

  Connection<http2::StreamMessage>& connection_;
  http2::StreamHeaders headers_;
  std::optional<Duration> timeout_;
  DecompressingDeframer deframer_;
  std::vector<std::pair<std::string, std::string>> response_headers_;
  std::vector<std::pair<std::string, std::string>> trailing_metadata_;
  CompressionOptions compression_;                    // how responses are compressed, if accepted
  Compression response_encoding_ = Compression::identity;  // chosen when the head is sent
  std::optional<Status> ended_;   // how the call ended without its handler
  std::optional<TimerId> deadline_timer_;
  bool request_ended_ = false;    // the client half-closed
  bool headers_written_ = false;  // the response's head was written
  bool finished_ = false;         // the response's end was written
  bool draining_ = false;         // the connection drains (draining())
  UniqueFunction<void()> draining_listener_;  // on_draining()
  std::uint32_t writes_this_turn_ = 0;  // messages written since the handler last let the loop poll
  UniqueFunction<void()> end_listener_;  // told once when ended_ is set (the reactor form's on_cancel)
  std::shared_ptr<detail::MethodMetrics> metrics_;  // until the end is counted; null while not counted
  TimePoint started_at_{};
  std::uint64_t sent_bytes_ = 0;      // message bytes written, compressed (without the 5-byte prefixes)
  std::uint64_t received_bytes_ = 0;  // DATA bytes received (prefixes included: taken off at the end)
  std::uint64_t messages_read_ = 0;
};

}  // namespace weft::grpc
