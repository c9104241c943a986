#pragma once
/// @file
/// The kernel's side of kTLS (TlsContextBuilder::kernel_tls), behind a seam in weft::detail: what a
/// TlsHandler asks of the socket -- attach the `tls` ULP, take the keys of the sending direction,
/// send a control record -- so that tests can put a "software kernel" in its place. Not API.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace weft {

class Channel;

namespace detail {

// linux/tls.h's crypto info for TLS_TX (tls12_crypto_info_aes_gcm_128, _aes_gcm_256 or
// _chacha20_poly1305, according to its tls_crypto_info header), as the bytes setsockopt takes.
struct KernelTlsCryptoInfo {
  alignas(8) std::uint8_t bytes[64] = {};
  std::uint32_t size = 0;
};

// What kTLS asks of the kernel, per channel. The virtual calls are the seam (real: setsockopt and
// sendmsg on Channel::native_fd()); the others add the process-wide detection and its log lines.
// One port serves every loop: calls come from the channel's loop thread, several loops at once.
class KernelTlsPort {
 public:
  virtual ~KernelTlsPort() = default;

  // setsockopt(TCP_ULP, "tls"): 0, or an errno value.
  virtual int attach_ulp(Channel& channel) noexcept = 0;
  // setsockopt(SOL_TLS, TLS_TX, info): from now on the kernel makes the records of what the channel
  // sends. 0, or an errno value.
  virtual int start_tx(Channel& channel, const KernelTlsCryptoInfo& info) noexcept = 0;
  // Sends `data` as one record of content type `type` (21: an alert) through the kernel's TLS
  // (sendmsg with a TLS_SET_RECORD_TYPE control message). 0, or an errno value.
  virtual int send_record(Channel& channel, std::uint8_t type, const std::uint8_t* data, std::size_t size) noexcept = 0;

  // Thread-safe. Whether a connection found that the kernel does not offer the `tls` ULP; then no
  // connection asks again.
  bool ulp_missing() const noexcept { return ulp_missing_.load(std::memory_order_relaxed); }
  // Loop thread of `channel`. attach_ulp(), unless the ULP is known to be missing. The first
  // connection to find it missing logs so (info) and marks it missing; other failures are logged
  // at debug level. True when the ULP is attached.
  bool try_attach(Channel& channel);
  // Loop thread of `channel`. start_tx(); the first success logs at info level that kTLS is on,
  // naming `what` (version and cipher suite). A refusal is logged at debug level. True on success.
  bool try_start_tx(Channel& channel, const KernelTlsCryptoInfo& info, std::string_view what);

 private:
  std::atomic<bool> ulp_missing_{false};
  std::atomic<bool> announced_on_{false};
};

// Thread-safe. The port in use: the kernel's, unless a test replaced it.
KernelTlsPort& kernel_tls_port() noexcept;
// Replaces the port (null: the kernel's again) and returns the one it replaces (null for the
// kernel's). For tests, while no TLS handshake runs; `port` must outlive its use.
KernelTlsPort* replace_kernel_tls_port(KernelTlsPort* port) noexcept;

}  // namespace detail
}  // namespace weft
