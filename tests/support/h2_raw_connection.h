#pragma once
// A raw HTTP/2 client connection for tests that play the client frame by frame: TCP (h2c) or TLS
// (h2 by ALPN). What the server answers is fed to a ServerFrames. Every wait is bounded.
//
// Not thread-safe: one thread uses it.

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "support/blocking_client.h"
#include "support/h2_frames.h"
#include "support/tls_client_socket.h"

namespace weft::test {

// A raw connection to the server: TCP (h2c) or TLS (h2 by ALPN).
class RawH2Connection {
 public:
  // receive_buffer: the socket's SO_RCVBUF, set before connect (0 keeps the default).
  RawH2Connection(std::uint16_t port, bool tls, int receive_buffer = 0) {
    if (tls) {
      tls_ = std::make_unique<TlsClientSocket>(port, std::vector<std::string>{"h2"}, 10000ms, receive_buffer);
      if (tls_->is_open() && tls_->alpn_selected() != "h2") ADD_FAILURE() << "ALPN chose " << tls_->alpn_selected();
    } else {
      BlockingClient::Options options;
      options.receive_buffer = receive_buffer;
      tcp_ = std::make_unique<BlockingClient>(port, options);
    }
  }
  bool is_open() const { return tls_ ? tls_->is_open() : tcp_->is_open(); }
  bool send(std::string_view bytes) { return tls_ ? tls_->send_all(bytes) : tcp_->send_all(bytes, 10000ms); }
  // Reads into `frames` until done(frames), EOF or 10 s without a byte. True when done() held.
  template <class Done>
  bool read_until(ServerFrames& frames, Done done) {
    while (!done(frames)) {
      StreamEnd end = StreamEnd::timeout;
      const std::string in = tls_ ? tls_->recv_some(64 * 1024, &end) : tcp_->recv_some(64 * 1024, 10000ms, &end);
      if (in.empty()) {
        eof_ = end == StreamEnd::eof || end == StreamEnd::reset;
        return done(frames);
      }
      frames.feed(in);
    }
    return true;
  }
  bool eof() const { return eof_; }
  // The client's half-close: FIN, or close_notify over TLS; reading goes on.
  void shutdown_write() {
    if (tls_) {
      tls_->send_close_notify();
    } else {
      tcp_->shutdown_write();
    }
  }
  // The client vanishes: its socket closes with a RST, no close_notify.
  void reset() {
    if (tls_) {
      tls_->reset();
    } else {
      tcp_->reset();
    }
  }

 private:
  std::unique_ptr<TlsClientSocket> tls_;
  std::unique_ptr<BlockingClient> tcp_;
  bool eof_ = false;
};

}  // namespace weft::test
