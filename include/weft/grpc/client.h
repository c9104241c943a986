#pragma once
/// @file
/// The gRPC client: grpc::Client, a connection (HTTP/2, client::Http2Connection underneath) that carries
/// calls, and grpc::ClientCall, one call of any shape as coroutines on the connection's loop.
/// Messages are bytes (ByteBuf); protobuf_adapter.h has typed glue.
///
///   auto client = co_await weft::grpc::Client::connect(group, address);
///   // then, on client->loop() (spawn(client->loop(), ...)):
///   weft::grpc::ClientCall call = client->call("/grpc.testing.BenchmarkService/StreamingCall");
///   co_await call.write(std::move(request));                 // false once the call has ended
///   std::optional<weft::ByteBuf> response = co_await call.read();   // nullopt: no more messages
///   co_await call.writes_done();                             // half-close
///   weft::grpc::Status status = co_await call.finish();       // from the trailers
///
/// The four shapes are one call: unary writes one message, writes_done(), reads one, finishes
/// (Client::unary does it); server streaming reads until nullopt; client streaming writes many;
/// bidi does both, from one coroutine or two (one writing, one reading).
///
/// On the wire (gRPC's PROTOCOL-HTTP2.md): POST to the method's path with content-type
/// application/grpc, te: trailers, grpc-accept-encoding (identity, deflate, gzip), grpc-timeout when
/// the call has a deadline, grpc-encoding when its requests are compressed, the call's metadata
/// (checked and -bin values base64-encoded: InvalidMetadata, metadata.h, before anything is sent);
/// length-prefixed messages (any number per DATA frame, any frames per message); the status from
/// grpc-status and the percent-decoded grpc-message of the trailers, or of a Trailers-Only
/// response's head, or derived from the HTTP status when there is none. Response messages are
/// decompressed by the response's grpc-encoding (compression.h: bounded by
/// max_receive_message_bytes after decompression; an encoding weft lacks gives UNIMPLEMENTED), and
/// a -bin header or trailer that is not base64 ends the call INTERNAL, as grpc-core does.
///
/// A call ends without its server when its deadline passes (DEADLINE_EXCEEDED), when cancel() is
/// called (CANCELLED), when a response message is larger than max_receive_message_bytes
/// (RESOURCE_EXHAUSTED), or when the stream or the connection fails (UNAVAILABLE, INTERNAL...);
/// the stream is then reset (RST_STREAM CANCEL), read() gives nullopt, write() false, and finish()
/// the status. Backpressure: write() waits while the stream's flow-control window holds the bytes
/// (http2::ClientSettings::max_buffered_upload); a response nobody reads stops the server once
/// the stream's receive window is full.
///
/// The callback form of every shape is Client::start with a ClientReactor (client_reactor.h); of
/// a unary call, Client::unary with a completion function.
///
/// Threads: Client::connect, close() and loop() are thread-safe; call(), unary() and every
/// ClientCall method are loop thread only (the connection's loop).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "weft/buffer/byte_buf.h"
#include "weft/client/http2_connection.h"
#include "weft/codec/http2/client_codec.h"
#include "weft/core/clock.h"
#include "weft/core/event_loop.h"
#include "weft/core/future.h"
#include "weft/core/task.h"
#include "weft/grpc/compression.h"
#include "weft/grpc/message_framing.h"
#include "weft/grpc/status.h"

namespace weft::grpc {

/// What a call carries besides its messages. A value type.
struct CallOptions {
  /// The call's timeout from its start: sent as grpc-timeout, and DEADLINE_EXCEEDED locally when it passes.
  std::optional<Duration> timeout;
  /// Custom metadata (names lowercase; a name ending in "-bin" has its value sent base64-encoded).
  std::vector<std::pair<std::string, std::string>> metadata;
  /// A response message larger than this ends the call RESOURCE_EXHAUSTED; 0: the client's (Client::Options).
  std::size_t max_receive_message_bytes = 0;
  /// How the call's request messages are compressed; unset: the client's (ClientOptions::compression).
  std::optional<CompressionOptions> compression;
  /// Through a grpc::ClientChannel (channel.h): while no connection is ready, the call waits for one
  /// (until its deadline) rather than failing UNAVAILABLE once the channel has failed to connect.
  /// A Client's calls have their connection already.
  bool wait_for_ready = false;
};

/// Thread-safe (pure). `timeout` as grpc-timeout's value: the smallest unit whose count fits in 8
/// digits, rounded up ("250m", "1500000u").
std::string format_timeout(Duration timeout);
/// Thread-safe (pure). The status a response without grpc-status gets from its HTTP status
/// (gRPC's http-grpc-status-mapping.md).
Status status_from_http(int http_status);

/// How a grpc::Client reaches its server. A value type.
struct ClientOptions {
  /// The HTTP/2 connection's (TLS, settings: :authority, windows...).
  client::Http2Connection::Options http2;
  /// The default bound on a response message (4 MiB, as grpc++).
  std::size_t max_receive_message_bytes = kDefaultMaxMessageBytes;
  /// user-agent sent with each call.
  std::string user_agent = "weft-grpc";
  /// How calls compress their request messages unless CallOptions say otherwise (identity: not at
  /// all). The server must accept the encoding (grpc-core, grpc-java and weft accept gzip and deflate).
  CompressionOptions compression;
};

class Client;
class ClientCallAccess;

namespace detail {
// Told when the connection under a call has closed (the callback form's calls, which may not be
// reading or writing then). Loop thread only.
class ConnectionCloseWatcher {
 public:
  virtual ~ConnectionCloseWatcher() = default;
  virtual void connection_closed() noexcept = 0;
};
}  // namespace detail
class ClientReactor;
class ClientStream;

/// One call (see the file's description). A move-only handle; dropping it while the call is
/// open cancels it. An empty handle (default-made, moved from, or a ClientStream's whose call was
/// refused) has no metadata: its accessors give null / empty / nullopt. Loop thread only.
class ClientCall {
 public:
  struct State;  // grpc/client_call.cc

  /// An empty handle.
  ClientCall() noexcept = default;
  /// For Client::call.
  explicit ClientCall(std::shared_ptr<State> state) noexcept : state_(std::move(state)) {}
  /// Moves the call: the moved-from handle holds none.
  ClientCall(ClientCall&&) noexcept = default;
  /// Loop thread only. Cancels the call this handle held, if it is open.
  ClientCall& operator=(ClientCall&& other) noexcept;
  /// Loop thread only. Cancels the call if it is open.
  ~ClientCall();

  /// Loop thread only. Sends a message; waits while the stream's window holds too much. false when
  /// the call has ended (finish() says how). Throws std::logic_error after writes_done() (while the call is open).
  Task<bool> write(ByteBuf message);
  /// Loop thread only. Ends the requests (half-close). Returns at once; nothing once the call has ended.
  Task<> writes_done();
  /// Loop thread only. The next response message, nullopt once there is none (the call ended: finish()).
  Task<std::optional<ByteBuf>> read();
  /// Loop thread only. Waits for the call's end (response messages not read are dropped) and
  /// returns its status. Again: the same status.
  Task<Status> finish();
  /// Loop thread only. Cancels the call (RST_STREAM CANCEL): CANCELLED, unless it had ended.
  void cancel();

  /// Loop thread only. Whether the call ended UNAVAILABLE because the server did not process it
  /// (REFUSED_STREAM, or above the last stream of a GOAWAY): it is safe to send again, as
  /// grpc::ClientChannel does (channel.h). false for an empty handle.
  bool refused() const noexcept;
  /// Loop thread only. Whether the message read() gave last came compressed (compressed flag 1 in its
  /// prefix); false before the first, and for an empty handle.
  bool last_read_compressed() const noexcept;
  /// Loop thread only. The response's head (initial metadata), once read() or finish() returned;
  /// null before, and when the response never came.
  const http::HttpClientResponse* initial_metadata() const noexcept;
  /// Loop thread only. The trailers (trailing metadata, grpc-status included) once finish() returned.
  const http2::Fields& trailing_metadata() const noexcept;
  /// Loop thread only. The response head's metadata `key` (lowercase), its first value, decoded from
  /// base64 under a -bin key; nullopt when absent or before the head came (see initial_metadata()).
  std::optional<std::string> initial_metadata_value(std::string_view key) const;
  /// Loop thread only. The trailers' metadata `key` as initial_metadata_value() (of a Trailers-Only
  /// response: from its one head); nullopt before finish().
  std::optional<std::string> trailing_metadata_value(std::string_view key) const;

 private:
  friend class ClientCallAccess;
  std::shared_ptr<State> state_;
};

/// What a unary call gives: its status and, when OK, the response message.
/// Not an aggregate on purpose (see Status).
struct UnaryResult {
  Status status;    ///< how the call ended
  ByteBuf message;  ///< the response (empty unless status is OK)
  /// `s` with `m`.
  UnaryResult(Status s, ByteBuf m) : status(std::move(s)), message(std::move(m)) {}
};

/// A connection to a gRPC server (see the file's description). Thread-safe unless a method says otherwise.
class Client : public std::enable_shared_from_this<Client> {
 public:
  /// How to reach the server (ClientOptions).
  using Options = ClientOptions;

  /// Connects to `address` on a loop of `group`; completes once the HTTP/2 connection is ready.
  static Future<std::shared_ptr<Client>> connect(EventLoopGroup& group, const SocketAddress& address,
                                                 Options options = {});
  /// Connects to `address` on `loop` (a loop of an EventLoopGroup); as connect() otherwise.
  static Future<std::shared_ptr<Client>> connect(EventLoop& loop, const SocketAddress& address, Options options = {});

  /// Loop thread only. Starts a call of `method` ("/package.Service/Method"): its HEADERS leave at once.
  ClientCall call(std::string_view method, const CallOptions& options = {});
  /// Loop thread only. A unary call: `request` out, one response back.
  Task<UnaryResult> unary(std::string method, ByteBuf request, CallOptions options = {});
  /// Thread-safe. The callback form of a unary call: `done` runs once, on the connection's loop, with
  /// the result (metadata the call() refuses, InvalidMetadata, comes as INVALID_ARGUMENT). The client
  /// is kept alive until then. Throws RejectedExecutionError when the connection's loop has terminated.
  void unary(std::string method, ByteBuf request, CallOptions options, UniqueFunction<void(UnaryResult)> done);
  /// Thread-safe. Starts a call of `method` in callback form, any shape (client_reactor.h, which
  /// defines ClientStream): `reactor`'s methods run on the connection's loop, never inside this
  /// call. Metadata call() refuses (InvalidMetadata) ends the call INVALID_ARGUMENT (on_done). The
  /// client is kept alive until on_done. The reactor's stream() is the returned handle. Throws
  /// RejectedExecutionError when the connection's loop has terminated, std::invalid_argument for a null
  /// reactor, std::logic_error for a reactor that has a call already.
  ClientStream start(std::string method, CallOptions options, std::shared_ptr<ClientReactor> reactor);

  /// The connection's event loop, where calls are made and used.
  EventLoop& loop() const noexcept { return http2_->loop(); }
  /// The HTTP/2 connection underneath.
  client::Http2Connection& http2() const noexcept { return *http2_; }
  /// Closes the connection: open calls end UNAVAILABLE.
  Future<void> close() { return http2_->close(); }

  /// For connect(); use connect().
  Client(std::shared_ptr<client::Http2Connection> http2, Options options) noexcept
      : http2_(std::move(http2)), options_(std::move(options)) {}

  /// Loop thread only. For grpc::ClientChannel: opens the stream of `call`, a call that waited for a
  /// connection (made on loop(); nothing when it has ended or has its stream).
  void open_pending(ClientCall::State& call);

  /// Loop thread only. For the callback form: `watcher` hears when the connection closes (at once,
  /// from a loop task, when it has).
  void watch_close(std::weak_ptr<detail::ConnectionCloseWatcher> watcher);

 private:
  std::shared_ptr<client::Http2Connection> http2_;
  Options options_;
  void open_stream(ClientCall::State& state, std::string_view method, const CallOptions& options,
                   std::optional<Duration> timeout);

  std::string scratch_;  // grpc-timeout's value while a call's fields are built
  std::vector<std::weak_ptr<detail::ConnectionCloseWatcher>> close_watchers_;  // loop thread
  std::size_t close_watchers_pruned_at_ = 0;  // their count after the last pruning
  bool close_watched_ = false;                // the channel's close future has our listener
  bool connection_closed_ = false;
};

}  // namespace weft::grpc
