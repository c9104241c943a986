#include "weft/transport/io_uring.h"

#include <liburing.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string_view>
#include <thread>

#include <fmt/format.h>

#include "io_uring_driver.h"
#include "io_uring_server_channel.h"
#include "io_uring_socket_channel.h"
#include "weft/core/log.h"
#include "weft/transport/epoll.h"

namespace weft {
namespace {

struct Probe {
  bool available = false;
  std::string reason;
};

// What the transport needs: a ring, buffer rings, multishot accept (Linux 6.0, probed by
// IORING_OP_SEND_ZC which arrived with them), and waits with a timeout argument (IORING_FEAT_EXT_ARG).
// WEFT_IO_URING=off in the environment refuses it like a kernel that cannot (for comparisons and tests).
Probe probe_kernel() {
  if (const char* setting = std::getenv("WEFT_IO_URING"); setting != nullptr && std::string_view(setting) == "off") {
    return {false, "WEFT_IO_URING=off in the environment"};
  }
  ::io_uring ring{};
  io_uring_params params{};
  int rc = io_uring_queue_init_params(8, &ring, &params);
  if (rc < 0) return {false, fmt::format("io_uring_setup failed: {}", std::strerror(-rc))};
  Probe result{true, {}};
  io_uring_probe* ops = io_uring_get_probe_ring(&ring);
  if ((params.features & IORING_FEAT_EXT_ARG) == 0) {
    result = {false, "the kernel lacks IORING_FEAT_EXT_ARG (Linux 5.11)"};
  } else if (ops == nullptr) {
    result = {false, "the kernel cannot list its io_uring operations (Linux 5.6)"};
  } else {
    for (int op : {IORING_OP_ACCEPT, IORING_OP_RECV, IORING_OP_SENDMSG, IORING_OP_CONNECT, IORING_OP_READ,
                   IORING_OP_ASYNC_CANCEL, IORING_OP_SEND_ZC}) {
      if (!io_uring_opcode_supported(ops, op)) {
        result = {false, fmt::format("the kernel lacks io_uring operation {} (multishot receive needs Linux 6.0)", op)};
        break;
      }
    }
  }
  if (ops != nullptr) io_uring_free_probe(ops);
  io_uring_queue_exit(&ring);
  return result;
}

const Probe& kernel_probe() {
  static const Probe probe = [] {
    Probe p;
    // On a thread of its own, for the reason IoUringDriver makes its ring on one (see there).
    std::thread([&p] { p = probe_kernel(); }).join();
    if (!p.available) log(LogLevel::warn, "io_uring unavailable ({}); the io_uring transport runs on epoll", p.reason);
    return p;
  }();
  return probe;
}

}  // namespace

void IoUringOptions::validate() const {
  auto fail = [](const std::string& what) { throw std::invalid_argument("IoUringOptions: " + what); };
  if (submission_entries == 0 || submission_entries > 32768) fail("submission_entries must be in 1..32768");
  if (completion_entries < submission_entries || completion_entries > 65536 * 4) {
    fail("completion_entries must be at least submission_entries and at most 262144");
  }
  if (buffer_count == 0 || buffer_count > 32768 || (buffer_count & (buffer_count - 1)) != 0) {
    fail("buffer_count must be a power of two in 1..32768");
  }
  if (buffer_size < 64 || buffer_size > (std::size_t{1} << 30)) fail("buffer_size must be in 64..2^30");
  if (defer_taskrun && !single_issuer) fail("defer_taskrun needs single_issuer");
}

IoUringTransport::IoUringTransport(IoUringOptions options) : options_(options) { options_.validate(); }

bool IoUringTransport::available(std::string* reason) {
  const Probe& probe = kernel_probe();
  if (reason != nullptr) *reason = probe.reason;
  return probe.available;
}

std::unique_ptr<IoDriver> IoUringTransport::create_driver() {
  if (!available()) return epoll().create_driver();
  return std::make_unique<IoUringDriver>(options_);
}

ChannelPtr IoUringTransport::new_socket_channel(EventLoop& loop, const ChannelConfig& config) {
  if (!available()) return epoll().new_socket_channel(loop, config);
  return std::make_shared<IoUringSocketChannel>(loop, config, -1, SocketAddress());
}

ChannelPtr IoUringTransport::new_accepted_channel(EventLoop& loop, const ChannelConfig& config,
                                                  AcceptedSocket socket) {
  if (!available()) return epoll().new_accepted_channel(loop, config, std::move(socket));
  SocketAddress remote = socket.remote_address();
  auto channel = std::make_shared<IoUringSocketChannel>(loop, config, socket.fd(), remote);
  socket.release();  // the channel owns the descriptor now
  return channel;
}

ChannelPtr IoUringTransport::new_server_channel(EventLoop& loop, const ChannelConfig& config) {
  if (!available()) return epoll().new_server_channel(loop, config);
  return std::make_shared<IoUringServerChannel>(loop, config);
}

Transport& io_uring() {
  static IoUringTransport transport;
  return transport;
}

}  // namespace weft
