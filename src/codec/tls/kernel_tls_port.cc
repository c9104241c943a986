#include "weft/codec/tls/kernel_tls_port.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>

#include "weft/channel/channel.h"
#include "weft/core/log.h"

#ifndef TCP_ULP
#define TCP_ULP 31
#endif
#ifndef SOL_TLS
#define SOL_TLS 282
#endif

namespace weft::detail {

namespace {

constexpr int kTlsTx = 1;               // linux/tls.h: TLS_TX
constexpr int kTlsSetRecordType = 1;    // linux/tls.h: TLS_SET_RECORD_TYPE

// The kernel of this machine, through the channel's socket.
class LinuxKernelTlsPort final : public KernelTlsPort {
 public:
  int attach_ulp(Channel& channel) noexcept override {
    const int fd = channel.native_fd();
    if (fd < 0) return ENOTSOCK;
    static constexpr char kUlp[] = "tls";
    return ::setsockopt(fd, SOL_TCP, TCP_ULP, kUlp, sizeof kUlp) == 0 ? 0 : errno;
  }

  int start_tx(Channel& channel, const KernelTlsCryptoInfo& info) noexcept override {
    const int fd = channel.native_fd();
    if (fd < 0) return ENOTSOCK;
    return ::setsockopt(fd, SOL_TLS, kTlsTx, info.bytes, info.size) == 0 ? 0 : errno;
  }

  int send_record(Channel& channel, std::uint8_t type, const std::uint8_t* data, std::size_t size) noexcept override {
    const int fd = channel.native_fd();
    if (fd < 0) return ENOTSOCK;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof type)] = {};
    iovec iov{const_cast<std::uint8_t*>(data), size};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
    cmsg->cmsg_level = SOL_TLS;
    cmsg->cmsg_type = kTlsSetRecordType;
    cmsg->cmsg_len = CMSG_LEN(sizeof type);
    std::memcpy(CMSG_DATA(cmsg), &type, sizeof type);
    // Never blocks the loop: the write queue is empty when this is sent, so two bytes find room.
    const ssize_t sent = ::sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (sent < 0) return errno;
    return static_cast<std::size_t>(sent) == size ? 0 : EAGAIN;
  }
};

LinuxKernelTlsPort& linux_port() noexcept {
  static LinuxKernelTlsPort port;
  return port;
}

std::atomic<KernelTlsPort*> g_replacement{nullptr};

// What /proc says the kernel offers, for the log line.
std::string available_ulps() {
  std::ifstream file("/proc/sys/net/ipv4/tcp_available_ulp");
  std::string line;
  if (!file || !std::getline(file, line)) return "unknown";
  return line.empty() ? "none" : line;
}

bool ulp_is_missing(int error) noexcept { return error == ENOENT || error == ENOPROTOOPT || error == EOPNOTSUPP; }

}  // namespace

bool KernelTlsPort::try_attach(Channel& channel) {
  if (ulp_missing()) return false;
  const int error = attach_ulp(channel);
  if (error == 0) return true;
  if (!ulp_is_missing(error)) {
    log(LogLevel::debug,
        "TLS: kernel TLS: the tls ULP could not be attached ({}): this connection's records are made in user space",
        std::strerror(error));
    return false;
  }
  if (!ulp_missing_.exchange(true, std::memory_order_relaxed)) {
    log(LogLevel::info,
        "TLS: kernel TLS was asked for, but this kernel does not offer the tls ULP (tcp_available_ulp: {}): "
        "records are made in user space",
        available_ulps());
  }
  return false;
}

bool KernelTlsPort::try_start_tx(Channel& channel, const KernelTlsCryptoInfo& info, std::string_view what) {
  const int error = start_tx(channel, info);
  if (error != 0) {
    log(LogLevel::debug,
        "TLS: kernel TLS: the kernel refused the keys of {} ({}): this connection's records are made in user space",
        what, std::strerror(error));
    return false;
  }
  if (!announced_on_.exchange(true, std::memory_order_relaxed)) {
    log(LogLevel::info,
        "TLS: kernel TLS on (TX): the kernel makes the records that connections send ({}, first); what they "
        "receive is decrypted in user space",
        what);
  }
  return true;
}

KernelTlsPort& kernel_tls_port() noexcept {
  KernelTlsPort* replacement = g_replacement.load(std::memory_order_acquire);
  return replacement != nullptr ? *replacement : linux_port();
}

KernelTlsPort* replace_kernel_tls_port(KernelTlsPort* port) noexcept {
  return g_replacement.exchange(port, std::memory_order_acq_rel);
}

}  // namespace weft::detail
