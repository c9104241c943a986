#pragma once
// A blocking TLS client over a loopback TCP socket (OpenSSL), for tests that speak raw bytes over
// TLS as BlockingClient does over TCP: HTTP/2 frames, HTTP/1.1 requests, a close_notify. It trusts
// any certificate (it tests the server's protocol, not its identity). Every wait is bounded.
//
// Not thread-safe: one thread uses it.

#include <openssl/ssl.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "support/blocking_client.h"

namespace weft::test {

class TlsClientSocket {
 public:
  // Connects to 127.0.0.1:port and completes the handshake, offering `alpn` (may be empty). On
  // failure the socket is not open and error() says why. receive_buffer: SO_RCVBUF before connect
  // (0 keeps the default).
  TlsClientSocket(std::uint16_t port, const std::vector<std::string>& alpn, TestDuration timeout = 10000ms,
                  int receive_buffer = 0);
  TlsClientSocket(const TlsClientSocket&) = delete;
  TlsClientSocket& operator=(const TlsClientSocket&) = delete;
  ~TlsClientSocket();

  bool is_open() const noexcept { return ssl_ != nullptr; }
  const std::string& error() const noexcept { return error_; }
  // The protocol ALPN chose ("" if none).
  std::string alpn_selected() const;

  bool send_all(std::string_view data);
  // What arrives within the timeout (at most `max` bytes); empty on timeout, EOF (close_notify or
  // TCP close) or error, with *end saying which.
  std::string recv_some(std::size_t max, StreamEnd* end = nullptr);
  // Sends close_notify and keeps reading (TLS's half-close).
  void send_close_notify();
  // SO_LINGER {1, 0} then close, with no close_notify: the peer gets a RST (a client that vanished).
  void reset();

 private:
  int fd_ = -1;
  SSL_CTX* ctx_ = nullptr;
  SSL* ssl_ = nullptr;
  std::string error_;
};

}  // namespace weft::test
