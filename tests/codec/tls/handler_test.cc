// TlsHandler between two EmbeddedChannels: handshakes, data both ways in any split, ALPN, SNI,
// refused certificates, bad input, the end of input, timeouts, close_notify, resumption.

#include "weft/codec/tls/tls_handler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include <string>
#include <vector>

#include "codec/tls/test_pair.h"
#include "support/tls_certs.h"
#include "weft/channel/events.h"
#include "weft/codec/http1/router.h"
#include "weft/codec/http1/server_codec.h"
#include "weft/codec/tls/application_protocol_negotiation_handler.h"
#include "weft/codec/tls/tls_error.h"

using namespace std::chrono_literals;
using ::testing::HasSubstr;

namespace weft {
namespace {

using test::error_as;
using test::TlsPair;
using test::test_client_context;
using test::test_pki;
using test::test_server_context;

std::string pattern(std::size_t n, std::size_t seed = 0) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>('a' + (i * 7 + seed + i / 251) % 26);
  return s;
}

TEST(TlsHandler, HandshakeThenDataBothWays) {
  TlsPair p(test_server_context(test_pki().localhost), test_client_context());
  p.pump();
  ASSERT_EQ(p.client_app->handshakes.size(), 1u);
  ASSERT_EQ(p.server_app->handshakes.size(), 1u);
  EXPECT_TRUE(p.client_app->handshakes[0].success());
  EXPECT_TRUE(p.server_app->handshakes[0].success());
  EXPECT_EQ(p.client_app->handshakes[0].version, "TLSv1.3");
  EXPECT_EQ(p.server_app->handshakes[0].server_name, "localhost");  // SNI from the client's options
  EXPECT_TRUE(p.client_tls->is_handshake_done());
  EXPECT_TRUE(p.client_tls->handshake_future().is_success());

  p.client.write_outbound(ByteBuf::copy_of("ping"));
  p.pump();
  EXPECT_EQ(p.server_app->received, "ping");
  p.server.write_outbound(ByteBuf::copy_of("pong"));
  p.pump();
  EXPECT_EQ(p.client_app->received, "pong");
  EXPECT_TRUE(p.client_app->errors.empty());
  EXPECT_TRUE(p.server_app->errors.empty());
}

TEST(TlsHandler, EveryByteInAPieceOfItsOwn) {
  TlsPair p(test_server_context(test_pki().localhost), test_client_context());
  p.pump(1);  // the ClientHello and every handshake record, one byte per read
  ASSERT_TRUE(p.client_tls->is_handshake_done());
  ASSERT_TRUE(p.server_tls->is_handshake_done());
  const std::string up = pattern(40000, 1);
  const std::string down = pattern(30000, 2);
  p.client.write_outbound(ByteBuf::copy_of(up));
  p.server.write_outbound(ByteBuf::copy_of(down));
  p.pump(1);
  EXPECT_EQ(p.server_app->received, up);
  EXPECT_EQ(p.client_app->received, down);
  EXPECT_EQ(p.server_tls->buffered_bytes(), 0u);
}

TEST(TlsHandler, LargeTransfersInOddPieces) {
  TlsPair p(test_server_context(test_pki().localhost), test_client_context());
  p.pump(977);
  const std::string up = pattern(1 << 20, 3);
  for (std::size_t i = 0; i < up.size(); i += 100000) {
    p.client.write_outbound(ByteBuf::copy_of(std::string_view(up).substr(i, 100000)));
  }
  p.pump(4099);
  EXPECT_EQ(p.server_app->received, up);
}

TEST(TlsHandler, WritesBeforeTheHandshakeAreSentAfterIt) {
  TlsPair p(test_server_context(test_pki().localhost), test_client_context());
  p.client.write_outbound(ByteBuf::copy_of("early "));
  p.client.write_outbound(ByteBuf::copy_of("bird"));
  EXPECT_EQ(p.client_tls->buffered_bytes(), 10u);
  p.server.write_outbound(ByteBuf::copy_of("server first"));  // before the ClientHello even arrived
  p.pump();
  EXPECT_EQ(p.server_app->received, "early bird");
  EXPECT_EQ(p.client_app->received, "server first");
  EXPECT_EQ(p.client_tls->buffered_bytes(), 0u);
}

// Record lengths in the ciphertext `bytes` (whole records only).
std::vector<std::size_t> record_lengths(const std::string& bytes) {
  std::vector<std::size_t> lengths;
  for (std::size_t i = 0; i + 5 <= bytes.size();) {
    const std::size_t n = static_cast<std::uint8_t>(bytes[i + 3]) << 8 | static_cast<std::uint8_t>(bytes[i + 4]);
    lengths.push_back(n);
    i += 5 + n;
  }
  return lengths;
}

TEST(TlsHandler, SmallRecordsFirstThenFullOnesThenSmallAgainAfterIdle) {
  TlsPair p(test_server_context(test_pki().localhost), test_client_context());
  p.pump();
  auto sent_records = [&](std::size_t bytes) {
    p.client.write_outbound(ByteBuf::copy_of(pattern(bytes)));
    std::string wire;
    while (auto buf = p.client.read_outbound<ByteBuf>()) wire += buf->to_string();
    p.server.write_inbound(ByteBuf::copy_of(wire));
    return record_lengths(wire);
  };
  std::vector<std::size_t> first = sent_records(64 * 1024);
  ASSERT_GE(first.size(), 4u);
  EXPECT_LT(first.front(), 1500u);  // a record that fits one segment
  EXPECT_GT(first.back(), 16000u);  // bulk: full records
  std::vector<std::size_t> again = sent_records(64 * 1024);
  EXPECT_GT(again.front(), 16000u);  // no pause: still bulk
  p.client.advance_time(2s);
  std::vector<std::size_t> after_idle = sent_records(4096);
  EXPECT_LT(after_idle.front(), 1500u);
  p.pump();
  EXPECT_EQ(p.server_app->received.size(), 64u * 1024 * 2 + 4096);
}

TEST(TlsHandler, AlpnPicksTheServersFirstChoiceTheClientOffers) {
  TlsPair p(test_server_context(test_pki().localhost, {"h2", "http/1.1"}), test_client_context({"http/1.1", "h2"}));
  p.pump();
  ASSERT_TRUE(p.client_tls->is_handshake_done());
  EXPECT_EQ(p.server_tls->application_protocol(), "h2");
  EXPECT_EQ(p.client_tls->application_protocol(), "h2");
  EXPECT_EQ(p.client_app->handshakes.at(0).protocol, "h2");

  TlsPair q(test_server_context(test_pki().localhost, {"h2", "http/1.1"}), test_client_context({"http/1.1"}));
  q.pump();
  EXPECT_EQ(q.server_tls->application_protocol(), "http/1.1");
  EXPECT_EQ(q.client_app->handshakes.at(0).protocol, "http/1.1");

  TlsPair none(test_server_context(test_pki().localhost, {"h2"}), test_client_context());  // the client offers none
  none.pump();
  ASSERT_TRUE(none.server_tls->is_handshake_done());
  EXPECT_EQ(none.server_tls->application_protocol(), "");
}

TEST(TlsHandler, AlpnWithoutACommonProtocolFailsTheHandshake) {
  TlsPair p(test_server_context(test_pki().localhost, {"h2"}), test_client_context({"spdy/3"}));
  p.pump();
  ASSERT_EQ(p.server_app->handshakes.size(), 1u);
  EXPECT_FALSE(p.server_app->handshakes[0].success());
  ASSERT_EQ(p.client_app->errors.size(), 1u);
  auto client_error = error_as<TlsHandshakeError>(p.client_app->errors[0]);
  EXPECT_THAT(client_error.reason(), HasSubstr("no application protocol"));
  EXPECT_EQ(client_error.cause(), TlsHandshakeError::Cause::protocol);
  EXPECT_FALSE(p.client.is_open());
  EXPECT_FALSE(p.server.is_open());
  EXPECT_THROW(p.client_tls->handshake_future().get(), TlsHandshakeError);
}

TEST(TlsHandler, ServerNameSelectsTheContext) {
  auto sni_context = test_server_context(test_pki().sni_host, {"sni-protocol"});
  auto server_context = TlsContext::server()
                            .certificate_chain_pem(test_pki().localhost.cert_pem)
                            .private_key_pem(test_pki().localhost.key_pem)
                            .server_name("SNI.example", sni_context)
                            .build();
  TlsHandlerOptions to_sni;
  to_sni.server_name = "sni.example";
  TlsPair p(server_context, test_client_context({"sni-protocol"}), to_sni);
  p.pump();
  ASSERT_TRUE(p.client_tls->is_handshake_done()) << (p.client_app->errors.empty() ? "" : "error");
  EXPECT_EQ(p.server_tls->server_name(), "sni.example");
  EXPECT_EQ(p.server_tls->application_protocol(), "sni-protocol");  // the chosen context's ALPN

  TlsPair q(server_context, test_client_context());  // localhost: the default context
  q.pump();
  EXPECT_TRUE(q.client_tls->is_handshake_done());

  // A resolver for the names the map does not hold; a wildcard entry.
  std::vector<std::string> asked;
  auto resolving = TlsContext::server()
                       .certificate_chain_pem(test_pki().localhost.cert_pem)
                       .private_key_pem(test_pki().localhost.key_pem)
                       .server_name("*.example", sni_context)
                       .server_name_resolver([&](std::string_view name) -> TlsContextPtr {
                         asked.emplace_back(name);
                         return nullptr;
                       })
                       .build();
  TlsPair r(resolving, test_client_context(), to_sni);
  r.pump();
  EXPECT_TRUE(r.client_tls->is_handshake_done());
  EXPECT_TRUE(asked.empty());  // the wildcard matched first
  TlsPair s(resolving, test_client_context());
  s.pump();
  EXPECT_EQ(asked, std::vector<std::string>{"localhost"});
}

void expect_refused_certificate(TlsPair& p, const std::string& verify_error) {
  p.pump();
  ASSERT_EQ(p.client_app->handshakes.size(), 1u);
  EXPECT_FALSE(p.client_app->handshakes[0].success());
  ASSERT_EQ(p.client_app->errors.size(), 1u);
  auto error = error_as<TlsHandshakeError>(p.client_app->errors[0]);
  EXPECT_EQ(error.cause(), TlsHandshakeError::Cause::certificate);
  EXPECT_THAT(error.verify_error(), HasSubstr(verify_error));
  EXPECT_THAT(std::string(error.what()), HasSubstr(verify_error));
  EXPECT_THAT(error.reason(), HasSubstr("certificate verify failed"));
  EXPECT_FALSE(p.client.is_open());
  // The server hears of it through the client's alert.
  ASSERT_EQ(p.server_app->errors.size(), 1u);
  EXPECT_NO_THROW(error_as<TlsHandshakeError>(p.server_app->errors[0]));
  EXPECT_FALSE(p.server.is_open());
}

TEST(TlsHandler, ExpiredCertificateIsRefused) {
  TlsPair p(test_server_context(test_pki().expired), test_client_context());
  expect_refused_certificate(p, "certificate has expired");
}

TEST(TlsHandler, CertificateForAnotherHostIsRefused) {
  TlsPair p(test_server_context(test_pki().other_host), test_client_context());
  expect_refused_certificate(p, "hostname mismatch");
}

TEST(TlsHandler, WithoutAServerNameTheRemoteAddressIsChecked) {
  TlsPair ok(test_server_context(test_pki().localhost), test_client_context(), TlsHandlerOptions{});
  ok.pump();
  EXPECT_TRUE(ok.client_tls->is_handshake_done());  // IP:127.0.0.1 is in the certificate
  TlsPair p(test_server_context(test_pki().other_host), test_client_context(), TlsHandlerOptions{});
  expect_refused_certificate(p, "IP address mismatch");
}

TEST(TlsHandler, UntrustedCertificateIsRefusedUnlessVerificationIsOff) {
  TlsPair p(test_server_context(test_pki().self_signed), test_client_context());
  expect_refused_certificate(p, "self");
  auto insecure = TlsContext::client().verify(TlsVerify::none).build();
  TlsPair q(test_server_context(test_pki().self_signed), insecure);
  q.pump();
  EXPECT_TRUE(q.client_tls->is_handshake_done());
}

TEST(TlsHandler, MutualTls) {
  auto server_context = TlsContext::server()
                            .certificate_chain_pem(test_pki().localhost.cert_pem)
                            .private_key_pem(test_pki().localhost.key_pem)
                            .trust_pem(test_pki().ca.cert_pem)
                            .verify(TlsVerify::required)
                            .build();
  auto with_cert = TlsContext::client()
                       .trust_pem(test_pki().ca.cert_pem)
                       .certificate_chain_pem(test_pki().client.cert_pem)
                       .private_key_pem(test_pki().client.key_pem)
                       .build();
  TlsPair p(server_context, with_cert);
  p.pump();
  p.client.write_outbound(ByteBuf::copy_of("hi"));
  p.pump();
  EXPECT_EQ(p.server_app->received, "hi");

  TlsPair q(server_context, test_client_context());  // no client certificate
  q.pump();
  ASSERT_EQ(q.server_app->errors.size(), 1u);
  EXPECT_THAT(error_as<TlsHandshakeError>(q.server_app->errors[0]).reason(), HasSubstr("certificate"));
  EXPECT_FALSE(q.server.is_open());
}

TEST(TlsHandler, PlaintextInsteadOfAHandshakeIsRefused) {
  TlsPair p(test_server_context(test_pki().localhost), test_client_context());
  (void)p.client.read_outbound<ByteBuf>();  // drop the ClientHello
  p.server.write_inbound(ByteBuf::copy_of("GET / HTTP/1.1\r\nHost: x\r\n\r\n"));
  ASSERT_EQ(p.server_app->errors.size(), 1u);
  auto error = error_as<TlsHandshakeError>(p.server_app->errors[0]);
  EXPECT_EQ(error.cause(), TlsHandshakeError::Cause::protocol);
  EXPECT_FALSE(error.reason().empty());
  EXPECT_FALSE(p.server.is_open());
  EXPECT_TRUE(p.server_app->received.empty());
}

TEST(TlsHandler, GarbageRecordAfterTheHandshakeFailsTheConnection) {
  TlsPair p(test_server_context(test_pki().localhost), test_client_context());
  p.pump();
  std::string garbage = "\x17\x03\x03";
  garbage += '\0';
  garbage += '\x40';
  garbage += pattern(64);
  p.server.write_inbound(ByteBuf::copy_of(garbage));
  ASSERT_EQ(p.server_app->errors.size(), 1u);
  auto error = error_as<TlsError>(p.server_app->errors[0]);
  EXPECT_FALSE(error.reason().empty());
  EXPECT_FALSE(p.server.is_open());
  p.pump();  // the server's alert reaches the client
  ASSERT_EQ(p.client_app->errors.size(), 1u);
  EXPECT_FALSE(p.client.is_open());
}

TEST(TlsHandler, InputEndingInsideARecordIsReported) {
  TlsPair p(test_server_context(test_pki().localhost), test_client_context());
  p.pump();
  p.client.write_outbound(ByteBuf::copy_of(pattern(5000)));
  std::string wire;
  while (auto buf = p.client.read_outbound<ByteBuf>()) wire += buf->to_string();
  p.server.write_inbound(ByteBuf::copy_of(std::string_view(wire).substr(0, wire.size() - 10)));
  EXPECT_GT(p.server_tls->buffered_bytes(), 0u);
  EXPECT_LT(p.server_tls->buffered_bytes(), 1500u);  // one small record at most
  p.server.pipeline().fire_user_event(std::any(ChannelInputShutdownEvent{}));
  ASSERT_EQ(p.server_app->errors.size(), 1u);
  EXPECT_EQ(error_as<TlsError>(p.server_app->errors[0]).reason(), "truncated record");
  EXPECT_EQ(p.server_app->received, pattern(5000).substr(0, p.server_app->received.size()));
}

TEST(TlsHandler, PeerClosingDuringTheHandshakeFailsIt) {
  TlsPair p(test_server_context(test_pki().localhost), test_client_context());
  TlsPair::transfer(p.client, p.server, 0);  // the ClientHello arrives; the server answers
  p.server.pipeline().fire_user_event(std::any(ChannelInputShutdownEvent{}));  // then the client's FIN
  ASSERT_EQ(p.server_app->errors.size(), 1u);
  EXPECT_EQ(error_as<TlsHandshakeError>(p.server_app->errors[0]).cause(), TlsHandshakeError::Cause::closed);
  EXPECT_FALSE(p.server.is_open());

  TlsPair q(test_server_context(test_pki().localhost), test_client_context());
  q.client.close();  // closed by the application before the server answered
  q.client.run_pending();
  ASSERT_EQ(q.client_app->errors.size(), 1u);
  EXPECT_EQ(error_as<TlsHandshakeError>(q.client_app->errors[0]).cause(), TlsHandshakeError::Cause::closed);
  EXPECT_THROW(q.client_tls->handshake_future().get(), TlsHandshakeError);
}

TEST(TlsHandler, HandshakeThatNeverEndsTimesOut) {
  TlsHandlerOptions quick;
  quick.handshake_timeout = 2s;
  TlsPair p(test_server_context(test_pki().localhost), test_client_context(), TlsPair::localhost(), quick);
  TlsPair::transfer(p.client, p.server, 0);  // the client never answers the server's flight
  p.server.advance_time(1999ms);
  EXPECT_TRUE(p.server.is_open());
  EXPECT_TRUE(p.server_app->errors.empty());
  p.server.advance_time(1ms);
  ASSERT_EQ(p.server_app->errors.size(), 1u);
  auto error = error_as<TlsHandshakeError>(p.server_app->errors[0]);
  EXPECT_EQ(error.cause(), TlsHandshakeError::Cause::timeout);
  EXPECT_THAT(std::string(error.what()), HasSubstr("2000 ms"));
  EXPECT_FALSE(p.server.is_open());

  // The default is 10 s; a peer that sends nothing at all is cut off too.
  TlsPair q(test_server_context(test_pki().localhost), test_client_context());
  (void)q.client.read_outbound<ByteBuf>();
  q.server.advance_time(9s);
  EXPECT_TRUE(q.server.is_open());
  q.server.advance_time(1s);
  EXPECT_FALSE(q.server.is_open());
  q.client.advance_time(10s);
  EXPECT_FALSE(q.client.is_open());
}

TEST(TlsHandler, CloseSendsCloseNotifyAndThePeerAnswersIt) {
  TlsPair p(test_server_context(test_pki().localhost), test_client_context());
  p.pump();
  p.client.write_outbound(ByteBuf::copy_of("last words"));
  Future<void> closed = p.client.close();
  p.client.run_pending();
  EXPECT_FALSE(p.client.is_open());
  EXPECT_TRUE(closed.is_done());
  p.pump();
  EXPECT_EQ(p.server_app->received, "last words");
  EXPECT_TRUE(p.server_app->close_notify);
  EXPECT_FALSE(p.server.is_open());  // it answered with its own close_notify and closed
  EXPECT_TRUE(p.server_app->errors.empty());
  EXPECT_TRUE(p.client_app->errors.empty());
}

TEST(TlsHandler, WithHalfClosureAPeersCloseNotifyEndsTheInputAndTheAnswerStillGoesOut) {
  TlsPair p(test_server_context(test_pki().localhost), test_client_context());
  p.server.config().allow_half_closure = true;  // as the HTTP server codecs set it
  p.pump();
  p.client.write_outbound(ByteBuf::copy_of("a question"));
  p.client.close();  // close_notify after it
  p.client.run_pending();
  p.pump();
  EXPECT_EQ(p.server_app->received, "a question");
  EXPECT_TRUE(p.server_app->close_notify);
  EXPECT_EQ(p.server_app->input_shutdowns, 1) << "close_notify is the end of the input, as a FIN";
  ASSERT_TRUE(p.server.is_open()) << "the answer owed can still be written";
  p.server.pipeline().fire_user_event(ChannelInputShutdownEvent{});  // the FIN that follows
  EXPECT_EQ(p.server_app->input_shutdowns, 1) << "one end of input, one event";
  p.server.write_outbound(ByteBuf::copy_of("the answer"));
  EXPECT_TRUE(p.server.read_outbound<ByteBuf>().has_value()) << "the answer was encrypted and passed on";
  p.server.close_gracefully(1s);
  p.server.run_pending();
  EXPECT_TRUE(p.server.read_outbound<ByteBuf>().has_value()) << "our close_notify, before the FIN";
  EXPECT_TRUE(p.server_app->errors.empty());
}

TEST(TlsHandler, GracefulCloseSendsCloseNotifyBeforeTheFin) {
  TlsPair p(test_server_context(test_pki().localhost), test_client_context());
  p.pump();
  p.server.write_outbound(ByteBuf::copy_of("the answer"));
  p.server.close_gracefully(1s);  // what an HTTP server does after a "Connection: close" answer
  p.server.run_pending();
  p.pump();
  EXPECT_EQ(p.client_app->received, "the answer");
  EXPECT_TRUE(p.client_app->close_notify);  // not a bare FIN: the client can tell the end from a cut
  EXPECT_TRUE(p.client_app->errors.empty());
  EXPECT_TRUE(p.server_app->errors.empty());
}

TEST(TlsHandler, PlaintextWrittenDuringTheHandshakeCountsTowardWritability) {
  TlsPair p(test_server_context(test_pki().localhost), test_client_context());
  const std::size_t high = p.client.config().write_buffer_high_water_mark;
  p.client.write_outbound(ByteBuf::copy_of(pattern(high / 2)));
  EXPECT_TRUE(p.client.is_writable());
  p.client.write_outbound(ByteBuf::copy_of(pattern(high)));  // held by the handler: no handshake yet
  EXPECT_FALSE(p.client.is_writable());
  EXPECT_EQ(p.client.pending_write_bytes(), high / 2 + high);
  p.pump();
  EXPECT_TRUE(p.client.is_writable());  // encrypted and passed on: the handler holds nothing
  EXPECT_EQ(p.client.pending_write_bytes(), 0u);
  EXPECT_EQ(p.server_app->received.size(), high / 2 + high);
}

TEST(TlsHandler, PlaintextHeldDuringAFailedHandshakeIsGivenBack) {
  TlsPair p(test_server_context(test_pki().self_signed), test_client_context());  // refused
  const std::size_t high = p.client.config().write_buffer_high_water_mark;
  p.client.write_outbound(ByteBuf::copy_of(pattern(2 * high)));
  EXPECT_FALSE(p.client.is_writable());
  p.pump();
  ASSERT_EQ(p.client_app->handshakes.size(), 1u);
  EXPECT_FALSE(p.client_app->handshakes[0].success());
  EXPECT_EQ(p.client.pending_write_bytes(), 0u);
}

TEST(TlsHandler, DataFlowsBothWaysAcrossAKeyUpdate) {
  TlsPair p(test_server_context(test_pki().localhost), test_client_context());
  p.pump();
  ASSERT_EQ(SSL_key_update(p.client_tls->native_handle(), SSL_KEY_UPDATE_REQUESTED), 1);
  p.client.write_outbound(ByteBuf::copy_of("after the update"));  // the KeyUpdate leaves first
  p.pump();
  EXPECT_EQ(p.server_app->received, "after the update");
  p.server.write_outbound(ByteBuf::copy_of("pong"));  // the server's own KeyUpdate, then data
  p.pump();
  EXPECT_EQ(p.client_app->received, "pong");
  p.client.write_outbound(ByteBuf::copy_of(" and again"));
  p.pump();
  EXPECT_EQ(p.server_app->received, "after the update and again");
  EXPECT_TRUE(p.client_app->errors.empty());
  EXPECT_TRUE(p.server_app->errors.empty());
}

TEST(TlsHandler, ClientResumesItsSession) {
  for (TlsVersion version : {TlsVersion::tls1_3, TlsVersion::tls1_2}) {
    SCOPED_TRACE(version == TlsVersion::tls1_3 ? "TLS 1.3" : "TLS 1.2");
    auto server_context = TlsContext::server()
                              .certificate_chain_pem(test_pki().localhost.cert_pem)
                              .private_key_pem(test_pki().localhost.key_pem)
                              .max_version(version)
                              .build();
    auto client_context = test_client_context();
    TlsPair first(server_context, client_context);
    first.pump();
    ASSERT_TRUE(first.client_tls->is_handshake_done());
    EXPECT_FALSE(first.client_app->handshakes.at(0).resumed);
    EXPECT_GE(client_context->cached_client_sessions(), 1u);
    TlsPair second(server_context, client_context);
    second.pump();
    ASSERT_TRUE(second.client_tls->is_handshake_done());
    EXPECT_TRUE(second.client_app->handshakes.at(0).resumed);
    EXPECT_TRUE(second.server_tls->session_resumed());
    second.client.write_outbound(ByteBuf::copy_of("resumed"));
    second.pump();
    EXPECT_EQ(second.server_app->received, "resumed");
  }
}

// A kept session goes to one connection only: two connections opened at once with one ticket kept
// cannot both resume it. Sharing one SSL_SESSION between connections on two loops is a data race.
TEST(TlsHandler, AKeptSessionResumesOneConnectionOnly) {
  auto server_context = TlsContext::server()
                            .certificate_chain_pem(test_pki().localhost.cert_pem)
                            .private_key_pem(test_pki().localhost.key_pem)
                            .build();
  ASSERT_EQ(SSL_CTX_set_num_tickets(server_context->native_handle(), 1), 1);
  auto client_context = test_client_context();
  TlsPair first(server_context, client_context);
  first.pump();
  ASSERT_TRUE(first.client_tls->is_handshake_done());
  ASSERT_EQ(client_context->cached_client_sessions(), 1u);
  TlsPair second(server_context, client_context);
  TlsPair third(server_context, client_context);
  EXPECT_EQ(client_context->cached_client_sessions(), 0u);  // taken by the second
  second.pump();
  third.pump();
  ASSERT_TRUE(second.client_tls->is_handshake_done());
  ASSERT_TRUE(third.client_tls->is_handshake_done());
  EXPECT_TRUE(second.client_tls->session_resumed());
  EXPECT_FALSE(third.client_tls->session_resumed());
  EXPECT_EQ(client_context->cached_client_sessions(), 2u);  // one new ticket from each
  EXPECT_NE(SSL_get_session(second.client_tls->native_handle()), SSL_get_session(third.client_tls->native_handle()));
}

// TLS 1.2 gives no new session on resumption; the one resumed is kept again, so every later
// connection resumes.
TEST(TlsHandler, ATls12SessionResumesEveryLaterConnection) {
  auto server_context = TlsContext::server()
                            .certificate_chain_pem(test_pki().localhost.cert_pem)
                            .private_key_pem(test_pki().localhost.key_pem)
                            .max_version(TlsVersion::tls1_2)
                            .build();
  auto client_context = test_client_context();
  for (int connection = 0; connection < 4; ++connection) {
    SCOPED_TRACE(connection);
    TlsPair pair(server_context, client_context);
    pair.pump();
    ASSERT_TRUE(pair.client_tls->is_handshake_done());
    EXPECT_EQ(pair.client_tls->session_resumed(), connection > 0);
    EXPECT_EQ(client_context->cached_client_sessions(), 1u);
  }
}

TEST(TlsHandler, RenegotiationIsRefused) {
  auto server_context = TlsContext::server()
                            .certificate_chain_pem(test_pki().localhost.cert_pem)
                            .private_key_pem(test_pki().localhost.key_pem)
                            .max_version(TlsVersion::tls1_2)
                            .build();
  TlsPair p(server_context, test_client_context());
  p.pump();
  ASSERT_EQ(p.client_app->handshakes.at(0).version, "TLSv1.2");
  EXPECT_EQ(SSL_renegotiate(p.client_tls->native_handle()), 0);  // SSL_OP_NO_RENEGOTIATION
  EXPECT_EQ(SSL_renegotiate(p.server_tls->native_handle()), 0);
  ERR_clear_error();
}

TEST(TlsHandler, NegotiatedProtocolCompletesThePipeline) {
  auto router = std::make_shared<http::Router>();
  router->get("/hello", [](Context& ctx, http::HttpRequest&) {
    ctx.write(http::HttpResponse(200).content_type("text/plain").body_view("Hello over TLS"));
  });
  TlsPair p(test_server_context(test_pki().localhost, {"http/1.1"}), test_client_context({"http/1.1"}));
  std::vector<std::string> configured;
  p.server.pipeline().remove("app");
  p.server.pipeline().add_last(
      "alpn", std::make_shared<ApplicationProtocolNegotiationHandler>(
                  "http/1.1", [&](Context& ctx, std::string_view protocol) {
                    configured.emplace_back(protocol);
                    ctx.pipeline().add_after(ctx.name(), "http", std::make_shared<http::ServerCodec>());
                    ctx.pipeline().add_after("http", "router", router);
                  }));
  p.client.write_outbound(ByteBuf::copy_of("GET /hello HTTP/1.1\r\nHost: localhost\r\n\r\n"));  // before the handshake
  p.pump();
  EXPECT_EQ(configured, std::vector<std::string>{"http/1.1"});
  EXPECT_EQ(p.server.pipeline().get("alpn"), nullptr);
  EXPECT_THAT(p.client_app->received, HasSubstr("HTTP/1.1 200 OK"));
  EXPECT_THAT(p.client_app->received, HasSubstr("Hello over TLS"));
}

// ---- TlsContext --------------------------------------------------------------------------------

TEST(TlsContext, BadSettingsAreTypedErrors) {
  const auto& pki = test_pki();
  EXPECT_THROW(TlsContext::server().build(), std::invalid_argument);
  EXPECT_THROW(TlsContext::server().certificate_chain_pem(pki.localhost.cert_pem).build(), std::invalid_argument);
  EXPECT_THROW(TlsContext::client().session_cache_size(10).build(), std::invalid_argument);
  EXPECT_THROW(TlsContext::client().application_protocols({""}).build(), std::invalid_argument);
  try {
    TlsContext::server().certificate_chain_pem("not a certificate").private_key_pem(pki.localhost.key_pem).build();
    ADD_FAILURE() << "a bad PEM was accepted";
  } catch (const TlsError& e) {
    EXPECT_THAT(std::string(e.what()), HasSubstr("certificate chain PEM"));
    EXPECT_FALSE(e.reason().empty());
  }
  try {
    TlsContext::server().certificate_chain_pem(pki.localhost.cert_pem).private_key_pem(pki.other_host.key_pem).build();
    ADD_FAILURE() << "a key for another certificate was accepted";
  } catch (const TlsError& e) {
    EXPECT_THAT(std::string(e.what()), HasSubstr("does not match"));
    EXPECT_FALSE(e.reason().empty());
  }
  EXPECT_THROW(TlsContext::server().certificate_chain_file("/nonexistent/cert.pem").private_key_file("/nonexistent/key.pem").build(),
               TlsError);
  EXPECT_THROW(TlsContext::client().cipher_list("NOT-A-CIPHER").build(), TlsError);
  EXPECT_THROW(TlsContext::client().trust_pem("nothing").build(), TlsError);
}

TEST(TlsContext, FromFiles) {
  const auto& pki = test_pki();
  auto server_context = TlsContext::server()
                            .certificate_chain_file(test::write_temp_file(pki.localhost.cert_pem + pki.ca.cert_pem, ".pem"))
                            .private_key_file(test::write_temp_file(pki.localhost.key_pem, ".pem"))
                            .build();
  auto client_context = TlsContext::client().trust_file(test::write_temp_file(pki.ca.cert_pem, ".pem")).build();
  TlsPair p(server_context, client_context);
  p.pump();
  EXPECT_TRUE(p.client_tls->is_handshake_done());
}

}  // namespace
}  // namespace weft
