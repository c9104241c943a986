#pragma once
// The HTTP/1.1 half of an OriginConnection on its channel's loop: writes one request at a time,
// watches the answer's bytes for the idle timeout, and reports the answer, an error or the close.
// Channel loop only, except send_from_pool.
//
// Sent or never sent: a request that may not be sent twice (not idempotent) has its first byte
// written on its own with a write completion (WriteCompletions). When the connection closes under
// it, that completion tells whether any byte reached the socket: if none did, the server cannot
// have seen the request and the pool may send it again.

#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "weft/channel/channel.h"
#include "weft/codec/http1/client_codec.h"
#include "weft/core/clock.h"
#include "weft/core/event_loop.h"
#include "weft/core/future.h"

namespace weft::client::detail {

class Http1Body;
class OriginConnection;

struct Http1Side : std::enable_shared_from_this<Http1Side> {
  // `origin`: "scheme://authority", which a request's target completes into its URL (for messages).
  Http1Side(std::weak_ptr<OriginConnection> owner, Duration idle, std::string origin)
      : connection(std::move(owner)), idle_timeout(idle), origin_text(std::move(origin)) {}

  // Adds the codec and the handlers after what `ch` has (TLS).
  void install(Channel& ch, const http::Limits& limits, const std::string& authority);
  // Thread-safe. Writes `request` on `ch`'s loop; a channel already closed reports never_sent.
  // `probe`: learn whether any of its bytes were written (see the file's description).
  // `body`: a streamed request's, started when its head comes.
  void send_from_pool(ChannelPtr ch, http::HttpClientRequest&& request, bool probe, std::shared_ptr<Http1Body> body);

  void active();
  void bytes_arrived();
  // The codec's response, passed on by reference down to the future, which moves it in (the codec
  // lets go of what is left of it once this returns).
  void answer(http::HttpClientResponse&& response);
  void error(std::exception_ptr e);
  void closed();
  // The probed request's first byte was written (true), or the channel closed before (false).
  void probe_settled(bool written);
  // A streamed request body (UploadSink of HTTP/1.1): writes `chunk`; `done` completes when the
  // channel is writable again, or fails when the connection ends.
  void upload_push(ByteBuf chunk, Promise<void> done);
  void upload_end();
  void writability_changed(bool writable);
  // The outbound handler's: whether the next bytes written are a probed request's first.
  bool take_probe_arming() noexcept { return std::exchange(probe_armed, false); }

  // Of the request on the wire: not probed, its first byte's write pending, written, or not.
  enum class Probe : std::uint8_t { none, pending, written, unwritten };

  std::weak_ptr<OriginConnection> connection;
  Duration idle_timeout;
  std::string origin_text;      // "scheme://authority"
  ChannelPtr channel;           // until it closes; channel loop only
  bool awaiting = false;        // a request was written and its answer has not ended
  bool answer_started = false;  // a byte came since the request was written
  bool closed_reported = false;
  bool probe_armed = false;         // the next bytes written are the probed request's
  bool close_awaits_probe = false;  // closed, reporting once the probe's completion settles
  Probe probe = Probe::none;
  TimePoint last_read{};
  std::string target;  // of the request on the wire, for the timeout's message (assigned: no allocation)
  std::optional<TimerId> idle_timer;
  std::exception_ptr first_error;
  std::shared_ptr<Http1Body> streamed_body;  // the request on the wire streams its answer's body
  bool uploading = false;                    // its body is being written (the idle clock runs only while it is blocked)
  std::optional<Promise<void>> upload_blocked;  // a push waiting for the channel to be writable

 private:
  void write(const ChannelPtr& ch, http::HttpClientRequest&& request, bool probe, std::shared_ptr<Http1Body> body);
  void arm_idle(Duration in);
  void idle_due();
  void report_closed();
};

}  // namespace weft::client::detail
