#include "support/tls_certs.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <stdexcept>

namespace weft::test {

namespace {

[[noreturn]] void fail(const char* what) { throw std::runtime_error(std::string("test certificates: ") + what); }

std::string bio_text(BIO* bio) {
  char* data = nullptr;
  long n = BIO_get_mem_data(bio, &data);
  std::string out(data, static_cast<std::size_t>(n));
  BIO_free(bio);
  return out;
}

std::string cert_pem(X509* x) {
  BIO* bio = BIO_new(BIO_s_mem());
  if (bio == nullptr || PEM_write_bio_X509(bio, x) != 1) fail("PEM_write_bio_X509");
  return bio_text(bio);
}

std::string key_pem(EVP_PKEY* key) {
  BIO* bio = BIO_new(BIO_s_mem());
  if (bio == nullptr || PEM_write_bio_PrivateKey(bio, key, nullptr, nullptr, 0, nullptr, nullptr) != 1) {
    fail("PEM_write_bio_PrivateKey");
  }
  return bio_text(bio);
}

X509* read_cert(const std::string& pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  X509* x = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  if (x == nullptr) fail("PEM_read_bio_X509");
  return x;
}

EVP_PKEY* read_key(const std::string& pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  EVP_PKEY* key = PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  if (key == nullptr) fail("PEM_read_bio_PrivateKey");
  return key;
}

void add_extension(X509* x, X509V3_CTX* v3, int nid, const char* value) {
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, v3, nid, value);
  if (ext == nullptr || X509_add_ext(x, ext, -1) != 1) fail("X509_add_ext");
  X509_EXTENSION_free(ext);
}

std::vector<std::string>& temp_files() {
  static std::vector<std::string> files;
  return files;
}

}  // namespace

TestCert make_certificate(const std::string& common_name, const std::string& san, long not_before_s, long not_after_s,
                          const TestCert* issuer, bool is_ca) {
  static std::atomic<long> serial{1000};
  EVP_PKEY* key = EVP_EC_gen("P-256");
  if (key == nullptr) fail("EVP_EC_gen");
  X509* x = X509_new();
  X509_set_version(x, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(x), serial.fetch_add(1));
  X509_gmtime_adj(X509_getm_notBefore(x), not_before_s);
  X509_gmtime_adj(X509_getm_notAfter(x), not_after_s);
  X509_set_pubkey(x, key);
  X509_NAME* name = X509_get_subject_name(x);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(common_name.c_str()), -1,
                             -1, 0);
  X509* issuer_cert = issuer != nullptr ? read_cert(issuer->cert_pem) : x;
  EVP_PKEY* issuer_key = issuer != nullptr ? read_key(issuer->key_pem) : key;
  X509_set_issuer_name(x, X509_get_subject_name(issuer_cert));
  X509V3_CTX v3;
  X509V3_set_ctx_nodb(&v3);
  X509V3_set_ctx(&v3, issuer_cert, x, nullptr, nullptr, 0);
  add_extension(x, &v3, NID_basic_constraints, is_ca ? "critical,CA:TRUE" : "CA:FALSE");
  if (is_ca) add_extension(x, &v3, NID_key_usage, "critical,keyCertSign,cRLSign,digitalSignature");
  if (!san.empty()) add_extension(x, &v3, NID_subject_alt_name, san.c_str());
  if (X509_sign(x, issuer_key, EVP_sha256()) == 0) fail("X509_sign");
  TestCert out{cert_pem(x), key_pem(key)};
  if (issuer != nullptr) {
    X509_free(issuer_cert);
    EVP_PKEY_free(issuer_key);
  }
  X509_free(x);
  EVP_PKEY_free(key);
  return out;
}

const TestPki& test_pki() {
  static const TestPki pki = [] {
    constexpr long kDay = 24 * 3600;
    TestPki p;
    p.ca = make_certificate("weft test CA", "", -kDay, 30 * kDay, nullptr, true);
    p.localhost = make_certificate("localhost", "DNS:localhost,IP:127.0.0.1", -kDay, 30 * kDay, &p.ca, false);
    p.expired = make_certificate("localhost", "DNS:localhost,IP:127.0.0.1", -3 * kDay, -kDay, &p.ca, false);
    p.other_host = make_certificate("other.example", "DNS:other.example", -kDay, 30 * kDay, &p.ca, false);
    p.sni_host = make_certificate("sni.example", "DNS:sni.example", -kDay, 30 * kDay, &p.ca, false);
    p.client = make_certificate("weft-test-client", "", -kDay, 30 * kDay, &p.ca, false);
    p.self_signed = make_certificate("localhost", "DNS:localhost,IP:127.0.0.1", -kDay, 30 * kDay, nullptr, true);
    return p;
  }();
  return pki;
}

TlsContextPtr test_server_context(const TestCert& cert, std::vector<std::string> alpn) {
  return TlsContext::server()
      .certificate_chain_pem(cert.cert_pem)
      .private_key_pem(cert.key_pem)
      .application_protocols(std::move(alpn))
      .build();
}

TlsContextPtr test_client_context(std::vector<std::string> alpn) {
  return TlsContext::client().trust_pem(test_pki().ca.cert_pem).application_protocols(std::move(alpn)).build();
}

std::string write_temp_file(const std::string& contents, const std::string& suffix) {
  const char* dir = std::getenv("TMPDIR");
  std::string path = std::string(dir != nullptr && *dir != '\0' ? dir : "/tmp") + "/weft-tls-XXXXXX" + suffix;
  int fd = ::mkstemps(path.data(), static_cast<int>(suffix.size()));
  if (fd < 0) fail("mkstemps");
  const char* p = contents.data();
  std::size_t left = contents.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n <= 0) {
      ::close(fd);
      fail("write");
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  ::close(fd);
  static std::mutex mutex;
  std::lock_guard lock(mutex);
  if (temp_files().empty()) {
    std::atexit([] {
      for (const std::string& f : temp_files()) std::remove(f.c_str());
    });
  }
  temp_files().push_back(path);
  return path;
}

}  // namespace weft::test
