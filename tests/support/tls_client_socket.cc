#include "support/tls_client_socket.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>

namespace weft::test {

namespace {

std::string openssl_error(const char* what) {
  const unsigned long e = ERR_get_error();
  char text[256] = "";
  if (e != 0) ERR_error_string_n(e, text, sizeof text);
  return std::string(what) + ": " + (e != 0 ? text : std::strerror(errno));
}

}  // namespace

TlsClientSocket::TlsClientSocket(std::uint16_t port, const std::vector<std::string>& alpn, TestDuration timeout,
                                 int receive_buffer) {
  // OpenSSL writes with write(2): a server that closed first must fail the write, not kill the test.
  static const bool sigpipe_ignored = [] { return ::signal(SIGPIPE, SIG_IGN) != SIG_ERR; }();
  (void)sigpipe_ignored;
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) {
    error_ = openssl_error("socket");
    return;
  }
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(timeout.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((timeout.count() % 1000) * 1000);
  ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  const int one = 1;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (receive_buffer > 0) ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof receive_buffer);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    error_ = openssl_error("connect");
    return;
  }
  ctx_ = SSL_CTX_new(TLS_client_method());
  if (ctx_ == nullptr) {
    error_ = openssl_error("SSL_CTX_new");
    return;
  }
  SSL_CTX_set_verify(ctx_, SSL_VERIFY_NONE, nullptr);
  std::string wire;  // ALPN's wire format: length-prefixed names
  for (const auto& name : alpn) wire += static_cast<char>(name.size()) + name;
  if (!wire.empty()) {
    SSL_CTX_set_alpn_protos(ctx_, reinterpret_cast<const unsigned char*>(wire.data()), static_cast<unsigned>(wire.size()));
  }
  SSL* ssl = SSL_new(ctx_);
  SSL_set_fd(ssl, fd_);
  SSL_set_tlsext_host_name(ssl, "localhost");
  if (SSL_connect(ssl) != 1) {
    error_ = openssl_error("SSL_connect");
    SSL_free(ssl);
    return;
  }
  ssl_ = ssl;
}

TlsClientSocket::~TlsClientSocket() {
  if (ssl_ != nullptr) SSL_free(ssl_);
  if (ctx_ != nullptr) SSL_CTX_free(ctx_);
  if (fd_ >= 0) ::close(fd_);
}

void TlsClientSocket::reset() {
  if (fd_ < 0) return;
  linger l{1, 0};
  ::setsockopt(fd_, SOL_SOCKET, SO_LINGER, &l, sizeof l);
  ::close(fd_);
  fd_ = -1;
}

std::string TlsClientSocket::alpn_selected() const {
  const unsigned char* name = nullptr;
  unsigned len = 0;
  if (ssl_ != nullptr) SSL_get0_alpn_selected(ssl_, &name, &len);
  return name != nullptr ? std::string(reinterpret_cast<const char*>(name), len) : std::string();
}

bool TlsClientSocket::send_all(std::string_view data) {
  while (!data.empty() && ssl_ != nullptr) {
    const int n = SSL_write(ssl_, data.data(), static_cast<int>(data.size()));
    if (n <= 0) {
      error_ = openssl_error("SSL_write");
      return false;
    }
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return ssl_ != nullptr;
}

std::string TlsClientSocket::recv_some(std::size_t max, StreamEnd* end) {
  std::string out(max, '\0');
  if (ssl_ == nullptr) {
    if (end != nullptr) *end = StreamEnd::error;
    return {};
  }
  const int n = SSL_read(ssl_, out.data(), static_cast<int>(max));
  if (n > 0) {
    out.resize(static_cast<std::size_t>(n));
    return out;
  }
  const int why = SSL_get_error(ssl_, n);
  const int saved_errno = errno;
  ERR_clear_error();
  if (end != nullptr) {
    if (why == SSL_ERROR_ZERO_RETURN) {
      *end = StreamEnd::eof;
    } else if (why == SSL_ERROR_WANT_READ || why == SSL_ERROR_WANT_WRITE ||
               (why == SSL_ERROR_SYSCALL && (saved_errno == EAGAIN || saved_errno == EWOULDBLOCK))) {
      *end = StreamEnd::timeout;  // SO_RCVTIMEO: the socket BIO reports it as a retry
    } else if (why == SSL_ERROR_SYSCALL && saved_errno == ECONNRESET) {
      *end = StreamEnd::reset;
    } else {
      *end = StreamEnd::eof;  // the TCP connection ended (with or without close_notify)
    }
  }
  return {};
}

void TlsClientSocket::send_close_notify() {
  if (ssl_ != nullptr) SSL_shutdown(ssl_);
}

}  // namespace weft::test
