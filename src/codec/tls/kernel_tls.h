#pragma once
// The handoff of a connection's sending direction to the kernel (kTLS), per connection: collects
// what the kernel needs while the handshake runs -- the TLS 1.3 traffic secret of the direction we
// send (OpenSSL gives it only to the key log callback), and the number of records OpenSSL has made
// with the application key so far (the sequence number the kernel goes on from) -- and turns it
// into linux/tls.h's crypto info. Loop thread only, like its TlsHandler.

#include <openssl/evp.h>
#include <openssl/ssl.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "weft/codec/tls/kernel_tls_port.h"

namespace weft::detail {

class KernelTlsHandoff {
 public:
  // `server`: the side we are; our write direction is the server's or the client's.
  explicit KernelTlsHandoff(bool server) noexcept : server_(server) {}
  // Wipes the secret.
  ~KernelTlsHandoff();
  KernelTlsHandoff(const KernelTlsHandoff&) = delete;
  KernelTlsHandoff& operator=(const KernelTlsHandoff&) = delete;

  // Whether the kernel can take the negotiated version and cipher: TLS 1.2 or 1.3 with AES-128-GCM,
  // AES-256-GCM or ChaCha20-Poly1305.
  static bool suits(const SSL* ssl) noexcept;
  // A line of OpenSSL's key log. Keeps the TLS 1.3 application traffic secret of our write
  // direction; OpenSSL logs it right after writing the last record under the handshake key, so the
  // records it protects start after the `unsent` bytes of output not yet passed on.
  void on_key_log(const char* line, std::size_t unsent) noexcept;
  // OpenSSL's output, whole records, as it is passed on: counts the records made with the
  // application write key (TLS 1.3: after the key log's mark; TLS 1.2: after our
  // ChangeCipherSpec, the Finished being record 0). `version`: SSL_version().
  void count_records(const std::uint8_t* bytes, std::size_t size, int version) noexcept;
  // Records made with the application write key so far: the kernel's first sequence number.
  std::uint64_t records() const noexcept { return records_; }
  // The crypto info for TLS_TX (keys, IV, sequence number), or false with the reason in `why`.
  bool make_crypto_info(SSL* ssl, KernelTlsCryptoInfo& info, std::string& why) const;

 private:
  bool server_;
  bool marked_ = false;    // TLS 1.3: the key log marked where the records start
  bool counting_ = false;  // the records passing now use the application key
  std::size_t mark_ = 0;
  std::uint64_t records_ = 0;
  std::size_t secret_size_ = 0;
  std::uint8_t secret_[EVP_MAX_MD_SIZE] = {};
};

}  // namespace weft::detail
