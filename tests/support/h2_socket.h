#pragma once
// Drives an H2Client over a BlockingClient's socket: sends what the client has to say, feeds it
// what the server answers, until every stream it opened (or one of them) has closed. Every wait is bounded (a
// broken server fails the test instead of hanging it); nothing waits for a time to pass.

#include <cstdint>
#include <string>

#include "support/blocking_client.h"
#include "support/h2_client.h"

namespace weft::test {

// True when every stream closed; false on EOF, a reset, a connection error or `timeout` without a byte.
inline bool exchange_until_closed(BlockingClient& socket, H2Client& client, TestDuration timeout = 20000ms) {
  for (;;) {
    const std::string out = client.take_output();
    if (!out.empty() && !socket.send_all(out, timeout)) return false;
    if (client.all_closed()) return true;
    StreamEnd end = StreamEnd::timeout;
    const std::string in = socket.recv_some(256 * 1024, timeout, &end);
    if (in.empty()) return false;
    if (!client.receive(in)) return false;
  }
}

// The same until `stream` has closed (others may stay open): false as above.
inline bool exchange_until_stream_closed(BlockingClient& socket, H2Client& client, std::int32_t stream,
                                         TestDuration timeout = 20000ms) {
  for (;;) {
    const std::string out = client.take_output();
    if (!out.empty() && !socket.send_all(out, timeout)) return false;
    if (client.response(stream).closed) return true;
    StreamEnd end = StreamEnd::timeout;
    const std::string in = socket.recv_some(256 * 1024, timeout, &end);
    if (in.empty()) return false;
    if (!client.receive(in)) return false;
  }
}

}  // namespace weft::test
