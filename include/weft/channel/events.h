#pragma once
/// @file
/// User events fired by the channel layer itself (see Handler::user_event).

namespace weft {

/// The peer shut down its output (half-closure) and the channel allows half closure: no more
/// inbound data will arrive, writing is still possible.
struct ChannelInputShutdownEvent {};

/// The channel shut down its own output (shutdown_output()).
struct ChannelOutputShutdownEvent {};

}  // namespace weft
