#pragma once
// Certificates for the TLS tests, made in-process with OpenSSL (EC P-256, SHA-256) the first time
// they are asked for: a test CA, and certificates it signs for localhost/127.0.0.1 (valid and
// expired), for another host, and for a client; plus a self-signed one. Nothing is read from disk.
//
// Thread-safe.

#include <string>
#include <vector>

#include "weft/codec/tls/tls_context.h"

namespace weft::test {

// A certificate and its private key, PEM.
struct TestCert {
  std::string cert_pem;
  std::string key_pem;
};

struct TestPki {
  TestCert ca;           // the test CA (self-signed, CA:TRUE)
  TestCert localhost;    // CA-signed; DNS:localhost, IP:127.0.0.1; valid now
  TestCert expired;      // CA-signed; DNS:localhost, IP:127.0.0.1; expired yesterday
  TestCert other_host;   // CA-signed; DNS:other.example only
  TestCert sni_host;     // CA-signed; DNS:sni.example only
  TestCert client;       // CA-signed; CN=weft-test-client (for mutual TLS)
  TestCert self_signed;  // self-signed; DNS:localhost, IP:127.0.0.1 (trusted by nothing)
};

// The process's test PKI (made once).
const TestPki& test_pki();

// A new certificate for `common_name` with subjectAltName `san` ("DNS:a,IP:127.0.0.1"; may be
// empty), valid from now + not_before_s to now + not_after_s seconds, signed by `issuer` (null:
// self-signed).
TestCert make_certificate(const std::string& common_name, const std::string& san, long not_before_s, long not_after_s,
                          const TestCert* issuer, bool is_ca);

// A server context presenting `cert`, with `alpn` (may be empty).
TlsContextPtr test_server_context(const TestCert& cert, std::vector<std::string> alpn = {});
// A client context that trusts the test CA, with `alpn` (may be empty).
TlsContextPtr test_client_context(std::vector<std::string> alpn = {});

// Writes `contents` into a new file under the temporary directory; returns its path. The file is
// removed when the process exits normally.
std::string write_temp_file(const std::string& contents, const std::string& suffix);

}  // namespace weft::test
