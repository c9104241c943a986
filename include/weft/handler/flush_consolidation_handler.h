#pragma once
/// @file
/// FlushConsolidationHandler: turns the many flushes a pipelined protocol makes while handling one
/// read batch (one per response) into one flush -- one write syscall -- at the end of the batch.
///
///   pipeline.add_first("flush", std::make_shared<weft::FlushConsolidationHandler>(256));
///
/// While a read batch is in progress (from the first read to read-complete) flushes are held back;
/// every `explicit_flush_after_flushes` held flushes one goes through (the explicit upper bound), and
/// read-complete flushes what is held. Outside a read batch a flush goes through at once, unless
/// consolidate_when_no_read_in_progress: then it is deferred to a task on the loop (many flushes
/// from other tasks become one). Held flushes also go through before close, when the channel turns
/// unwritable, on an exception and when the handler is removed.
///
/// Loop thread only. Place it near the head (before handlers that flush).

#include <cstddef>

#include "weft/channel/handler.h"
#include "weft/core/event_loop.h"

namespace weft {

/// Turns the flushes of one read batch into one (see the file's description). Loop thread only.
class FlushConsolidationHandler final : public Handler {
 public:
  /// Throws std::invalid_argument if explicit_flush_after_flushes is 0.
  explicit FlushConsolidationHandler(std::size_t explicit_flush_after_flushes = 256,
                                     bool consolidate_when_no_read_in_progress = false);

  void read_message(Context& ctx, MessageRef message) override;
  void channel_read_complete(Context& ctx) override;
  void flush(Context& ctx) override;
  void close(Context& ctx, Promise<void> promise) override;
  void writability_changed(Context& ctx) override;
  void exception_caught(Context& ctx, std::exception_ptr error) override;
  void channel_inactive(Context& ctx) override;
  void handler_removed(Context& ctx) override;

 private:
  void flush_now(Context& ctx);
  void flush_if_needed(Context& ctx);
  void cancel_scheduled(Context& ctx);

  std::size_t explicit_after_;
  bool consolidate_without_read_;
  std::size_t held_ = 0;
  bool read_in_progress_ = false;
  TimerId scheduled_ = 0;
};

}  // namespace weft
