// weft_tls_handshakes_total{side, result}: a full handshake, a resumed one and a failed one are each
// counted once, on the side that made them.

#include <gtest/gtest.h>

#include <string>

#include "codec/tls/test_pair.h"
#include "metrics/metrics_test_support.h"
#include "support/tls_certs.h"
#include "weft/codec/tls/tls_handler.h"
#include "weft/metrics/instrumentation.h"

namespace weft {
namespace {

using test::TlsPair;

double handshakes(const char* side, const char* result) {
  return test::metric_value(std::string("weft_tls_handshakes_total{side=\"") + side + "\",result=\"" + result + "\"}");
}

struct Counts {
  double server_full, server_resumed, server_failed, client_full, client_resumed, client_failed;
  static Counts now() {
    return {handshakes("server", "full"), handshakes("server", "resumed"), handshakes("server", "failed"),
            handshakes("client", "full"), handshakes("client", "resumed"), handshakes("client", "failed")};
  }
  bool operator==(const Counts&) const = default;
  Counts operator-(const Counts& o) const {
    return {server_full - o.server_full, server_resumed - o.server_resumed, server_failed - o.server_failed,
            client_full - o.client_full, client_resumed - o.client_resumed, client_failed - o.client_failed};
  }
};

void PrintTo(const Counts& c, std::ostream* os) {
  *os << "server " << c.server_full << "/" << c.server_resumed << "/" << c.server_failed << ", client " << c.client_full
      << "/" << c.client_resumed << "/" << c.client_failed << " (full/resumed/failed)";
}

TEST(TlsMetrics, AFullThenAResumedHandshakeAreCountedOnBothSides) {
  metrics::set_instrumentation_enabled(true);
  auto server_context = test::test_server_context(test::test_pki().localhost);
  auto client_context = test::test_client_context();
  const Counts before = Counts::now();
  TlsPair first(server_context, client_context);
  first.pump();
  ASSERT_TRUE(first.client_tls->is_handshake_done());
  EXPECT_EQ(Counts::now() - before, (Counts{1, 0, 0, 1, 0, 0}));
  TlsPair second(server_context, client_context);
  second.pump();
  ASSERT_TRUE(second.server_tls->session_resumed());
  EXPECT_EQ(Counts::now() - before, (Counts{1, 1, 0, 1, 1, 0}));
}

TEST(TlsMetrics, PlaintextInsteadOfAHandshakeIsAFailedServerHandshake) {
  metrics::set_instrumentation_enabled(true);
  const Counts before = Counts::now();
  TlsPair p(test::test_server_context(test::test_pki().localhost), test::test_client_context());
  (void)p.client.read_outbound<ByteBuf>();  // drop the ClientHello
  p.server.write_inbound(ByteBuf::copy_of("GET / HTTP/1.1\r\nHost: x\r\n\r\n"));
  EXPECT_FALSE(p.server.is_open());
  EXPECT_EQ(p.server.close_reason(), CloseReason::protocol_error);
  EXPECT_EQ(Counts::now() - before, (Counts{0, 0, 1, 0, 0, 0}));
}

TEST(TlsMetrics, AClientRefusingTheCertificateIsAFailedClientHandshake) {
  metrics::set_instrumentation_enabled(true);
  const Counts before = Counts::now();
  TlsHandlerOptions options;
  options.server_name = "not-this-host.example";  // the certificate is for localhost
  TlsPair p(test::test_server_context(test::test_pki().localhost), test::test_client_context(), options);
  p.pump();
  EXPECT_FALSE(p.client.is_open());
  const Counts moved = Counts::now() - before;
  EXPECT_EQ(moved.client_failed, 1);
  EXPECT_EQ(moved.client_full, 0);
  EXPECT_EQ(moved.server_full + moved.server_failed, 1);  // (TLS 1.3: the server may finish before the alert)
}

}  // namespace
}  // namespace weft
