#include "weft/channel/embedded_channel.h"

#include "weft/buffer/byte_buf_allocator.h"

namespace weft {

detail::EmbeddedLoopHolder::EmbeddedLoopHolder()
    : embedded_loop(std::make_unique<BasicDriver>(), EventLoop::Options{.name = "embedded", .manual_clock = true}) {}

EmbeddedChannel::EmbeddedChannel(ChannelConfig config, ByteBufAllocator& allocator)
    : Channel(embedded_loop, std::move(config), allocator) {
  register_channel();
  activate(SocketAddress::loopback(0), SocketAddress::loopback(0));
  run_pending();
}

EmbeddedChannel::~EmbeddedChannel() {
  if (is_open()) close_now();
  run_pending();  // tears the pipeline down while the channel is still whole
}

void EmbeddedChannel::do_flush() {
  for (auto& m : unflushed_) outbound_.push_back(std::move(m));
  unflushed_.clear();
}

void EmbeddedChannel::check_exception() {
  if (exceptions_.empty()) return;
  std::exception_ptr first = exceptions_.front();
  exceptions_.erase(exceptions_.begin());
  std::rethrow_exception(first);
}

bool EmbeddedChannel::finish() {
  close();
  run_pending();
  return !inbound_.empty() || !outbound_.empty();
}

}  // namespace weft
