#include "kernel_tls.h"

#include <linux/tls.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/kdf.h>
#include <openssl/obj_mac.h>
#include <openssl/params.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string_view>

namespace weft::detail {

namespace {

constexpr std::uint8_t kChangeCipherSpec = 20;
constexpr std::size_t kRecordHeader = 5;
constexpr std::size_t kTls13IvSize = 12;
constexpr std::size_t kGcmFixedIvSize = 4;  // TLS 1.2 AES-GCM: the implicit part of the nonce (salt)
constexpr std::size_t kChachaIvSize = 12;
constexpr std::size_t kRandomSize = 32;

struct KdfFree {
  void operator()(EVP_KDF_CTX* ctx) const noexcept { EVP_KDF_CTX_free(ctx); }
};

// Runs the KDF `name` with `params`; false when OpenSSL refuses.
bool derive(const char* name, OSSL_PARAM* params, std::uint8_t* out, std::size_t size) {
  EVP_KDF* kdf = EVP_KDF_fetch(nullptr, name, nullptr);
  if (kdf == nullptr) return false;
  std::unique_ptr<EVP_KDF_CTX, KdfFree> ctx(EVP_KDF_CTX_new(kdf));
  EVP_KDF_free(kdf);
  return ctx != nullptr && EVP_KDF_derive(ctx.get(), out, size, params) == 1;
}

// RFC 8446 7.1: HKDF-Expand-Label(secret, label, "", size).
bool expand_label(const EVP_MD* md, const std::uint8_t* secret, std::size_t secret_size, std::string_view label,
                  std::uint8_t* out, std::size_t size) {
  static constexpr std::string_view kPrefix = "tls13 ";
  std::uint8_t info[2 + 1 + 32 + 1];
  std::size_t n = 0;
  info[n++] = static_cast<std::uint8_t>(size >> 8);
  info[n++] = static_cast<std::uint8_t>(size);
  info[n++] = static_cast<std::uint8_t>(kPrefix.size() + label.size());
  std::memcpy(info + n, kPrefix.data(), kPrefix.size());
  n += kPrefix.size();
  std::memcpy(info + n, label.data(), label.size());
  n += label.size();
  info[n++] = 0;  // no context
  int mode = EVP_KDF_HKDF_MODE_EXPAND_ONLY;
  OSSL_PARAM params[] = {
      OSSL_PARAM_construct_int(OSSL_KDF_PARAM_MODE, &mode),
      OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, const_cast<char*>(EVP_MD_get0_name(md)), 0),
      OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, const_cast<std::uint8_t*>(secret), secret_size),
      OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, info, n),
      OSSL_PARAM_construct_end(),
  };
  return derive(OSSL_KDF_NAME_HKDF, params, out, size);
}

// RFC 5246 6.3: the key block, PRF(master_secret, "key expansion", server_random + client_random).
bool key_block(SSL* ssl, const EVP_MD* md, std::uint8_t* out, std::size_t size) {
  std::uint8_t master[SSL_MAX_MASTER_KEY_LENGTH];
  const std::size_t master_size = SSL_SESSION_get_master_key(SSL_get_session(ssl), master, sizeof master);
  static constexpr std::string_view kLabel = "key expansion";
  std::uint8_t seed[kLabel.size() + 2 * kRandomSize];
  std::memcpy(seed, kLabel.data(), kLabel.size());
  if (master_size == 0 || SSL_get_server_random(ssl, seed + kLabel.size(), kRandomSize) != kRandomSize ||
      SSL_get_client_random(ssl, seed + kLabel.size() + kRandomSize, kRandomSize) != kRandomSize) {
    return false;
  }
  OSSL_PARAM params[] = {
      OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, const_cast<char*>(EVP_MD_get0_name(md)), 0),
      OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SECRET, master, master_size),
      OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SEED, seed, sizeof seed),
      OSSL_PARAM_construct_end(),
  };
  const bool ok = derive(OSSL_KDF_NAME_TLS1_PRF, params, out, size);
  OPENSSL_cleanse(master, sizeof master);
  return ok;
}

void put_big_endian(std::uint64_t value, unsigned char (&out)[8]) noexcept {
  for (int i = 7; i >= 0; --i, value >>= 8) out[i] = static_cast<unsigned char>(value);
}

// Copies `crypto` into `info` and wipes it.
template <class Crypto>
void store(Crypto& crypto, KernelTlsCryptoInfo& info) noexcept {
  static_assert(sizeof(Crypto) <= sizeof info.bytes);
  std::memcpy(info.bytes, &crypto, sizeof crypto);
  info.size = sizeof crypto;
  OPENSSL_cleanse(&crypto, sizeof crypto);
}

// linux/tls.h's struct for AES-GCM: the 12-byte nonce is salt (4) + iv (8). TLS 1.3: the static IV
// split so (the kernel XORs the sequence number in); TLS 1.2: salt is the implicit IV, iv the first
// explicit nonce, which the kernel then counts up with the sequence number.
template <class Crypto>
void fill_gcm(Crypto& crypto, std::uint16_t version, std::uint16_t cipher, const std::uint8_t* key, const std::uint8_t* iv,
              std::uint64_t sequence) noexcept {
  crypto.info.version = version;
  crypto.info.cipher_type = cipher;
  std::memcpy(crypto.key, key, sizeof crypto.key);
  std::memcpy(crypto.salt, iv, sizeof crypto.salt);
  put_big_endian(sequence, crypto.rec_seq);
  if (version == TLS_1_3_VERSION) {
    std::memcpy(crypto.iv, iv + sizeof crypto.salt, sizeof crypto.iv);
  } else {
    std::memcpy(crypto.iv, crypto.rec_seq, sizeof crypto.iv);
  }
}

}  // namespace

KernelTlsHandoff::~KernelTlsHandoff() { OPENSSL_cleanse(secret_, sizeof secret_); }

bool KernelTlsHandoff::suits(const SSL* ssl) noexcept {
  const int version = SSL_version(ssl);
  const SSL_CIPHER* cipher = SSL_get_current_cipher(ssl);
  if ((version != TLS1_2_VERSION && version != TLS1_3_VERSION) || cipher == nullptr) return false;
  const int nid = SSL_CIPHER_get_cipher_nid(cipher);
  return nid == NID_aes_128_gcm || nid == NID_aes_256_gcm || nid == NID_chacha20_poly1305;
}

void KernelTlsHandoff::on_key_log(const char* line, std::size_t unsent) noexcept {
  // "<label> <client random, hex> <secret, hex>"
  const std::string_view text(line);
  const std::string_view label = server_ ? "SERVER_TRAFFIC_SECRET_0 " : "CLIENT_TRAFFIC_SECRET_0 ";
  if (text.substr(0, label.size()) != label) return;
  const std::string_view hex = text.substr(text.rfind(' ') + 1);
  if (hex.size() % 2 != 0 || hex.size() / 2 > sizeof secret_) return;
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (std::size_t i = 0; i < hex.size() / 2; ++i) {
    const int high = nibble(hex[2 * i]);
    const int low = nibble(hex[2 * i + 1]);
    if (high < 0 || low < 0) {
      secret_size_ = 0;
      return;
    }
    secret_[i] = static_cast<std::uint8_t>(high << 4 | low);
  }
  secret_size_ = hex.size() / 2;
  marked_ = true;
  mark_ = unsent;
}

void KernelTlsHandoff::count_records(const std::uint8_t* bytes, std::size_t size, int version) noexcept {
  std::size_t at = 0;
  if (marked_) {
    marked_ = false;
    counting_ = true;
    at = std::min(mark_, size);
  }
  while (at + kRecordHeader <= size) {
    const std::size_t length = static_cast<std::size_t>(bytes[at + 3]) << 8 | bytes[at + 4];
    if (counting_) {
      ++records_;
    } else if (bytes[at] == kChangeCipherSpec && version == TLS1_2_VERSION) {
      counting_ = true;
    }
    at += kRecordHeader + length;
  }
}

bool KernelTlsHandoff::make_crypto_info(SSL* ssl, KernelTlsCryptoInfo& info, std::string& why) const {
  if (!suits(ssl)) {
    why = "the kernel does not take this version or cipher";
    return false;
  }
  const int version = SSL_version(ssl);
  const SSL_CIPHER* cipher = SSL_get_current_cipher(ssl);
  const int nid = SSL_CIPHER_get_cipher_nid(cipher);
  const EVP_MD* md = SSL_CIPHER_get_handshake_digest(cipher);
  const std::size_t key_size = nid == NID_aes_128_gcm ? 16 : 32;
  const bool gcm = nid != NID_chacha20_poly1305;
  if (md == nullptr) {
    why = "no digest for the cipher";
    return false;
  }

  // Our write key and IV: TLS 1.3 derives them from the traffic secret; TLS 1.2 takes them from
  // the key block (client key, server key, client IV, server IV).
  std::uint8_t block[2 * 32 + 2 * kChachaIvSize];
  const std::uint8_t* key = nullptr;
  const std::uint8_t* iv = nullptr;
  std::uint16_t kernel_version = 0;
  if (version == TLS1_3_VERSION) {
    if (secret_size_ == 0 || static_cast<int>(secret_size_) != EVP_MD_get_size(md) || !(marked_ || counting_)) {
      why = "no TLS 1.3 traffic secret came through the key log (a context picked by SNI without kernel_tls?)";
      return false;
    }
    if (!expand_label(md, secret_, secret_size_, "key", block, key_size) ||
        !expand_label(md, secret_, secret_size_, "iv", block + key_size, kTls13IvSize)) {
      why = "OpenSSL could not derive the TLS 1.3 key";
      OPENSSL_cleanse(block, sizeof block);
      return false;
    }
    key = block;
    iv = block + key_size;
    kernel_version = TLS_1_3_VERSION;
  } else {
    if (!counting_) {
      why = "no ChangeCipherSpec of ours was seen";
      return false;
    }
    const std::size_t iv_size = gcm ? kGcmFixedIvSize : kChachaIvSize;
    if (!key_block(ssl, md, block, 2 * key_size + 2 * iv_size)) {
      why = "OpenSSL could not derive the TLS 1.2 key block";
      OPENSSL_cleanse(block, sizeof block);
      return false;
    }
    key = block + (server_ ? key_size : 0);
    iv = block + 2 * key_size + (server_ ? iv_size : 0);
    kernel_version = TLS_1_2_VERSION;
  }

  if (nid == NID_aes_128_gcm) {
    tls12_crypto_info_aes_gcm_128 crypto{};
    fill_gcm(crypto, kernel_version, TLS_CIPHER_AES_GCM_128, key, iv, records_);
    store(crypto, info);
  } else if (nid == NID_aes_256_gcm) {
    tls12_crypto_info_aes_gcm_256 crypto{};
    fill_gcm(crypto, kernel_version, TLS_CIPHER_AES_GCM_256, key, iv, records_);
    store(crypto, info);
  } else {
    // ChaCha20-Poly1305 (RFC 7905 and 8446 alike): nonce = iv XOR sequence number, no explicit part.
    tls12_crypto_info_chacha20_poly1305 crypto{};
    crypto.info.version = kernel_version;
    crypto.info.cipher_type = TLS_CIPHER_CHACHA20_POLY1305;
    std::memcpy(crypto.key, key, sizeof crypto.key);
    std::memcpy(crypto.iv, iv, sizeof crypto.iv);
    put_big_endian(records_, crypto.rec_seq);
    store(crypto, info);
  }
  OPENSSL_cleanse(block, sizeof block);
  return true;
}

}  // namespace weft::detail
