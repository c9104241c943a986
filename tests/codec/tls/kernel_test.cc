// kTLS (TlsContextBuilder::kernel_tls) without a kernel that offers it: TlsHandlers on two
// EmbeddedChannels hand their sending direction to a software kernel (software_kernel_tls.h), which
// makes the records from the crypto info the handler would give setsockopt; the peer decrypting
// every byte proves the keys, IVs and sequence numbers, for TLS 1.3 and 1.2 and every cipher the
// kernel takes. Also: close_notify through the kernel, a handoff that waits for the write queue, a
// peer's key update request after the handoff and before it, a kernel without the ULP (logged
// once, never asked again), ciphers and refusals that keep the records in user space.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <linux/tls.h>
#include <openssl/ssl.h>

#include <cerrno>
#include <string>
#include <vector>

#include "codec/tls/software_kernel_tls.h"
#include "codec/tls/test_pair.h"
#include "support/stderr_capture.h"
#include "support/tls_certs.h"
#include "weft/codec/tls/tls_error.h"
#include "weft/core/log.h"

using ::testing::HasSubstr;

namespace weft {
namespace {

using test::error_as;
using test::SoftwareKernelTls;
using test::test_pki;
using test::TlsPair;

std::string pattern(std::size_t n, std::size_t seed) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 131 + seed * 17 + (i >> 9)) & 0xff);
  return s;
}

struct Suite {
  TlsVersion version;
  const char* cipher;  // TLS 1.3: a cipher suite; TLS 1.2: a cipher list
  std::uint16_t kernel_version;
  std::uint16_t kernel_cipher;
};

// `builder` limited to the suite's version and cipher, with kernel TLS asked for or not.
TlsContextPtr for_suite(TlsContextBuilder builder, const Suite& suite, bool kernel_tls) {
  builder.min_version(suite.version).max_version(suite.version).kernel_tls(kernel_tls);
  if (suite.version == TlsVersion::tls1_3) {
    builder.cipher_suites(suite.cipher);
  } else {
    builder.cipher_list(suite.cipher);
  }
  return builder.build();
}

TlsContextPtr server_context(const Suite& suite, bool kernel_tls = true) {
  return for_suite(TlsContext::server()
                       .certificate_chain_pem(test_pki().localhost.cert_pem)
                       .private_key_pem(test_pki().localhost.key_pem),
                   suite, kernel_tls);
}

TlsContextPtr client_context(const Suite& suite, bool kernel_tls = true) {
  return for_suite(TlsContext::client().trust_pem(test_pki().ca.cert_pem), suite, kernel_tls);
}

// Passes what each side sends (through the software kernel once it has the keys) to the other
// until neither has more.
void pump(TlsPair& p, SoftwareKernelTls& kernel) {
  for (int round = 0; round < 1000; ++round) {
    const std::string up = kernel.take_wire(p.client);
    if (!up.empty() && p.server.is_open()) p.server.write_inbound(ByteBuf::copy_of(up));
    const std::string down = kernel.take_wire(p.server);
    if (!down.empty() && p.client.is_open()) p.client.write_inbound(ByteBuf::copy_of(down));
    if (up.empty() && down.empty()) return;
  }
  ADD_FAILURE() << "the two sides never stopped talking";
}

const Suite kTls13Aes128{TlsVersion::tls1_3, "TLS_AES_128_GCM_SHA256", TLS_1_3_VERSION, TLS_CIPHER_AES_GCM_128};

TEST(TlsKernel, EveryCipherTheKernelTakesCarriesTheDataBothWays) {
  const std::vector<Suite> suites = {
      kTls13Aes128,
      {TlsVersion::tls1_3, "TLS_AES_256_GCM_SHA384", TLS_1_3_VERSION, TLS_CIPHER_AES_GCM_256},
      {TlsVersion::tls1_3, "TLS_CHACHA20_POLY1305_SHA256", TLS_1_3_VERSION, TLS_CIPHER_CHACHA20_POLY1305},
      {TlsVersion::tls1_2, "ECDHE-ECDSA-AES128-GCM-SHA256", TLS_1_2_VERSION, TLS_CIPHER_AES_GCM_128},
      {TlsVersion::tls1_2, "ECDHE-ECDSA-AES256-GCM-SHA384", TLS_1_2_VERSION, TLS_CIPHER_AES_GCM_256},
      {TlsVersion::tls1_2, "ECDHE-ECDSA-CHACHA20-POLY1305", TLS_1_2_VERSION, TLS_CIPHER_CHACHA20_POLY1305},
  };
  for (const Suite& suite : suites) {
    SCOPED_TRACE(suite.cipher);
    SoftwareKernelTls kernel;
    auto server = server_context(suite);
    TlsPair p(server, client_context(suite));
    p.client.write_outbound(ByteBuf::copy_of("early "));  // encrypted by OpenSSL after the handshake
    pump(p, kernel);
    ASSERT_TRUE(p.client_tls->is_handshake_done());
    ASSERT_TRUE(p.server_tls->is_handshake_done());
    ASSERT_TRUE(p.client_tls->is_kernel_tls());
    ASSERT_TRUE(p.server_tls->is_kernel_tls());
    const SoftwareKernelTls::Tx* server_tx = kernel.tx(p.server);
    const SoftwareKernelTls::Tx* client_tx = kernel.tx(p.client);
    ASSERT_NE(server_tx, nullptr);
    ASSERT_NE(client_tx, nullptr);
    EXPECT_EQ(server_tx->version, suite.kernel_version);
    EXPECT_EQ(server_tx->cipher_type, suite.kernel_cipher);
    EXPECT_EQ(client_tx->cipher_type, suite.kernel_cipher);
    // The records OpenSSL made with the application key before the handoff. TLS 1.3: the server's
    // session tickets; the client's early write. TLS 1.2: each side's Finished, then the early write.
    if (suite.version == TlsVersion::tls1_3) {
      EXPECT_EQ(server_tx->first_sequence, SSL_CTX_get_num_tickets(server->native_handle()));
      EXPECT_GT(server_tx->first_sequence, 0u);
      EXPECT_EQ(client_tx->first_sequence, 1u);
    } else {
      EXPECT_EQ(server_tx->first_sequence, 1u);
      EXPECT_EQ(client_tx->first_sequence, 2u);
    }

    const std::string up = pattern(100000, 1);
    const std::string down = pattern(70001, 2);
    for (std::size_t at = 0; at < up.size(); at += 30000) p.client.write_outbound(ByteBuf::copy_of(up.substr(at, 30000)));
    p.server.write_outbound(ByteBuf::copy_of(down));
    p.server.write_outbound(ByteBuf::copy_of("!"));
    const std::uint64_t sealed_before = kernel.sealed_records;
    pump(p, kernel);
    EXPECT_EQ(p.server_app->received, "early " + up);
    EXPECT_EQ(p.client_app->received, down + "!");
    EXPECT_GE(kernel.sealed_records - sealed_before, 4u + 5u + 1u);  // every byte went through the kernel
    EXPECT_TRUE(p.server_app->errors.empty());
    EXPECT_TRUE(p.client_app->errors.empty());

    // close_notify as a control record of the kernel; the server answers with its own.
    Future<void> closed = p.client.close();
    p.client.run_pending();
    EXPECT_TRUE(closed.is_done());
    EXPECT_EQ(kernel.control_records, 1);
    pump(p, kernel);
    EXPECT_TRUE(p.server_app->close_notify);
    EXPECT_FALSE(p.server.is_open());
    EXPECT_EQ(kernel.control_records, 2);
    EXPECT_TRUE(p.server_app->errors.empty());
  }
}

TEST(TlsKernel, AWrongSequenceNumberIsRefusedByThePeer) {
  // The check above is only worth something if the peer notices a kernel one record off.
  SoftwareKernelTls kernel;
  kernel.sequence_skew = 1;
  TlsPair p(server_context(kTls13Aes128), client_context(kTls13Aes128, false));
  pump(p, kernel);
  ASSERT_TRUE(p.server_tls->is_kernel_tls());
  p.server.write_outbound(ByteBuf::copy_of("through the kernel"));
  pump(p, kernel);
  EXPECT_EQ(p.client_app->received, "");
  ASSERT_EQ(p.client_app->errors.size(), 1u);
  EXPECT_NO_THROW(error_as<TlsError>(p.client_app->errors[0]));
}

TEST(TlsKernel, APeersKeyUpdateRequestAfterTheHandoffEndsTheConnection) {
  SoftwareKernelTls kernel;
  TlsPair p(server_context(kTls13Aes128), client_context(kTls13Aes128, false));  // the server hands off
  pump(p, kernel);
  ASSERT_TRUE(p.server_tls->is_kernel_tls());

  // A key update the server need not answer: its reading key changes, nothing is written.
  ASSERT_EQ(SSL_key_update(p.client_tls->native_handle(), SSL_KEY_UPDATE_NOT_REQUESTED), 1);
  p.client.write_outbound(ByteBuf::copy_of("new key "));
  pump(p, kernel);
  p.server.write_outbound(ByteBuf::copy_of("still here"));
  pump(p, kernel);
  EXPECT_EQ(p.server_app->received, "new key ");
  EXPECT_EQ(p.client_app->received, "still here");
  EXPECT_TRUE(p.server_app->errors.empty());

  // One the server must answer: OpenSSL would write a KeyUpdate under a sequence number the kernel
  // has used since. The connection ends instead, and nothing OpenSSL made goes out.
  ASSERT_EQ(SSL_key_update(p.client_tls->native_handle(), SSL_KEY_UPDATE_REQUESTED), 1);
  p.client.write_outbound(ByteBuf::copy_of("answer me"));
  p.server.write_inbound(ByteBuf::copy_of(kernel.take_wire(p.client)));
  ASSERT_EQ(p.server_app->errors.size(), 1u);
  const TlsError error = error_as<TlsError>(p.server_app->errors[0]);
  EXPECT_THAT(std::string(error.what()), HasSubstr("kernel TLS cannot answer the peer's key update"));
  EXPECT_FALSE(p.server.is_open());
  EXPECT_EQ(kernel.take_wire(p.server), "");
  EXPECT_EQ(p.server_tls->buffered_bytes(), 0u);
}

TEST(TlsKernel, TheHandoffWaitsForTheWriteQueueToEmpty) {
  SoftwareKernelTls kernel;
  auto server = server_context(kTls13Aes128);
  TlsPair p(server, client_context(kTls13Aes128, false));
  p.server.hold_write_bytes(1);  // stands for bytes still queued for the socket
  pump(p, kernel);
  ASSERT_TRUE(p.server_tls->is_handshake_done());
  EXPECT_FALSE(p.server_tls->is_kernel_tls());
  p.server.write_outbound(ByteBuf::copy_of("made by OpenSSL, "));
  pump(p, kernel);
  EXPECT_FALSE(p.server_tls->is_kernel_tls());
  EXPECT_EQ(kernel.start_calls, 0);

  p.server.release_held_write_bytes(1);  // the queue has emptied: the next write hands off
  p.server.write_outbound(ByteBuf::copy_of("made by the kernel"));
  ASSERT_TRUE(p.server_tls->is_kernel_tls());
  ASSERT_NE(kernel.tx(p.server), nullptr);
  EXPECT_EQ(kernel.tx(p.server)->first_sequence, SSL_CTX_get_num_tickets(server->native_handle()) + 1);
  pump(p, kernel);
  EXPECT_EQ(p.client_app->received, "made by OpenSSL, made by the kernel");
  EXPECT_TRUE(p.client_app->errors.empty());
}

TEST(TlsKernel, AKeyUpdateRequestBeforeTheHandoffKeepsTheRecordsInUserSpace) {
  SoftwareKernelTls kernel;
  TlsPair p(server_context(kTls13Aes128), client_context(kTls13Aes128, false));
  p.server.hold_write_bytes(1);  // no handoff yet
  pump(p, kernel);
  ASSERT_TRUE(p.server_tls->is_handshake_done());
  ASSERT_EQ(SSL_key_update(p.client_tls->native_handle(), SSL_KEY_UPDATE_REQUESTED), 1);
  p.client.write_outbound(ByteBuf::copy_of("update yours"));
  pump(p, kernel);
  p.server.release_held_write_bytes(1);
  // OpenSSL sends its KeyUpdate with this write, under a key the kept secret no longer gives.
  p.server.write_outbound(ByteBuf::copy_of("updated"));
  pump(p, kernel);
  EXPECT_FALSE(p.server_tls->is_kernel_tls());
  EXPECT_EQ(kernel.start_calls, 0);
  EXPECT_EQ(p.server_app->received, "update yours");
  EXPECT_EQ(p.client_app->received, "updated");
  EXPECT_TRUE(p.server_app->errors.empty());
  EXPECT_TRUE(p.client_app->errors.empty());
}

TEST(TlsKernel, AKernelWithoutTheUlpIsReportedOnceAndNeverAskedAgain) {
  SoftwareKernelTls kernel;
  kernel.attach_error = ENOENT;  // what Linux answers TCP_ULP "tls" without the tls module
  const LogLevel level = log_level();
  set_log_level(LogLevel::info);
  test::StderrCapture capture;
  for (int i = 0; i < 3; ++i) {
    TlsPair p(server_context(kTls13Aes128), client_context(kTls13Aes128));
    pump(p, kernel);
    p.client.write_outbound(ByteBuf::copy_of("up"));
    p.server.write_outbound(ByteBuf::copy_of("down"));
    pump(p, kernel);
    EXPECT_EQ(p.server_app->received, "up");
    EXPECT_EQ(p.client_app->received, "down");
    EXPECT_FALSE(p.server_tls->is_kernel_tls());
    EXPECT_FALSE(p.client_tls->is_kernel_tls());
  }
  const std::string log = capture.stop();
  set_log_level(level);
  EXPECT_EQ(kernel.attach_calls, 1);
  EXPECT_EQ(kernel.start_calls, 0);
  EXPECT_EQ(test::count_occurrences(log, "kernel TLS was asked for, but this kernel does not offer the tls ULP"), 1) << log;
  EXPECT_TRUE(kernel.ulp_missing());
}

TEST(TlsKernel, RecordsStayInUserSpaceWhenTheKernelCannotTakeThem) {
  const Suite cbc{TlsVersion::tls1_2, "ECDHE-ECDSA-AES128-SHA256", TLS_1_2_VERSION, 0};
  struct Case {
    const char* what;
    Suite suite;
    bool kernel_tls;
    int start_error;
    int attach_calls;
  };
  const std::vector<Case> cases = {
      {"not asked for", kTls13Aes128, false, 0, 0},
      {"a cipher the kernel does not take", cbc, true, 0, 0},
      {"the kernel refuses the keys", kTls13Aes128, true, EINVAL, 2},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    SoftwareKernelTls kernel;
    kernel.start_error = c.start_error;
    TlsPair p(server_context(c.suite, c.kernel_tls), client_context(c.suite, c.kernel_tls));
    pump(p, kernel);
    ASSERT_TRUE(p.client_tls->is_handshake_done());
    p.client.write_outbound(ByteBuf::copy_of(pattern(20000, 3)));
    p.server.write_outbound(ByteBuf::copy_of(pattern(20000, 4)));
    pump(p, kernel);
    EXPECT_EQ(p.server_app->received, pattern(20000, 3));
    EXPECT_EQ(p.client_app->received, pattern(20000, 4));
    EXPECT_FALSE(p.server_tls->is_kernel_tls());
    EXPECT_EQ(kernel.attach_calls, c.attach_calls);
    EXPECT_EQ(kernel.sealed_records, 0u);
    p.client.close();
    p.client.run_pending();
    pump(p, kernel);
    EXPECT_TRUE(p.server_app->close_notify);  // OpenSSL's own close_notify
    EXPECT_TRUE(p.server_app->errors.empty());
  }
}

TEST(TlsKernel, OffByDefault) {
  EXPECT_FALSE(test::test_server_context(test_pki().localhost)->kernel_tls());
  EXPECT_TRUE(server_context(kTls13Aes128)->kernel_tls());
}

}  // namespace
}  // namespace weft
