#pragma once
/// @file
/// The callback form of a gRPC client call of any shape (Client::start): a reactor object whose
/// methods the call invokes, and a ClientStream through which the reactor asks for reads and
/// writes, half-closes and cancels. Usable from any thread.
///
///   class Collect : public weft::grpc::ClientReactor {     // server streaming: read to the end
///    public:
///     void on_read_done(std::optional<weft::ByteBuf> message) override {
///       if (message) { ++count; stream().start_read(); }     // stream(): the call's handle
///     }
///     void on_done(const weft::grpc::Status& status) override { done.set_value(status); }
///     std::size_t count = 0;
///     std::promise<weft::grpc::Status> done;
///   };
///   auto reactor = std::make_shared<Collect>();
///   weft::grpc::ClientStream stream = client->start("/pkg.Feed/Watch", {}, reactor);
///   stream.start_write(std::move(request));
///   stream.writes_done();
///   stream.start_read();
///
/// One read and one write may be outstanding at a time (a second one throws std::logic_error);
/// each ends in on_read_done / on_write_done. A read after one gave nullopt, and a write after one
/// failed, throw std::logic_error too (they would fail again: a reactor that retried would spin). This is the
/// backpressure: a response message is read when the reactor asks for it (a server that outpaces it stops at the
/// stream's window), and a write completes once the stream took the message (it waits while the server's window is
/// full).
///
/// The call's end reaches the reactor through its reads: on_read_done(nullopt) once the call is
/// over (the server's status came, the call was cancelled, its deadline passed, or the stream or
/// connection failed). on_done(status) comes after it, once no operation is outstanding: read
/// until nullopt (every shape, unary included, reads its response so), or cancel(). A cancel, a
/// deadline and the connection's close reach on_done without reads; the server's end and a reset
/// of the stream are seen by the outstanding read or write, or else by the next one (the messages
/// before the end are the reactor's). The call drops the reactor after on_done.
///
/// The connection's event loop terminating: a loop's shutdown closes its connections, so the call
/// ends before (on_done UNAVAILABLE, on the loop). A call that outlives its loop's last turn ends
/// with the first request made after the termination, from any thread: the outstanding operations
/// fail (on_read_done(nullopt), on_write_done(false)), then on_done(UNAVAILABLE). No loop is left
/// to run these: they run on that thread, one call at a time, and the reactor must not use call()
/// in them. A request is never dropped unheard: it fails so, or it was made after on_done().
/// Client::start on a terminated loop throws RejectedExecutionError.

#include <atomic>
#include <memory>
#include <optional>

#include "weft/buffer/byte_buf.h"
#include "weft/grpc/client.h"
#include "weft/grpc/status.h"

namespace weft::grpc {

/// The reactor's handle on its call (see the file's description). Copyable; every copy is the same
/// call. Thread-safe unless a method says otherwise: requests run on the connection's loop in the
/// order made.
class ClientStream {
 public:
  struct State;  // grpc/client_reactor.cc

  /// For Client::start.
  explicit ClientStream(std::shared_ptr<State> state) noexcept : state_(std::move(state)) {}

  /// Thread-safe. Asks for the next response message: on_read_done follows. Throws std::logic_error
  /// while a read is outstanding, or once a read gave nullopt.
  void start_read();
  /// Thread-safe. Sends `message`: on_write_done follows. Throws std::logic_error while a write is
  /// outstanding, after writes_done(), or once a write failed.
  void start_write(ByteBuf message);
  /// Thread-safe; the first call counts. Ends the requests (half-close) after the outstanding write.
  void writes_done();
  /// Thread-safe. Cancels the call (RST_STREAM CANCEL; the status CANCELLED unless it had ended).
  void cancel();

  /// Loop thread only, until on_done(). The call: its response metadata (initial_metadata_value(),
  /// trailing_metadata_value()) once read.
  const ClientCall& call() const noexcept;
  /// Thread-safe. The connection's event loop, where the reactor's methods run.
  EventLoop& loop() const noexcept;

 private:
  std::shared_ptr<State> state_;
};

/// What a callback-form call implements (see the file's description). The call invokes its methods
/// on the connection's event loop, one at a time, never from inside a ClientStream method.
class ClientReactor {
 public:
  virtual ~ClientReactor() = default;
  /// The read start_read() asked for: the next response message, or nullopt once the call is over.
  virtual void on_read_done(std::optional<ByteBuf> message) { (void)message; }
  /// The write start_write() made: true once the stream took the message, false when the call was over first.
  virtual void on_write_done(bool ok) { (void)ok; }
  /// Last: the call's status, once it is over and no operation is outstanding. ClientStream
  /// methods do nothing after. What it throws is logged.
  virtual void on_done(const Status& status) { (void)status; }

 protected:
  /// Loop thread, or any thread once start() returned. The call's handle: there from Client::start
  /// on, before any method of the reactor runs (on_done may come before start() returned, for a
  /// call refused or ended at once).
  ClientStream& stream() noexcept { return *stream_; }

 private:
  friend class Client;
  friend class ClientChannel;
  friend struct ClientStream::State;
  std::optional<ClientStream> stream_;  // set by Client::start
};

}  // namespace weft::grpc
