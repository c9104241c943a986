#pragma once
// What a grpc::ClientCall handle and its deadline timer share. Loop thread only.

#include <optional>

#include "weft/buffer/byte_buf_allocator.h"
#include "weft/grpc/client.h"
#include "weft/grpc/compression.h"
#include "weft/grpc/message_framing.h"
#include "weft/codec/http2/client_stream.h"
#include "weft/core/unique_function.h"

namespace weft::grpc {

struct ClientCall::State {
  State(EventLoop& l, ByteBufAllocator& allocator, std::size_t max_receive, CompressionOptions send_compression)
      : loop(&l), loop_allocator(&allocator), max_receive_bytes(max_receive), compression(send_compression),
        deframer(max_receive) {}

  void end_locally(Status why);  // the call ends here (deadline, cancel, a message too large): reset the stream
  void end_with(Status why);     // the call ended (trailers, the stream failed)
  void stop_deadline() noexcept;
  void tell_end() noexcept;  // on_end, once

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
  std::uint32_t reads_this_turn = 0;  // messages read since the loop last took a turn
  UniqueFunction<void()> on_end;      // told once when status is set (the callback form)
};

}  // namespace weft::grpc
