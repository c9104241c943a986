// The system's trusted certificates are read once per process: every client context that trusts
// them alone shares one store (reading the bundle cost each HttpClient ~30 ms of CPU), and a
// context with anchors of its own keeps them out of that shared store.

#include <gtest/gtest.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <unistd.h>

#include "support/tls_certs.h"
#include "weft/codec/tls/tls_context.h"

namespace weft {
namespace {

X509_STORE* trust_store_of(const TlsContextPtr& context) { return SSL_CTX_get_cert_store(context->native_handle()); }

int trusted_count(X509_STORE* store) { return sk_X509_OBJECT_num(X509_STORE_get0_objects(store)); }

TEST(SystemTrust, ClientContextsTrustingTheSystemShareOneStore) {
  TlsContextPtr a = TlsContext::client().build();  // a client verifies against the system by default
  TlsContextPtr b = TlsContext::client().trust_system_default().application_protocols({"h2"}).build();
  EXPECT_EQ(trust_store_of(a), trust_store_of(b));
  if (::access(X509_get_default_cert_file(), R_OK) == 0) {
    EXPECT_GT(trusted_count(trust_store_of(a)), 0) << "the bundle " << X509_get_default_cert_file() << " was not read";
  }
}

TEST(SystemTrust, AnchorsOfItsOwnStayOutOfTheSharedStore) {
  TlsContextPtr shared = TlsContext::client().build();
  const int before = trusted_count(trust_store_of(shared));
  TlsContextPtr both = TlsContext::client().trust_pem(test::test_pki().ca.cert_pem).trust_system_default().build();
  TlsContextPtr own = TlsContext::client().trust_pem(test::test_pki().ca.cert_pem).build();
  EXPECT_NE(trust_store_of(both), trust_store_of(shared));
  EXPECT_NE(trust_store_of(own), trust_store_of(shared));
  EXPECT_EQ(trusted_count(trust_store_of(shared)), before);
  EXPECT_EQ(trusted_count(trust_store_of(own)), 1);  // the test CA alone: the system's are not trusted
  EXPECT_GE(trusted_count(trust_store_of(both)), before + 1);
}

}  // namespace
}  // namespace weft
