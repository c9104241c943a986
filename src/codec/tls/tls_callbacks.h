#pragma once
// OpenSSL's callbacks into weft's TLS objects (defined in tls_handler.cc).

#include <openssl/ssl.h>

namespace weft::detail {

// Client: a server gave a session (a TLS 1.3 ticket, or a TLS 1.2 session); kept per peer.
int tls_on_new_session(SSL* ssl, SSL_SESSION* session);
// Server: picks the ALPN protocol (arg: the TlsContext).
int tls_on_alpn_select(SSL* ssl, const unsigned char** out, unsigned char* out_length, const unsigned char* in,
                       unsigned int in_length, void* arg);
// Server: the client sent a host name (SNI); switches to its context (arg: the default TlsContext).
int tls_on_server_name(SSL* ssl, int* alert, void* arg);
// A key log line (contexts with kernel_tls only): gives a TLS 1.3 traffic secret to the handler's kTLS handoff.
void tls_on_key_log(const SSL* ssl, const char* line);

}  // namespace weft::detail
