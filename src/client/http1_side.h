#pragma once
// The HTTP/1.1 half of an OriginConnection on its channel's loop: writes one request at a time,
// watches the answer's bytes for the idle timeout, and reports the answer, an error or the close.
// Channel loop only, except send_from_pool.

#include <exception>
#include <memory>
#include <optional>
#include <string>

#include "weft/channel/channel.h"
#include "weft/codec/http1/client_codec.h"
#include "weft/core/clock.h"
#include "weft/core/event_loop.h"

namespace weft::client::detail {

class OriginConnection;

struct Http1Side : std::enable_shared_from_this<Http1Side> {
  Http1Side(std::weak_ptr<OriginConnection> owner, Duration idle) : connection(std::move(owner)), idle_timeout(idle) {}

  // Adds the codec and the handlers after what `ch` has (TLS).
  void install(Channel& ch, const http::Limits& limits, const std::string& authority);
  // Thread-safe. Writes `request` on `ch`'s loop; a channel already closed reports never_sent.
  void send_from_pool(ChannelPtr ch, http::HttpClientRequest request, std::string url);

  void active();
  void bytes_arrived();
  void answer(http::HttpClientResponse response);
  void error(std::exception_ptr e);
  void closed();

  std::weak_ptr<OriginConnection> connection;
  Duration idle_timeout;
  ChannelPtr channel;           // until it closes; channel loop only
  bool awaiting = false;        // a request was written and its answer has not ended
  bool answer_started = false;  // a byte came since the request was written
  bool closed_reported = false;
  TimePoint last_read{};
  std::string url;  // of the request on the wire, for the timeout's message
  std::optional<TimerId> idle_timer;
  std::exception_ptr first_error;

 private:
  void arm_idle(Duration in);
  void idle_due();
};

}  // namespace weft::client::detail
