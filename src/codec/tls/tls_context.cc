#include "weft/codec/tls/tls_context.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <utility>

#include "openssl_errors.h"
#include "tls_callbacks.h"
#include "weft/codec/tls/tls_error.h"

namespace weft {

namespace {

constexpr std::size_t kMaxClientSessions = 4096;
// Servers give several tickets per handshake (OpenSSL: 2); keeping a few lets as many connections
// to one peer resume at once.
constexpr std::size_t kMaxSessionsPerPeer = 4;

struct BioFree {
  void operator()(BIO* b) const noexcept { BIO_free(b); }
};
struct X509Free {
  void operator()(X509* x) const noexcept { X509_free(x); }
};
struct PkeyFree {
  void operator()(EVP_PKEY* k) const noexcept { EVP_PKEY_free(k); }
};
using BioPtr = std::unique_ptr<BIO, BioFree>;
using X509Ptr = std::unique_ptr<X509, X509Free>;
using PkeyPtr = std::unique_ptr<EVP_PKEY, PkeyFree>;

[[noreturn]] void fail(const std::string& what) { throw TlsError(what, detail::take_openssl_errors()); }

// The system's trusted certificates, read once per process and shared by every context that trusts
// them alone: reading them parses the whole bundle (~150 certificates, ~30 ms of CPU), which each
// client context paid before. Null when they cannot be read (the error is left in OpenSSL's queue).
X509_STORE* system_trust_store() {
  static X509_STORE* const store = [] {
    X509_STORE* s = X509_STORE_new();
    if (s != nullptr && X509_STORE_set_default_paths(s) != 1) {
      X509_STORE_free(s);
      s = nullptr;
    }
    return s;
  }();
  return store;
}

BioPtr pem_bio(const std::string& pem) {
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  if (!bio) fail("cannot read PEM text");
  return bio;
}

int version_number(TlsVersion v) { return v == TlsVersion::tls1_2 ? TLS1_2_VERSION : TLS1_3_VERSION; }

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

void load_chain(SSL_CTX* ctx, const std::string& text, bool is_file) {
  if (is_file) {
    if (SSL_CTX_use_certificate_chain_file(ctx, text.c_str()) != 1) fail("certificate chain file '" + text + "'");
    return;
  }
  BioPtr bio = pem_bio(text);
  X509Ptr leaf(PEM_read_bio_X509_AUX(bio.get(), nullptr, nullptr, nullptr));
  if (!leaf) fail("certificate chain PEM: no certificate");
  if (SSL_CTX_use_certificate(ctx, leaf.get()) != 1) fail("certificate chain PEM: the certificate");
  SSL_CTX_clear_chain_certs(ctx);
  while (X509* next = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
    if (SSL_CTX_add0_chain_cert(ctx, next) != 1) {
      X509_free(next);
      fail("certificate chain PEM: an intermediate certificate");
    }
  }
  ERR_clear_error();  // the end of the PEM text is queued as "no start line"
}

void load_key(SSL_CTX* ctx, const std::string& text, bool is_file) {
  if (is_file) {
    if (SSL_CTX_use_PrivateKey_file(ctx, text.c_str(), SSL_FILETYPE_PEM) != 1) fail("private key file '" + text + "'");
  } else {
    BioPtr bio = pem_bio(text);
    PkeyPtr key(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
    if (!key) fail("private key PEM");
    if (SSL_CTX_use_PrivateKey(ctx, key.get()) != 1) fail("the private key does not match the certificate");
  }
  if (SSL_CTX_check_private_key(ctx) != 1) fail("the private key does not match the certificate");
}

void load_trust(SSL_CTX* ctx, const std::string& text, bool is_file) {
  if (is_file) {
    if (SSL_CTX_load_verify_locations(ctx, text.c_str(), nullptr) != 1) fail("trust file '" + text + "'");
    return;
  }
  BioPtr bio = pem_bio(text);
  X509_STORE* store = SSL_CTX_get_cert_store(ctx);
  int added = 0;
  while (X509Ptr cert{PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)}) {
    if (X509_STORE_add_cert(store, cert.get()) != 1) fail("trust PEM: a certificate");
    ++added;
  }
  ERR_clear_error();
  if (added == 0) throw TlsError("trust PEM: no certificate", "no start line");
}

}  // namespace

// ---- TlsContext -------------------------------------------------------------------------------

TlsContextBuilder TlsContext::server() { return TlsContextBuilder(true); }
TlsContextBuilder TlsContext::client() { return TlsContextBuilder(false); }

TlsContext::~TlsContext() {
  for (auto& [key, sessions] : sessions_) {
    for (SSL_SESSION* session : sessions) SSL_SESSION_free(session);
  }
  SSL_CTX_free(ctx_);
}

TlsContextPtr TlsContext::context_for_server_name(std::string_view host_name) const {
  if (host_name.empty()) return nullptr;
  if (!server_names_.empty()) {
    std::string name = lower(host_name);
    if (auto it = server_names_.find(name); it != server_names_.end()) return it->second;
    if (auto dot = name.find('.'); dot != std::string::npos && dot + 1 < name.size()) {
      if (auto it = server_names_.find("*" + name.substr(dot)); it != server_names_.end()) return it->second;
    }
  }
  return resolver_ ? resolver_(host_name) : nullptr;
}

std::size_t TlsContext::cached_client_sessions() const {
  std::lock_guard lock(sessions_mutex_);
  return session_count_;
}

void TlsContext::store_session(const std::string& key, SSL_SESSION* session) const {
  std::lock_guard lock(sessions_mutex_);
  std::vector<SSL_SESSION*>& kept = sessions_[key];
  if (kept.size() == kMaxSessionsPerPeer) {  // the oldest goes
    SSL_SESSION_free(kept.front());
    kept.erase(kept.begin());
    --session_count_;
  }
  kept.push_back(session);
  ++session_count_;
  if (session_count_ > kMaxClientSessions) {  // bounded: drop another peer's sessions (any)
    auto victim = sessions_.begin();
    if (victim->first == key) ++victim;
    for (SSL_SESSION* dropped : victim->second) SSL_SESSION_free(dropped);
    session_count_ -= victim->second.size();
    sessions_.erase(victim);
  }
}

SSL_SESSION* TlsContext::take_session(const std::string& key) const {
  std::lock_guard lock(sessions_mutex_);
  auto it = sessions_.find(key);
  if (it == sessions_.end()) return nullptr;
  SSL_SESSION* taken = nullptr;
  std::vector<SSL_SESSION*>& kept = it->second;
  while (taken == nullptr && !kept.empty()) {
    SSL_SESSION* newest = kept.back();
    kept.pop_back();
    --session_count_;
    if (SSL_SESSION_is_resumable(newest) == 1) {
      taken = newest;
    } else {
      SSL_SESSION_free(newest);
    }
  }
  if (kept.empty()) sessions_.erase(it);
  return taken;
}

// ---- TlsContextBuilder ------------------------------------------------------------------------

TlsContextBuilder& TlsContextBuilder::certificate_chain_file(std::string path) {
  chain_ = {std::move(path), true};
  return *this;
}
TlsContextBuilder& TlsContextBuilder::certificate_chain_pem(std::string pem) {
  chain_ = {std::move(pem), false};
  return *this;
}
TlsContextBuilder& TlsContextBuilder::private_key_file(std::string path) {
  key_ = {std::move(path), true};
  return *this;
}
TlsContextBuilder& TlsContextBuilder::private_key_pem(std::string pem) {
  key_ = {std::move(pem), false};
  return *this;
}
TlsContextBuilder& TlsContextBuilder::trust_file(std::string path) {
  trust_.push_back({std::move(path), true});
  return *this;
}
TlsContextBuilder& TlsContextBuilder::trust_pem(std::string pem) {
  trust_.push_back({std::move(pem), false});
  return *this;
}
TlsContextBuilder& TlsContextBuilder::trust_system_default() {
  trust_system_ = true;
  return *this;
}
TlsContextBuilder& TlsContextBuilder::verify(TlsVerify mode) {
  verify_ = mode;
  verify_set_ = true;
  return *this;
}
TlsContextBuilder& TlsContextBuilder::application_protocols(std::vector<std::string> protocols) {
  protocols_ = std::move(protocols);
  return *this;
}
TlsContextBuilder& TlsContextBuilder::min_version(TlsVersion version) {
  min_version_ = version;
  return *this;
}
TlsContextBuilder& TlsContextBuilder::max_version(TlsVersion version) {
  max_version_ = version;
  return *this;
}
TlsContextBuilder& TlsContextBuilder::cipher_list(std::string ciphers) {
  cipher_list_ = std::move(ciphers);
  return *this;
}
TlsContextBuilder& TlsContextBuilder::cipher_suites(std::string suites) {
  cipher_suites_ = std::move(suites);
  return *this;
}
TlsContextBuilder& TlsContextBuilder::session_cache_size(std::size_t sessions) {
  session_cache_size_ = sessions;
  session_cache_set_ = true;
  return *this;
}
TlsContextBuilder& TlsContextBuilder::session_timeout(Duration timeout) {
  session_timeout_ = timeout;
  return *this;
}
TlsContextBuilder& TlsContextBuilder::session_tickets(bool on) {
  tickets_ = on;
  return *this;
}
TlsContextBuilder& TlsContextBuilder::session_resumption(bool on) {
  resumption_ = on;
  resumption_set_ = true;
  return *this;
}
TlsContextBuilder& TlsContextBuilder::server_name(std::string host_name, TlsContextPtr context) {
  server_names_[lower(host_name)] = std::move(context);
  return *this;
}
TlsContextBuilder& TlsContextBuilder::server_name_resolver(TlsServerNameResolver resolver) {
  resolver_ = std::move(resolver);
  return *this;
}
TlsContextBuilder& TlsContextBuilder::release_idle_buffers(bool on) {
  release_buffers_ = on;
  return *this;
}
TlsContextBuilder& TlsContextBuilder::kernel_tls(bool on) {
  kernel_tls_ = on;
  return *this;
}

TlsContextPtr TlsContextBuilder::build() const {
  const char* side = server_ ? "a server" : "a client";
  if (server_ && chain_.text.empty()) {
    throw std::invalid_argument("TlsContext: a server needs a certificate chain and a private key");
  }
  if (chain_.text.empty() != key_.text.empty()) {
    throw std::invalid_argument("TlsContext: a certificate chain needs its private key and the other way round");
  }
  if (!server_ && (session_cache_set_ || !server_names_.empty() || resolver_)) {
    throw std::invalid_argument("TlsContext: session_cache_size, server_name and server_name_resolver are for a server");
  }
  if (server_ && resumption_set_) {
    throw std::invalid_argument("TlsContext: session_resumption is for a client");
  }
  if (min_version_ > max_version_) throw std::invalid_argument("TlsContext: min_version is above max_version");
  for (const auto& [name, context] : server_names_) {
    if (!context || !context->is_server()) {
      throw std::invalid_argument("TlsContext: server_name '" + name + "' needs a server context");
    }
  }
  std::string alpn_wire;
  for (const std::string& p : protocols_) {
    if (p.empty() || p.size() > 255) {
      throw std::invalid_argument("TlsContext: an ALPN protocol name has 1 to 255 bytes: '" + p + "'");
    }
    alpn_wire += static_cast<char>(p.size());
    alpn_wire += p;
  }

  ERR_clear_error();
  // A TlsContext that is not yet returned owns its SSL_CTX: a throw below frees it.
  std::shared_ptr<TlsContext> context(new TlsContext(server_));
  context->ctx_ = SSL_CTX_new(server_ ? TLS_server_method() : TLS_client_method());
  SSL_CTX* ctx = context->ctx_;
  if (ctx == nullptr) fail(std::string("cannot make ") + side + " context");

  if (SSL_CTX_set_min_proto_version(ctx, version_number(min_version_)) != 1 ||
      SSL_CTX_set_max_proto_version(ctx, version_number(max_version_)) != 1) {
    fail("protocol versions");
  }
  std::uint64_t options = SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION;
  if (server_) options |= SSL_OP_CIPHER_SERVER_PREFERENCE;
  if (!tickets_) options |= SSL_OP_NO_TICKET;
  SSL_CTX_set_options(ctx, options);
  // OpenSSL may see a write's bytes move; idle connections may give their record buffers back.
  SSL_CTX_set_mode(ctx, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | (release_buffers_ ? SSL_MODE_RELEASE_BUFFERS : 0U));
  if (!cipher_list_.empty() && SSL_CTX_set_cipher_list(ctx, cipher_list_.c_str()) != 1) fail("cipher list '" + cipher_list_ + "'");
  if (!cipher_suites_.empty() && SSL_CTX_set_ciphersuites(ctx, cipher_suites_.c_str()) != 1) {
    fail("cipher suites '" + cipher_suites_ + "'");
  }

  if (!chain_.text.empty()) {
    load_chain(ctx, chain_.text, chain_.is_file);
    load_key(ctx, key_.text, key_.is_file);
  }
  for (const Source& t : trust_) load_trust(ctx, t.text, t.is_file);
  const TlsVerify verify = verify_set_ ? verify_ : (server_ ? TlsVerify::none : TlsVerify::required);
  if (trust_system_ || (!server_ && trust_.empty() && verify != TlsVerify::none)) {
    bool read = false;
    if (!trust_.empty()) {
      read = SSL_CTX_set_default_verify_paths(ctx) == 1;  // its own store: the anchors above join them
    } else if (X509_STORE* shared = system_trust_store()) {
      SSL_CTX_set1_cert_store(ctx, shared);
      read = true;
    }
    if (!read) fail("the system's trusted certificates");
  }
  int mode = SSL_VERIFY_NONE;
  if (verify != TlsVerify::none) mode = SSL_VERIFY_PEER;
  if (server_ && verify == TlsVerify::required) mode |= SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
  SSL_CTX_set_verify(ctx, mode, nullptr);
  context->verify_ = verify;

  const long timeout_s = static_cast<long>(std::chrono::duration_cast<std::chrono::seconds>(session_timeout_).count());
  SSL_CTX_set_timeout(ctx, std::max(timeout_s, 1L));
  if (server_) {
    static constexpr unsigned char kSessionIdContext[] = "weft";
    SSL_CTX_set_session_id_context(ctx, kSessionIdContext, sizeof kSessionIdContext - 1);
    if (session_cache_size_ == 0) {
      SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
    } else {
      SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_SERVER);
      SSL_CTX_sess_set_cache_size(ctx, static_cast<long>(session_cache_size_));
    }
  } else {
    context->resume_sessions_ = resumption_;
    if (resumption_) {
      // weft keeps the sessions itself, per peer (TlsContext::store_session).
      SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
      SSL_CTX_sess_set_new_cb(ctx, detail::tls_on_new_session);
    } else {
      SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
    }
  }

  context->kernel_tls_ = kernel_tls_;
  // kTLS needs the TLS 1.3 traffic secret of the direction it sends, which OpenSSL gives only to a
  // key log callback.
  if (kernel_tls_) SSL_CTX_set_keylog_callback(ctx, detail::tls_on_key_log);

  context->protocols_ = protocols_;
  if (!protocols_.empty()) {
    if (server_) {
      SSL_CTX_set_alpn_select_cb(ctx, detail::tls_on_alpn_select, context.get());
    } else if (SSL_CTX_set_alpn_protos(ctx, reinterpret_cast<const unsigned char*>(alpn_wire.data()),
                                       static_cast<unsigned>(alpn_wire.size())) != 0) {
      fail("ALPN protocols");
    }
  }
  if (server_) {
    for (const auto& [name, sub] : server_names_) context->server_names_.emplace(name, sub);
    context->resolver_ = resolver_;
    if (!server_names_.empty() || resolver_) {
      SSL_CTX_set_tlsext_servername_callback(ctx, detail::tls_on_server_name);
      SSL_CTX_set_tlsext_servername_arg(ctx, context.get());
    }
  }
  return context;
}

}  // namespace weft
