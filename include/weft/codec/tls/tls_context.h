#pragma once
/// @file
/// TlsContext: the settings TLS connections share -- certificates, trust, verification, ALPN,
/// versions, ciphers, session caching -- built once (TlsContext::server() or TlsContext::client())
/// and shared by every TlsHandler that uses it, on any number of loops.
///
///   auto server = weft::TlsContext::server()
///                     .certificate_chain_file("cert.pem")
///                     .private_key_file("key.pem")
///                     .application_protocols({"http/1.1"})
///                     .build();
///   auto client = weft::TlsContext::client().trust_file("ca.pem").build();  // or the system's CAs
///
/// Defaults: TLS 1.2 at least, TLS 1.3 preferred; renegotiation and compression refused; OpenSSL's
/// default cipher lists with the server's preference. A client verifies the server's certificate
/// (against the system's CAs unless trust is given) and, in TlsHandler, its host name. A server
/// asks no client certificate unless verify() says so, keeps a session cache and issues session
/// tickets; a client keeps the sessions its servers give it and offers them again (resumption).
///
/// Thread-safe once built: a TlsContext is immutable (its client session cache is locked, and
/// touched only at handshakes). The builder is not thread-safe.

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "weft/core/clock.h"

struct ssl_ctx_st;      // OpenSSL's SSL_CTX
struct ssl_session_st;  // OpenSSL's SSL_SESSION

namespace weft {

class TlsContext;
class TlsContextBuilder;

/// Shared, immutable TLS settings (see the file's description).
using TlsContextPtr = std::shared_ptr<const TlsContext>;

/// TLS protocol versions weft allows (older ones are refused).
enum class TlsVersion {
  tls1_2,  ///< TLS 1.2 (RFC 5246)
  tls1_3,  ///< TLS 1.3 (RFC 8446)
};

/// Whether a peer's certificate is asked for and checked.
enum class TlsVerify {
  none,      ///< not asked for (server) or not checked (client: insecure, for tests and tools)
  optional,  ///< server: asked for and checked when sent; a client without one is accepted
  required,  ///< checked, and a peer without one is refused (the client's default)
};

/// Picks the context for a host name a client sent (SNI); null keeps the default context.
/// Runs on the loop thread of the connection, during its handshake: make it fast and thread-safe.
using TlsServerNameResolver = std::function<TlsContextPtr(std::string_view host_name)>;

/// Shared TLS settings; see the file's description. Thread-safe.
class TlsContext {
 public:
  /// Thread-safe. A builder for a server's context.
  static TlsContextBuilder server();
  /// Thread-safe. A builder for a client's context.
  static TlsContextBuilder client();

  /// Frees the SSL_CTX and the kept client sessions.
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  /// Thread-safe. Whether handlers on this context accept (server) or connect (client).
  bool is_server() const noexcept { return server_; }
  /// Thread-safe. The ALPN protocols, in order of preference (empty: no ALPN).
  const std::vector<std::string>& application_protocols() const noexcept { return protocols_; }
  /// Thread-safe. How the peer's certificate is checked.
  TlsVerify verify() const noexcept { return verify_; }
  /// Thread-safe. Whether a client offers the sessions it was given again (resumption).
  bool resumes_sessions() const noexcept { return resume_sessions_; }
  /// Thread-safe. The context serving `host_name` (SNI): an exact match of the server_name() map
  /// (case-insensitive), then a `*.` wildcard entry for its parent domain, then the resolver; null
  /// when none applies (the handshake goes on with this context).
  TlsContextPtr context_for_server_name(std::string_view host_name) const;
  /// Thread-safe. OpenSSL's SSL_CTX, for settings weft does not offer (change it only before the
  /// first handshake).
  ssl_ctx_st* native_handle() const noexcept { return ctx_; }
  /// Thread-safe. Client sessions kept for resumption.
  std::size_t cached_client_sessions() const;
  /// Thread-safe. Whether handlers on this context hand the keys of what they send to the kernel
  /// after the handshake, where the kernel offers it (TlsContextBuilder::kernel_tls).
  bool kernel_tls() const noexcept { return kernel_tls_; }

 private:
  friend class TlsContextBuilder;
  friend class TlsHandler;
  friend struct TlsHandlerAccess;
  explicit TlsContext(bool server) noexcept : server_(server) {}

  // Client session cache, keyed by the peer (host name or address, and port): a few sessions per
  // peer, each handed to one connection only (take_session). Takes the reference it is given.
  // Thread-safe.
  void store_session(const std::string& key, ssl_session_st* session) const;
  // The newest resumable session kept for `key`, removed from the cache (the caller owns it), or null.
  ssl_session_st* take_session(const std::string& key) const;

  ssl_ctx_st* ctx_ = nullptr;
  bool server_;
  bool resume_sessions_ = true;
  bool kernel_tls_ = false;
  TlsVerify verify_ = TlsVerify::none;
  std::vector<std::string> protocols_;
  std::unordered_map<std::string, TlsContextPtr> server_names_;  // lower-case host -> context
  TlsServerNameResolver resolver_;
  mutable std::mutex sessions_mutex_;
  mutable std::unordered_map<std::string, std::vector<ssl_session_st*>> sessions_;  // newest last
  mutable std::size_t session_count_ = 0;
};

/// Builds a TlsContext (TlsContext::server() or TlsContext::client()). Methods marked "Server only"
/// or "Client only" make build() throw std::invalid_argument on the other side. Not thread-safe.
class TlsContextBuilder {
 public:
  /// A builder for a server (`server` true) or a client context; see TlsContext::server()/client().
  explicit TlsContextBuilder(bool server) : server_(server) {}

  /// The certificate chain (leaf first, then intermediates) from a PEM file. Required for a server;
  /// a client sends it when the server asks (mutual TLS).
  TlsContextBuilder& certificate_chain_file(std::string path);
  /// The certificate chain from PEM text (leaf first).
  TlsContextBuilder& certificate_chain_pem(std::string pem);
  /// The private key of the chain's leaf from a PEM file (unencrypted).
  TlsContextBuilder& private_key_file(std::string path);
  /// The private key from PEM text (unencrypted).
  TlsContextBuilder& private_key_pem(std::string pem);
  /// Trusts the CA certificates in a PEM file (may be called again: all are trusted).
  TlsContextBuilder& trust_file(std::string path);
  /// Trusts the CA certificates in PEM text.
  TlsContextBuilder& trust_pem(std::string pem);
  /// Trusts the system's CA certificates (a client's default when no other trust is given).
  TlsContextBuilder& trust_system_default();
  /// How the peer's certificate is checked. Default: required for a client, none for a server.
  TlsContextBuilder& verify(TlsVerify mode);
  /// The ALPN protocols in order of preference (e.g. {"h2", "http/1.1"}). A server picks the first
  /// of its own that the client offers, and refuses a client that offers only others (RFC 7301's
  /// no_application_protocol alert); a client that offers none gets no protocol.
  TlsContextBuilder& application_protocols(std::vector<std::string> protocols);
  /// The oldest version allowed (default TLS 1.2).
  TlsContextBuilder& min_version(TlsVersion version);
  /// The newest version allowed (default TLS 1.3).
  TlsContextBuilder& max_version(TlsVersion version);
  /// TLS 1.2 cipher list in OpenSSL's syntax (default: OpenSSL's).
  TlsContextBuilder& cipher_list(std::string ciphers);
  /// TLS 1.3 cipher suites in OpenSSL's syntax (default: OpenSSL's).
  TlsContextBuilder& cipher_suites(std::string suites);
  /// Server only. Sessions kept for resumption by session id (default 20480; 0 turns the cache off).
  TlsContextBuilder& session_cache_size(std::size_t sessions);
  /// How long a session may be resumed (default 300 s).
  TlsContextBuilder& session_timeout(Duration timeout);
  /// Server: issue session tickets; client: accept them (default true).
  TlsContextBuilder& session_tickets(bool on);
  /// Client only. Offer the session a server gave on an earlier connection (default true).
  TlsContextBuilder& session_resumption(bool on);
  /// Server only. Serves `host_name` (SNI; case-insensitive; `*.example.com` matches one label
  /// under example.com) with `context`, a server context of its own certificate and settings.
  TlsContextBuilder& server_name(std::string host_name, TlsContextPtr context);
  /// Server only. Asked for host names the server_name() map does not hold.
  TlsContextBuilder& server_name_resolver(TlsServerNameResolver resolver);
  /// Whether a connection gives OpenSSL's record buffers (about 34 KiB) back while it has nothing
  /// to read or write (default true, as nginx and Netty do): less memory per idle connection, one
  /// allocation and free per read and write batch. False keeps them for the connection's life.
  TlsContextBuilder& release_idle_buffers(bool on);
  /// kTLS, sending side (default false): after the handshake, a connection on a socket gives the
  /// keys of what it sends to the kernel (Linux's `tls` ULP), which then makes the records itself --
  /// writes go to the socket as plaintext, with no copy into a record buffer in user space; what
  /// arrives is still decrypted by OpenSSL. Only where the kernel offers it (detected once per
  /// process, with one log line at info level either way) and for AES-128-GCM, AES-256-GCM and
  /// ChaCha20-Poly1305 on TLS 1.2 and 1.3; other connections make their records in user space as
  /// without it. Under kTLS a peer's request for a key update ends the connection (TlsError). Set
  /// it on the contexts that SNI picks as well. See docs/tls.md.
  TlsContextBuilder& kernel_tls(bool on);

  /// The context. Throws TlsError with OpenSSL's reason when OpenSSL refuses a setting (a PEM
  /// that does not parse, a key that does not match the certificate, an unknown cipher), and
  /// std::invalid_argument for a missing or misplaced one (a server without a certificate, a
  /// key without a certificate, a server-only setting on a client).
  TlsContextPtr build() const;

 private:
  struct Source {
    std::string text;
    bool is_file = false;
  };
  bool server_;
  Source chain_;
  Source key_;
  std::vector<Source> trust_;
  bool trust_system_ = false;
  bool verify_set_ = false;
  TlsVerify verify_ = TlsVerify::none;
  std::vector<std::string> protocols_;
  TlsVersion min_version_ = TlsVersion::tls1_2;
  TlsVersion max_version_ = TlsVersion::tls1_3;
  std::string cipher_list_;
  std::string cipher_suites_;
  std::size_t session_cache_size_ = 20480;
  bool session_cache_set_ = false;
  Duration session_timeout_ = std::chrono::seconds(300);
  bool tickets_ = true;
  bool resumption_ = true;
  bool resumption_set_ = false;
  std::map<std::string, TlsContextPtr> server_names_;
  TlsServerNameResolver resolver_;
  bool release_buffers_ = true;
  bool kernel_tls_ = false;
};

}  // namespace weft
