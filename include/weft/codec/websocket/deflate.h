#pragma once
/// @file
/// permessage-deflate (RFC 7692): the negotiation of the Sec-WebSocket-Extensions offers, and a
/// connection's compressor and decompressor (raw DEFLATE with zlib).
///
/// Negotiation (server side): negotiate_deflate() reads the client's offers (several header fields,
/// several offers each, parameters with quoted values) and accepts the first permessage-deflate offer
/// it can honour: an offer with an unknown, malformed or repeated parameter is declined (the next one
/// is tried), and so is one that cannot meet the server's DeflateOptions (a client window limit the
/// client did not offer to obey). It also says what the 101 answers.
///
/// Negotiation (client side): deflate_offer() makes the offer from the client's DeflateOptions, and
/// check_deflate_answer() checks the server's answer against it (RFC 7692 section 7.1): one
/// permessage-deflate element, each parameter known, once, well-formed, and one the client offered
/// where the RFC requires that (client_max_window_bits, a window no larger than offered); what was
/// asked of the server (server_no_context_takeover, server_max_window_bits) must be in the answer.
///
/// PerMessageDeflate is one connection's state, for either side: a message is inflated into a buffer
/// bounded by a size (what comes beyond it is refused before it is stored: a zip bomb costs at most
/// the bound), and deflated into a buffer with room for the frame header in front. Its zlib streams
/// are made on first use -- a connection whose messages all go uncompressed has none -- and with the
/// agreed window: an inflater holds 1 << window_bits bytes of window plus about 7 KiB; a deflater
/// (1 << (window_bits + 2)) + (1 << (memory_level + 9)) bytes plus about 6 KiB (15 and 8: 262 KiB).
///
/// PerMessageDeflate: loop thread only, one per connection. negotiate_deflate is thread-safe.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "weft/buffer/byte_buf.h"
#include "weft/buffer/byte_buf_allocator.h"

namespace weft::ws {

/// A route's permessage-deflate settings (UpgradeOptions::deflate), or a client's
/// (client::WebSocketOptions::deflate), where each field says what it means to the client.
///
/// Off by default: a compressed connection costs CPU on every message and up to about 300 KiB of
/// zlib state (with context takeover and 15-bit windows), and browsers offer the extension on every
/// connection, so turning it on is the application's decision. Throws std::invalid_argument from
/// ws::upgrade() when a value is out of its range.
struct DeflateOptions {
  bool enabled = false;  ///< server: accept permessage-deflate offers; client: offer it
  /// Server: compress each message on its own (the deflater's window is reset per message: less
  /// ratio, and no secret in one message can be probed through the compressed size of another).
  /// Client: ask the server to (its answer must agree).
  bool server_no_context_takeover = false;
  /// Server: ask the client to compress each message on its own (answered to every offer it
  /// accepts). Client: compress each message on its own, and say so in the offer.
  bool client_no_context_takeover = false;
  /// Server: the largest window (8..15) it compresses with; a client may ask for less. Client:
  /// below 15, ask the server for at most this window (its answer must agree).
  int server_max_window_bits = 15;
  /// Server: the largest window (8..15) it accepts for the client's messages: below 15 an offer
  /// without client_max_window_bits is declined (the client would not be bound by it). Client: the
  /// largest window it compresses with (offered; the server may ask for less).
  int client_max_window_bits = 15;
  int level = 6;                       ///< zlib's compression level, 0..9 (1 fastest, 9 smallest)
  int memory_level = 8;                ///< zlib's memLevel, 1..9: the compressor's hash memory
  std::size_t min_message_size = 128;  ///< messages shorter than this go uncompressed

  /// Throws std::invalid_argument naming the first value out of its range. Thread-safe.
  void validate() const;
};

/// What a handshake agreed for permessage-deflate (RFC 7692 section 7.1). Thread-safe to read.
struct DeflateParameters {
  bool server_no_context_takeover = false;  ///< the server resets its compressor per message
  bool client_no_context_takeover = false;  ///< the client resets its compressor per message
  int server_max_window_bits = 15;          ///< the window of the server's compressor, at most
  int client_max_window_bits = 15;          ///< the window of the client's compressor, at most
  /// Equal parameters.
  bool operator==(const DeflateParameters&) const = default;
};

/// An accepted offer: the parameters agreed and the answer to send.
struct DeflateAgreement {
  DeflateParameters parameters;  ///< what both sides use
  /// The Sec-WebSocket-Extensions value of the 101: "permessage-deflate; server_max_window_bits=10"
  /// (the parameters the offer named or the server sets, RFC 7692 section 7.1).
  std::string response;
};

/// The first acceptable permessage-deflate offer among `header_values` (the client's
/// Sec-WebSocket-Extensions fields, in order) and the server's answer to it; nullopt when none is
/// acceptable or `options.enabled` is false. See the file's description. Thread-safe.
std::optional<DeflateAgreement> negotiate_deflate(const std::vector<std::string_view>& header_values,
                                                  const DeflateOptions& options);

/// The client's permessage-deflate offer for `options` (a Sec-WebSocket-Extensions value), which
/// always names client_max_window_bits (the client obeys a smaller window the server asks for).
/// Thread-safe.
std::string deflate_offer(const DeflateOptions& options);

/// The parameters agreed by the server's answer `value` (its Sec-WebSocket-Extensions fields joined
/// with ", ") to deflate_offer(options), or nullopt with `why` saying what is wrong with it (see the
/// file's description). Thread-safe.
std::optional<DeflateParameters> check_deflate_answer(std::string_view value, const DeflateOptions& options,
                                                      std::string& why);

/// One connection's compression state for permessage-deflate (see the file's description). Movable;
/// loop thread only.
class PerMessageDeflate {
 public:
  /// The settings of one side: its inflater takes the peer's messages, its deflater makes its own.
  struct Config {
    int inflate_window_bits = 15;              ///< the peer's window, 8..15
    bool inflate_no_context_takeover = false;  ///< the peer compresses each message on its own
    int deflate_window_bits = 15;              ///< this side's window, 8..15 (8 compresses with 9)
    bool deflate_no_context_takeover = false;  ///< compress each message on its own
    int level = 6;                             ///< zlib's level, 0..9
    int memory_level = 8;                      ///< zlib's memLevel, 1..9
    std::size_t min_message_size = 128;        ///< shorter messages go uncompressed
  };
  /// A server's configuration for what was agreed and its route's options. Thread-safe.
  static Config server_config(const DeflateParameters& agreed, const DeflateOptions& options) noexcept;
  /// A client's configuration for what was agreed and its options (the mirror of server_config).
  /// Thread-safe.
  static Config client_config(const DeflateParameters& agreed, const DeflateOptions& options) noexcept;

  /// What inflating found.
  enum class InflateStatus : std::uint8_t {
    ok,        ///< the bytes were inflated into the output
    too_big,   ///< the message inflates to more than the bound (nothing past it was stored)
    bad_data,  ///< not a valid DEFLATE stream
  };

  /// A connection's state; no zlib stream yet.
  explicit PerMessageDeflate(Config config) noexcept;
  ~PerMessageDeflate();
  /// Takes `other`'s streams (their zlib state does not move: it is held by pointer).
  PerMessageDeflate(PerMessageDeflate&& other) noexcept;
  /// Takes `other`'s streams, ending this one's.
  PerMessageDeflate& operator=(PerMessageDeflate&& other) noexcept;

  /// The configuration.
  const Config& config() const noexcept { return config_; }

  /// A compressed message begins (the inflater starts over when the peer takes no context over).
  void begin_message();
  /// Inflates the next bytes of a compressed message into `out` (made from `allocator` when empty),
  /// which holds at most `max_size` bytes: a byte beyond it is too_big, and is never stored.
  InflateStatus inflate(std::string_view compressed, ByteBuf& out, std::size_t max_size, ByteBufAllocator& allocator);
  /// The message's end: inflates the 0x00 0x00 0xff 0xff that the sender removed (RFC 7692 7.2.2).
  InflateStatus end_message(ByteBuf& out, std::size_t max_size, ByteBufAllocator& allocator);

  /// Whether a message of `size` bytes is to be compressed (min_message_size).
  bool compresses(std::size_t size) const noexcept { return size != 0 && size >= config_.min_message_size; }
  /// `payload` compressed as one message without its 4-byte tail, in a buffer from `allocator` with
  /// `headroom` bytes before the reader index (for the frame header); an empty buffer when it would
  /// not shrink -- the message then goes uncompressed, and the compressor starts over (what the peer
  /// never saw cannot be referred to).
  ByteBuf deflate(std::string_view payload, std::size_t headroom, ByteBufAllocator& allocator);

  /// Whether the inflater, and the deflater, have been made (for tests of the lazy creation).
  bool has_inflater() const noexcept;
  /// See has_inflater().
  bool has_deflater() const noexcept;

 private:
  struct Streams;
  InflateStatus run_inflate(const std::uint8_t* in, std::size_t n, ByteBuf& out, std::size_t max_size,
                            ByteBufAllocator& allocator);
  Config config_;
  bool stream_ended_ = false;  // the peer's message held a final block: skip the rest of it
  std::unique_ptr<Streams> streams_;
};

}  // namespace weft::ws
