#pragma once
/// @file
/// User events fired by the channel layer itself (see Handler::user_event).

namespace weft {

/// The peer shut down its output (half-closure) and the channel allows half closure: no more
/// inbound data will arrive, writing is still possible.
struct ChannelInputShutdownEvent {};

/// The channel shut down its own output (shutdown_output()).
struct ChannelOutputShutdownEvent {};

/// The channel is about to end its output without a close() through the pipeline: a graceful
/// close (Channel::close_gracefully) or the close that follows the peer's FIN. Fired before the
/// channel looks at what is left to write, so a handler that owes the peer a last message (the
/// TlsHandler's close_notify) writes and flushes it now, and it goes out before the FIN.
struct ChannelOutputClosingEvent {};

/// The channel's loop is shutting down gracefully (EventLoop::shutdown_gracefully). A handler that
/// can end its connection politely -- the HTTP/2 codec's GOAWAY, letting the open streams finish --
/// starts that and calls Channel::end_for_shutdown_itself(): the channel then stays open until it
/// closes, or until the loop's shutdown timeout, when it is closed anyway. If no handler does, the
/// channel closes right after the event.
struct ChannelShutdownRequestedEvent {};

}  // namespace weft
