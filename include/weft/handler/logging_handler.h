#pragma once
/// @file
/// LoggingHandler: logs every event and operation passing through it, with a hex dump of ByteBuf
/// messages. It logs at `level` (debug by default), so it is silent unless the log level is lowered
/// (WEFT_LOG=debug or set_log_level()); when silent it costs one comparison per event.
///
///   pipeline.add_first("log", std::make_shared<weft::LoggingHandler>("wire"));
///
/// Loop thread only. Passes everything on unchanged. Sharable: one instance may log many channels.

#include <cstddef>
#include <string>

#include "weft/buffer/byte_buf.h"
#include "weft/channel/handler.h"
#include "weft/core/log.h"

namespace weft {

/// A multi-line hex dump: offset, 16 bytes in hex, the same bytes as ASCII ('.' when not printable).
/// At most max_bytes readable bytes are dumped; a last line says how many were left out.
std::string pretty_hex_dump(const ByteBuf& buf, std::size_t max_bytes = 4096);

/// Logs every event and operation passing through it (see the file's description). Sharable.
class LoggingHandler final : public Handler {
 public:
  /// Logs as `name` at `level`, dumping at most `max_dump_bytes` of each ByteBuf.
  explicit LoggingHandler(std::string name = "weft.logging", LogLevel level = LogLevel::debug,
                          std::size_t max_dump_bytes = 4096);

  void handler_added(Context& ctx) override;
  void handler_removed(Context& ctx) override;
  void channel_active(Context& ctx) override;
  void channel_inactive(Context& ctx) override;
  void channel_read_complete(Context& ctx) override;
  void user_event(Context& ctx, const std::any& event) override;
  void writability_changed(Context& ctx) override;
  void exception_caught(Context& ctx, std::exception_ptr error) override;
  void bind(Context& ctx, const SocketAddress& local, Promise<void> promise) override;
  void connect(Context& ctx, const SocketAddress& remote, Promise<void> promise) override;
  void flush(Context& ctx) override;
  void read(Context& ctx) override;
  void close(Context& ctx, Promise<void> promise) override;
  void read_message(Context& ctx, MessageRef message) override;
  void write_message(Context& ctx, MessageRef message) override;
  /// Keeps no per-channel state: one logger may watch many channels.
  bool is_sharable() const noexcept override { return true; }

 private:
  bool enabled() const noexcept { return log_level() <= level_; }
  void emit(Context& ctx, std::string_view event, std::string_view detail = {}) const;
  std::string describe(MessageRef message) const;

  std::string name_;
  LogLevel level_;
  std::size_t max_dump_bytes_;
};

}  // namespace weft
