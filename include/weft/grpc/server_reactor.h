#pragma once
/// @file
/// The callback form of a gRPC method of any shape (ServiceRegistry::add_reactor): a reactor
/// object whose methods the call invokes, and a ServerStream through which the reactor asks for
/// reads and writes and ends the call. Usable from any thread, e.g. after work on an executor.
///
///   class Echo : public weft::grpc::ServerReactor {                  // bidi echo
///    public:
///     explicit Echo(weft::grpc::ServerStream stream) : stream_(std::move(stream)) { stream_.start_read(); }
///     void on_read_done(std::optional<weft::ByteBuf> message) override {
///       if (message) stream_.start_write(std::move(*message));      // the next read once it left
///       else stream_.finish({});                                      // the client is done: OK
///     }
///     void on_write_done(bool ok) override { if (ok) stream_.start_read(); }
///    private:
///     weft::grpc::ServerStream stream_;
///   };
///   services.add_reactor("/pkg.Echo/Chat", [](weft::grpc::ServerStream stream) {
///     return std::make_shared<Echo>(std::move(stream));
///   });
///
/// One read and one write may be outstanding at a time (a second one throws std::logic_error);
/// each ends in on_read_done / on_write_done. A read after one gave nullopt, and a write after one
/// failed, throw std::logic_error too (they would fail again: a reactor that retried would spin). This is the
/// backpressure: the next message is read when the reactor asks for it, and a write completes once the stream took it
/// (it waits while the client's flow-control window is full). finish() sends the status after the outstanding write.
///
/// Every shape is this one reactor: unary and server streaming read one message, client streaming
/// reads until nullopt; a server stream writes until it finishes.
///
/// The call ends by finish(), or without the reactor (deadline, client reset, a request that broke
/// the protocol, the connection gone): on_cancel() then says so at once; outstanding and later
/// operations fail (on_read_done(nullopt), on_write_done(false)); finish() does nothing. Either
/// way on_done() comes last, once no operation is outstanding; the call drops the reactor after it.
/// A reactor method that throws ends the call UNKNOWN (StatusError: its status).
///
/// The call's event loop terminating: a loop's shutdown closes its connections, so the call ends
/// before, as above, on the loop. A call that outlives its loop's last turn (a manual-clock loop,
/// an EmbeddedChannel's, whose shutdown let the connection end itself) ends with the first request
/// made after the termination, from any thread (the loop's own included), or with its stream's
/// end: on_cancel(), the outstanding operations fail (on_read_done(nullopt), on_write_done(false)),
/// then on_done(). No loop is left to run these: they run on that thread, one call at a time, and
/// the reactor must not use call() in them. A request is never dropped unheard: it fails so, or it
/// was made after on_done().

#include <atomic>
#include <functional>
#include <memory>
#include <optional>

#include "weft/buffer/byte_buf.h"
#include "weft/grpc/server_call.h"
#include "weft/grpc/status.h"

namespace weft::grpc {

/// What a callback-form method implements (see the file's description). The call invokes its methods
/// on the call's event loop, one at a time, never from inside a ServerStream method.
class ServerReactor {
 public:
  virtual ~ServerReactor() = default;
  /// The read start_read() asked for: the next request message, or nullopt when there is none (the
  /// client half-closed, or the call ended).
  virtual void on_read_done(std::optional<ByteBuf> message) { (void)message; }
  /// The write start_write() made: true once the stream took the message, false when the call ended first.
  virtual void on_write_done(bool ok) { (void)ok; }
  /// The call ended without finish() (deadline, client reset, broken request, connection gone): its
  /// status was sent already, if the connection was there to take it.
  virtual void on_cancel() {}
  /// The server asked the call's connection to end (weft::drain_server, the loop's graceful
  /// shutdown: ServerCall::draining()). The call goes on; one that would stay open for long (a watch,
  /// a subscription) should finish, or the drain's deadline ends it. At most once, never after finish().
  virtual void on_draining() {}
  /// Last: the call is over and no operation is outstanding. ServerStream methods do nothing after.
  virtual void on_done() {}
};

/// The reactor's handle on its call (see the file's description). Copyable; every copy is the
/// same call. Thread-safe unless a method says otherwise: a request made off the call's loop runs
/// there in the order made.
class ServerStream {
 public:
  struct State;  // grpc/server_reactor.cc

  /// For the registry.
  explicit ServerStream(std::shared_ptr<State> state) noexcept : state_(std::move(state)) {}

  /// Thread-safe. Asks for the next request message: on_read_done follows. Throws std::logic_error
  /// while a read is outstanding, or once a read gave nullopt.
  void start_read();
  /// Thread-safe. Sends `message` (the response's head first): on_write_done follows. Throws
  /// std::logic_error while a write is outstanding, after finish(), or once a write failed.
  void start_write(ByteBuf message, WriteOptions options = {});
  /// Thread-safe. As start_write(), for a message framed already (frame_message(), e.g. serialized and
  /// framed on an executor thread): sent as it is. Throws std::invalid_argument when it is not one
  /// uncompressed length-prefixed message (is_one_framed_message()).
  void start_write_framed(ByteBuf framed, WriteOptions options = {});
  /// Thread-safe; the first call counts. Ends the call with `status` once the outstanding write is done
  /// (OK, or an error as trailers; Trailers-Only when nothing was written).
  void finish(Status status);

  /// Loop thread only, until on_done(). The call: its request head, metadata, deadline, response
  /// metadata and compression (ServerCall's methods other than read, write and finish).
  ServerCall& call() const noexcept;
  /// Thread-safe. The call's event loop, where the reactor's methods run.
  EventLoop& loop() const noexcept;

 private:
  void request_write(ByteBuf message, WriteOptions options, bool framed);
  std::shared_ptr<State> state_;
};

/// Makes the reactor of one call (on the call's loop). Its constructor may start operations.
using ReactorFactory = std::function<std::shared_ptr<ServerReactor>(ServerStream)>;

/// For ServiceRegistry::add_reactor: the coroutine that serves `call` with the reactor `factory` makes.
Task<> serve_with_reactor(ServerCall& call, const ReactorFactory& factory);

}  // namespace weft::grpc
