#pragma once
// What a grpc::ClientCall handle and its deadline timer share. Loop thread only.

#include <memory>
#include <optional>
#include <string>

#include "weft/buffer/byte_buf_allocator.h"
#include "weft/codec/http2/client_stream.h"
#include "weft/core/loop_signal.h"
#include "weft/core/unique_function.h"
#include "weft/grpc/client.h"
#include "weft/grpc/compression.h"
#include "weft/grpc/message_framing.h"

namespace weft::grpc {

// What a call that waits for a connection (grpc::ClientChannel, no connection ready) keeps until one
// opens its stream, and the wake-ups of its writer and reader meanwhile.
struct PendingOpen {
  PendingOpen(EventLoop& loop, std::string m, CallOptions o)
      : method(std::move(m)), options(std::move(o)), writer(loop), reader(loop) {}
  std::string method;
  CallOptions options;
  LoopSignal writer;
  LoopSignal reader;
  std::weak_ptr<detail::ConnectionCloseWatcher> close_watcher;  // the callback form's, told of its connection
  bool writer_parked = false;  // a write() waits for the stream: it ends the stream after its message
  bool ended = false;          // END_STREAM sent (writes_done() before the stream opened)
};

struct ClientCall::State {
  State(EventLoop& l, ByteBufAllocator& allocator, std::size_t max_receive, CompressionOptions send_compression)
      : loop(&l), loop_allocator(&allocator), max_receive_bytes(max_receive), compression(send_compression),
        deframer(max_receive) {}

  void end_locally(Status why);  // the call ends here (deadline, cancel, a message too large): reset the stream
  void end_with(Status why);     // the call ended (trailers, the stream failed)
  void stop_deadline() noexcept;
  void tell_end() noexcept;  // on_end, once
  bool waiting_for_stream() const noexcept { return !status && !stream.valid(); }
  void wake_waiters() noexcept;  // a pending call's writer and reader: its stream opened, or it ended
  // A pending call's END_STREAM when writes_done() came while its write() was parked, after that write.
  static void end_after_parked_write(State& st);

  EventLoop* loop;
  ByteBufAllocator* loop_allocator;
  std::size_t max_receive_bytes;
  CompressionOptions compression;  // how request messages are sent
  http2::ClientStream stream;
  DecompressingDeframer deframer;  // made again with the response's grpc-encoding when its head comes
  std::optional<Status> status;  // set: the call has ended
  std::optional<TimerId> deadline;
  bool writes_done = false;
  bool head_seen = false;
  bool refused = false;                  // the stream failed refused: the server did not process the call
  std::optional<TimePoint> deadline_at;  // when the deadline passes (grpc-timeout of a stream opened late)
  std::unique_ptr<PendingOpen> pending;  // set while the call waits for a connection (grpc::ClientChannel)
  std::uint32_t reads_this_turn = 0;  // messages read since the loop last took a turn
  UniqueFunction<void()> on_end;      // told once when status is set (the callback form)
};

// ClientCall's state, for the callback form and grpc::ClientChannel.
class ClientCallAccess {
 public:
  static void on_end(ClientCall& call, UniqueFunction<void()> listener) { call.state_->on_end = std::move(listener); }
  static const std::shared_ptr<ClientCall::State>& state(const ClientCall& call) noexcept { return call.state_; }
};

/// Loop thread only (`loop`'s). A call that waits for a connection (grpc::ClientChannel): its writes and
/// reads wait until Client::open_pending opens its stream, or it ends (its deadline, cancel(), or
/// State::end_with). Its deadline runs from now. Throws InvalidMetadata as Client::call.
ClientCall pending_call(EventLoop& loop, const ClientOptions& defaults, std::string_view method, CallOptions options);
/// Loop thread only. The callback form of a unary call: awaits `call` (which has not started) and gives
/// `done` the result; metadata the call refused comes as INVALID_ARGUMENT, another exception as
/// INTERNAL. `keep` (the client or the channel) lives until `done` has run.
Task<> deliver_unary(std::shared_ptr<const void> keep, Task<UnaryResult> call, UniqueFunction<void(UnaryResult)> done);
/// Loop thread only. A call that has ended with `status` before it started (no stream).
ClientCall ended_call(EventLoop& loop, Status status);

}  // namespace weft::grpc
