// libFuzzer target: a server's WebSocket codec (ws::Codec, Role::server) behind an echo handler,
// fed arbitrary client frames, with or without permessage-deflate and its parameters, streamed
// fragments and small limits, as the input's first 4 bytes say, in reads of the size they say.
// The input format and the invariants: websocket_harness.h.

#include <cstddef>
#include <cstdint>

#include "websocket_harness.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return weft::ws_fuzz::run(weft::ws::Codec::Role::server, data, size);
}
