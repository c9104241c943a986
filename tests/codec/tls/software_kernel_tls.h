#pragma once
// A "software kernel" for the kTLS tests: a KernelTlsPort that takes the exact crypto info a
// TlsHandler would give setsockopt(SOL_TLS, TLS_TX) and does what Linux's kTLS does with it --
// makes TLS records of the plaintext the handler passes on (AES-GCM or ChaCha20-Poly1305; TLS 1.3:
// nonce = IV XOR sequence number, inner content type, the header as additional data; TLS 1.2:
// AES-GCM's explicit nonce counted up from the given IV, additional data = sequence number, type,
// version and length). A peer TlsHandler that decrypts them proves the keys, the IVs and the
// sequence numbers. Installed for its lifetime. Loop thread only (the test's thread).

#include <gtest/gtest.h>
#include <linux/tls.h>
#include <openssl/evp.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "weft/channel/embedded_channel.h"
#include "weft/codec/tls/kernel_tls_port.h"

namespace weft::test {

class SoftwareKernelTls final : public detail::KernelTlsPort {
 public:
  // The sending state the handler gave for one channel, as the kernel keeps it.
  struct Tx {
    std::uint16_t version = 0;      // TLS_1_2_VERSION or TLS_1_3_VERSION
    std::uint16_t cipher_type = 0;  // TLS_CIPHER_*
    std::vector<std::uint8_t> key;
    std::uint8_t nonce[12] = {};    // AES-GCM: salt + iv; ChaCha20: iv
    std::uint64_t first_sequence = 0;
    std::uint64_t sequence = 0;
    std::uint64_t explicit_nonce = 0;  // TLS 1.2 AES-GCM
  };

  SoftwareKernelTls() : previous_(detail::replace_kernel_tls_port(this)) {}
  ~SoftwareKernelTls() override { detail::replace_kernel_tls_port(previous_); }

  int attach_ulp(Channel&) noexcept override {
    ++attach_calls;
    return attach_error;
  }

  int start_tx(Channel& channel, const detail::KernelTlsCryptoInfo& info) noexcept override {
    ++start_calls;
    if (start_error != 0) return start_error;
    auto& embedded = dynamic_cast<EmbeddedChannel&>(channel);
    Socket& socket = sockets_[&channel];
    take_outbound(embedded, socket);  // what was flushed before is the handler's own ciphertext
    tls_crypto_info header;
    std::memcpy(&header, info.bytes, sizeof header);
    Tx tx;
    tx.version = header.version;
    tx.cipher_type = header.cipher_type;
    if (header.cipher_type == TLS_CIPHER_AES_GCM_128) {
      if (!load_gcm<tls12_crypto_info_aes_gcm_128>(info, tx)) return EINVAL;
    } else if (header.cipher_type == TLS_CIPHER_AES_GCM_256) {
      if (!load_gcm<tls12_crypto_info_aes_gcm_256>(info, tx)) return EINVAL;
    } else if (header.cipher_type == TLS_CIPHER_CHACHA20_POLY1305) {
      tls12_crypto_info_chacha20_poly1305 c;
      if (info.size != sizeof c) return EINVAL;
      std::memcpy(&c, info.bytes, sizeof c);
      tx.key.assign(c.key, c.key + sizeof c.key);
      std::memcpy(tx.nonce, c.iv, sizeof c.iv);
      tx.first_sequence = big_endian(c.rec_seq);
    } else {
      return EINVAL;
    }
    tx.first_sequence += sequence_skew;
    tx.sequence = tx.first_sequence;
    socket.tx = std::make_unique<Tx>(tx);
    return 0;
  }

  int send_record(Channel& channel, std::uint8_t type, const std::uint8_t* data, std::size_t size) noexcept override {
    Socket& socket = sockets_[&channel];
    if (!socket.tx) return EINVAL;
    take_outbound(dynamic_cast<EmbeddedChannel&>(channel), socket);
    seal(socket, type, data, size);
    ++control_records;
    return 0;
  }

  // The bytes `channel` put on the wire since the last call: its own ciphertext before the handoff,
  // the records made of its plaintext after it.
  std::string take_wire(EmbeddedChannel& channel) {
    Socket& socket = sockets_[&channel];
    take_outbound(channel, socket);
    return std::exchange(socket.wire, {});
  }
  // The state the handler handed over for `channel` (null: none).
  const Tx* tx(Channel& channel) {
    auto it = sockets_.find(&channel);
    return it == sockets_.end() ? nullptr : it->second.tx.get();
  }

  int attach_error = 0;          // what attach_ulp answers
  int start_error = 0;           // what start_tx answers
  std::uint64_t sequence_skew = 0;  // added to the sequence number given (to see the peer refuse it)
  int attach_calls = 0;
  int start_calls = 0;
  int control_records = 0;
  std::uint64_t sealed_records = 0;

 private:
  struct Socket {
    std::unique_ptr<Tx> tx;
    std::string wire;
  };

  template <class Crypto>
  static bool load_gcm(const detail::KernelTlsCryptoInfo& info, Tx& tx) {
    Crypto c;
    if (info.size != sizeof c) return false;
    std::memcpy(&c, info.bytes, sizeof c);
    tx.key.assign(c.key, c.key + sizeof c.key);
    std::memcpy(tx.nonce, c.salt, sizeof c.salt);
    std::memcpy(tx.nonce + sizeof c.salt, c.iv, sizeof c.iv);
    tx.first_sequence = big_endian(c.rec_seq);
    tx.explicit_nonce = big_endian(c.iv);
    return true;
  }

  static std::uint64_t big_endian(const unsigned char (&bytes)[8]) {
    std::uint64_t v = 0;
    for (unsigned char b : bytes) v = v << 8 | b;
    return v;
  }
  static void put_big_endian(std::uint64_t v, std::uint8_t* out) {
    for (int i = 7; i >= 0; --i, v >>= 8) out[i] = static_cast<std::uint8_t>(v);
  }

  void take_outbound(EmbeddedChannel& channel, Socket& socket) {
    while (auto buf = channel.read_outbound<ByteBuf>()) {
      const std::string_view bytes = buf->view();
      if (!socket.tx) {
        socket.wire += bytes;
        continue;
      }
      for (std::size_t at = 0; at < bytes.size(); at += 16384) {
        const std::string_view piece = bytes.substr(at, 16384);
        seal(socket, 23, reinterpret_cast<const std::uint8_t*>(piece.data()), piece.size());
      }
    }
  }

  // One record of `type` holding `data`, appended to the socket's wire.
  void seal(Socket& socket, std::uint8_t type, const std::uint8_t* data, std::size_t size) {
    Tx& tx = *socket.tx;
    const bool tls13 = tx.version == TLS_1_3_VERSION;
    const bool gcm = tx.cipher_type != TLS_CIPHER_CHACHA20_POLY1305;
    std::vector<std::uint8_t> plaintext(data, data + size);
    if (tls13) plaintext.push_back(type);  // TLSInnerPlaintext

    std::uint8_t nonce[12];
    std::memcpy(nonce, tx.nonce, sizeof nonce);
    std::uint8_t explicit_nonce[8] = {};
    if (!tls13 && gcm) {
      put_big_endian(tx.explicit_nonce++, explicit_nonce);
      std::memcpy(nonce + 4, explicit_nonce, sizeof explicit_nonce);
    } else {
      std::uint8_t sequence[8];
      put_big_endian(tx.sequence, sequence);
      for (int i = 0; i < 8; ++i) nonce[4 + i] ^= sequence[i];
    }

    const std::size_t explicit_size = (!tls13 && gcm) ? 8 : 0;
    const std::size_t body = explicit_size + plaintext.size() + 16;
    std::uint8_t header[5] = {tls13 ? std::uint8_t{23} : type, 3, 3, static_cast<std::uint8_t>(body >> 8),
                              static_cast<std::uint8_t>(body)};
    std::uint8_t aad12[13];
    put_big_endian(tx.sequence, aad12);
    aad12[8] = type;
    aad12[9] = 3;
    aad12[10] = 3;
    aad12[11] = static_cast<std::uint8_t>(size >> 8);
    aad12[12] = static_cast<std::uint8_t>(size);
    const std::uint8_t* aad = tls13 ? header : aad12;
    const int aad_size = tls13 ? 5 : 13;

    const EVP_CIPHER* cipher = tx.cipher_type == TLS_CIPHER_AES_GCM_128   ? EVP_aes_128_gcm()
                               : tx.cipher_type == TLS_CIPHER_AES_GCM_256 ? EVP_aes_256_gcm()
                                                                          : EVP_chacha20_poly1305();
    std::unique_ptr<EVP_CIPHER_CTX, decltype(&EVP_CIPHER_CTX_free)> ctx(EVP_CIPHER_CTX_new(), EVP_CIPHER_CTX_free);
    std::vector<std::uint8_t> sealed(plaintext.size() + 16);
    int n = 0;
    bool ok = ctx && EVP_EncryptInit_ex(ctx.get(), cipher, nullptr, tx.key.data(), nonce) == 1 &&
              EVP_EncryptUpdate(ctx.get(), nullptr, &n, aad, aad_size) == 1 &&
              EVP_EncryptUpdate(ctx.get(), sealed.data(), &n, plaintext.data(), static_cast<int>(plaintext.size())) == 1 &&
              EVP_EncryptFinal_ex(ctx.get(), sealed.data() + n, &n) == 1 &&
              EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_AEAD_GET_TAG, 16, sealed.data() + plaintext.size()) == 1;
    if (!ok) {
      ADD_FAILURE() << "the software kernel could not encrypt";
      return;
    }
    socket.wire.append(reinterpret_cast<const char*>(header), sizeof header);
    socket.wire.append(reinterpret_cast<const char*>(explicit_nonce), explicit_size);
    socket.wire.append(reinterpret_cast<const char*>(sealed.data()), sealed.size());
    ++tx.sequence;
    ++sealed_records;
  }

  detail::KernelTlsPort* previous_;
  std::map<const Channel*, Socket> sockets_;
};

}  // namespace weft::test
