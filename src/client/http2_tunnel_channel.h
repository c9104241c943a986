#pragma once
// An extended CONNECT's stream (RFC 8441) on the HTTP/2 client, served as a channel of its own on
// its connection's loop: the stream's DATA in as ByteBuf, ByteBuf out as DATA, so that a codec
// written for a byte stream (ws::Codec) runs on it as on a socket. The client's counterpart of
// http2::StreamChannel (a stream the server serves as a channel).
//
// In: a coroutine reads the stream while the channel reads (auto-read on, no suspension held). The
// stream's window is returned to the server only as chunks are read, so a pipeline that stops
// reading stops its server at the stream's window (ClientSettings::initial_window_size); the
// connection's window is returned on receipt, so the other streams go on. The server's END_STREAM
// is ChannelInputShutdownEvent. A reset (the server's RST_STREAM) or the connection's end fires the
// stream's error (http2::ClientStreamError, ChannelClosedError) as an exception event, then closes
// the channel.
// Out: flushed buffers go to the stream one at a time, by reference; ClientStream::write() waits
// while ClientSettings::max_buffered_upload is queued behind closed windows, and the bytes it has
// not taken stay in the channel's write queue, counted toward writability: the windows are the
// channel's backpressure.
// End: shutdown_output() sends END_STREAM after what was written. close() ends our half with
// END_STREAM when the server has ended its own (a tunnel's graceful end), else resets the stream
// (RST_STREAM CANCEL).
//
// Loop thread only (its connection's loop); Channel's thread-safe methods post to it.

#include <coroutine>
#include <memory>
#include <optional>
#include <vector>

#include "weft/buffer/byte_buf.h"
#include "weft/channel/channel.h"
#include "weft/codec/http2/client_stream.h"
#include "weft/core/task.h"

namespace weft::client::detail {

class Http2TunnelChannel final : public Channel {
 public:
  // A channel for `stream` (its response's 2xx head received), a child of `parent` (the HTTP/2
  // connection's channel, on whose loop it runs). Build its pipeline, then start() it.
  Http2TunnelChannel(Channel& parent, http2::ClientStream stream);
  ~Http2TunnelChannel() override;

  // Registers the channel with its loop and makes it active (its reading starts with auto-read).
  void start();
  // The stream's id.
  std::int32_t stream_id() const noexcept { return stream_id_; }

 protected:
  void do_register() override {}
  void do_begin_read() override;
  void do_stop_read() override { reading_ = false; }
  void do_flush() override;
  void do_close() override;
  void do_shutdown_output(Promise<void> promise) override;

 private:
  struct ReadWanted;  // the reader's wait while the channel does not read
  static Task<> read_loop(std::shared_ptr<Http2TunnelChannel> self);
  static Task<> write_loop(std::shared_ptr<Http2TunnelChannel> self);
  std::shared_ptr<Http2TunnelChannel> self() {
    return std::static_pointer_cast<Http2TunnelChannel>(shared_from_this());
  }
  void input_ended();
  void wake_reader();  // from a loop task: never inside the call that asked for reading

  Channel* parent_;
  std::shared_ptr<http2::ClientStream> stream_;  // shared with the coroutines; destroyed on the loop
  const std::int32_t stream_id_;
  std::coroutine_handle<> read_waiter_;
  bool reading_ = false;
  bool reader_running_ = false;
  bool writer_running_ = false;
  bool wake_posted_ = false;
  bool input_ended_ = false;
  std::vector<ByteBuf> taken_;  // the writer's scratch (OutboundBuffer::retain_flushed)
};

}  // namespace weft::client::detail
