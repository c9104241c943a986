// grpc::HealthService (grpc.health.v1.Health): its hand-written protobuf codec against the wire
// format's rules (unknown fields of every wire type skipped, broken messages refused), and the service
// served by weft's HTTP/2 server to weft's gRPC client on every transport: Check (a set service, "",
// NOT_FOUND, INTERNAL for a request that does not parse), Watch (the status at once, SERVICE_UNKNOWN
// then the status once set, changes made on other threads, only changes, latest wins for a reader that
// is behind), and enter_shutdown() or a drain alone: open watches get NOT_SERVING and end OK, so a drain
// is not held.

#include "weft/grpc/health.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "support/h2c_server.h"
#include "support/transports.h"
#include "weft/channel/drain.h"
#include "weft/grpc/client.h"
#include "weft/grpc/service_registry.h"
#include "weft/weft.h"

using namespace std::chrono_literals;

namespace weft::grpc {
namespace {

std::string text(const ByteBuf& b) { return std::string(b.view()); }

std::string name(std::optional<ServingStatus> status) {
  return status ? std::string(serving_status_name(*status)) : "does not parse";
}

TEST(HealthCodec, EncodesAsProtobufDoes) {
  EXPECT_EQ(text(health_encode_request("")), "");  // proto3 leaves the default out
  EXPECT_EQ(text(health_encode_request("pkg.Echo")), std::string("\x0a\x08pkg.Echo", 10));
  EXPECT_EQ(text(health_encode_request(std::string(200, 's'))).substr(0, 3), "\x0a\xc8\x01");  // a 2-byte length
  EXPECT_EQ(text(health_encode_response(ServingStatus::unknown)), "");
  EXPECT_EQ(text(health_encode_response(ServingStatus::serving)), "\x08\x01");
  EXPECT_EQ(text(health_encode_response(ServingStatus::service_unknown)), "\x08\x03");
  for (auto s :
       {ServingStatus::unknown, ServingStatus::serving, ServingStatus::not_serving, ServingStatus::service_unknown}) {
    EXPECT_EQ(health_decode_response(health_encode_response(s).view()), s);
  }
  EXPECT_EQ(health_decode_request(health_encode_request("a.B").view()), "a.B");
}

TEST(HealthCodec, DecoderSkipsUnknownFieldsOfEveryWireTypeAndTakesTheLastValue) {
  using namespace std::string_literals;
  const std::string unknown =
      "\x10\x96\x01"s                          // field 2, varint (150)
      "\x19\x01\x02\x03\x04\x05\x06\x07\x08"s  // field 3, fixed64
      "\x25\x01\x02\x03\x04"s                  // field 4, fixed32
      "\x2a\x03xyz"s                           // field 5, length-delimited
      "\x33\x08\x07\x0a\x01q\x34"s             // field 6, a group holding fields 1 and 1
      "\x08\x05"s                              // field 1 as a varint: an unknown field too
      "\xf8\xff\xff\xff\x0f\x00"s;             // field 2^29-1 (the largest), varint
  EXPECT_EQ(health_decode_request(unknown +
                                  "\x0a\x01"
                                  "a" +
                                  unknown +
                                  "\x0a\x02"
                                  "bc" +
                                  unknown),
            "bc");
  EXPECT_EQ(health_decode_request(unknown), "");
  EXPECT_EQ(name(health_decode_response(unknown.substr(0, unknown.size() - 8) + "\x08\x02" + "\x2a\x00"s)),
            "NOT_SERVING");
  EXPECT_EQ(name(health_decode_response("\x08\x01\x08\x02"s)), "NOT_SERVING");  // the last one wins
  EXPECT_EQ(name(health_decode_response("\x0a\x01\x01"s)), "UNKNOWN");  // field 1 length-delimited: unknown field
}

TEST(HealthCodec, DecoderRefusesWhatIsNotAProtobufMessage) {
  using namespace std::string_literals;
  for (const std::string& bad : {"\x0a"s,  // a tag without its length
                                 "\x0a\x05"
                                 "abc"s,                    // a length past the end
                                 "\x0a\x80"s,               // a length cut short
                                 "\x00\x01"s,               // field 0
                                 "\x0c"s,                   // an end group without its start
                                 "\x0b\x0a\x00"s,           // a group never ended
                                 "\x0b\x14"s,               // a group ended by another field's end
                                 "\x0e\x00"s, "\x0f\x00"s,  // wire types 6 and 7
                                 "\x11\x01\x02"s,           // a fixed64 cut short
                                 "\x10\xff\xff\xff\xff\xff\xff\xff\xff\xff\x7f"s}) {  // a varint past 64 bits
    EXPECT_EQ(health_decode_request(bad), std::nullopt) << testing::PrintToString(bad);
    EXPECT_EQ(health_decode_response(bad), std::nullopt) << testing::PrintToString(bad);
  }
}

Task<std::string> check(Client& client, ByteBuf request) {
  UnaryResult r = co_await client.unary(std::string(HealthService::kCheckMethod), std::move(request));
  if (r.status.code != StatusCode::ok) co_return std::string(status_code_name(r.status.code));
  co_return name(health_decode_response(r.message.view()));
}

Task<> open_watch(Client& client, std::optional<ClientCall>& call, ByteBuf request) {
  call.emplace(client.call(std::string(HealthService::kWatchMethod)));
  co_await call->write(std::move(request));
  co_await call->writes_done();
}

// The watch's next status, or "end:<status code>" once it ended.
Task<std::string> next(ClientCall& call) {
  std::optional<ByteBuf> message = co_await call.read();
  if (!message) {
    Status status = co_await call.finish();
    co_return "end:" + std::string(status_code_name(status.code));
  }
  co_return name(health_decode_response(message->view()));
}

Task<std::string> flap(Client& client) {
  UnaryResult r = co_await client.unary("/test.Health/Flap", ByteBuf());
  co_return std::string(status_code_name(r.status.code));
}

Task<> drop(std::optional<ClientCall>& call) {
  call.reset();  // cancels it if open
  co_return;
}

class HealthServiceTest : public test::TransportTest {
 protected:
  void SetUp() override {
    ServiceRegistry services;
    health_.add_to(services);
    // On the connection's loop, the loop of its Watch calls: 1,000 changes in one turn.
    services.add_unary("/test.Health/Flap", [health = &health_](ServerCall&, ByteBuf) -> Task<ByteBuf> {
      for (int i = 0; i < 1000; ++i) {
        health->set_status("flapping", i % 2 == 0 ? ServingStatus::serving : ServingStatus::not_serving);
      }
      co_return ByteBuf();
    });
    server_ = test::serve_h2c(loops_, services.http2_settings());
    client_ = Client::connect(loops_, server_->local_address()).get();
  }
  void TearDown() override {
    for (auto& watch : watches_) run(drop(watch));
    if (client_) client_->close().wait();
    if (server_) server_->close().wait();
  }

  template <class T>
  T run(Task<T> task) {
    Future<T> done = spawn(client_->loop(), std::move(task));
    EXPECT_TRUE(done.wait_for(60s)) << "the call did not end";
    return done.get();
  }
  std::string check(std::string_view service) { return run(grpc::check(*client_, health_encode_request(service))); }
  std::string next(std::size_t watch) { return run(grpc::next(*watches_[watch])); }
  void watch(std::size_t i, std::string_view service) {
    run(open_watch(*client_, watches_[i], health_encode_request(service)));
  }

  // Two watches ("" SERVING, "pkg.Down" NOT_SERVING), each read at its first status; then the drain.
  Future<DrainReport> watch_two_and_drain() {
    health_.set_status("pkg.Down", ServingStatus::not_serving);
    watch(0, "");
    watch(1, "pkg.Down");
    EXPECT_EQ(next(0), "SERVING");
    EXPECT_EQ(next(1), "NOT_SERVING");
    return drain_server(server_, 60s);
  }
  // Each watch got NOT_SERVING (once) and ended OK, and the drain closed nothing at its deadline.
  void expect_watches_ended_and_drained(Future<DrainReport>& drained) {
    EXPECT_EQ(next(0), "NOT_SERVING");
    EXPECT_EQ(next(0), "end:OK");
    EXPECT_EQ(next(1), "end:OK");
    ASSERT_TRUE(drained.wait_for(60s));
    const DrainReport report = drained.get();
    EXPECT_EQ(report.open, 1u);
    EXPECT_EQ(report.forced, 0u);
    server_ = nullptr;  // drained: closed already
  }

  HealthService health_;
  EventLoopGroup loops_{transport(), loops(2, 4)};
  ChannelPtr server_;
  std::shared_ptr<Client> client_;
  std::optional<ClientCall> watches_[3];
};

TEST_P(HealthServiceTest, CheckAnswersTheStatusNotFoundForAnUnknownServiceAndInternalForABrokenRequest) {
  EXPECT_EQ(check(""), "SERVING");
  health_.set_status("pkg.Echo", ServingStatus::not_serving);
  EXPECT_EQ(check("pkg.Echo"), "NOT_SERVING");
  health_.set_status("", ServingStatus::not_serving);
  EXPECT_EQ(check(""), "NOT_SERVING");
  EXPECT_EQ(check("pkg.Nope"), "NOT_FOUND");
  EXPECT_EQ(run(grpc::check(*client_, ByteBuf::copy_of(std::string_view("\x0a\x05"
                                                                        "ab")))),
            "INTERNAL");
  run(open_watch(*client_, watches_[0], ByteBuf::copy_of(std::string_view("\x0c"))));
  EXPECT_EQ(next(0), "end:INTERNAL");
  EXPECT_THROW(health_.set_status("x", ServingStatus::service_unknown), std::invalid_argument);
}

TEST_P(HealthServiceTest, WatchSendsTheStatusAtOnceThenEachChangeMadeOnAnyThread) {
  watch(0, "pkg.Later");
  watch(1, "");
  EXPECT_EQ(next(0), "SERVICE_UNKNOWN");
  EXPECT_EQ(next(1), "SERVING");
  std::thread([this] { health_.set_status("pkg.Later", ServingStatus::serving); }).join();
  EXPECT_EQ(next(0), "SERVING");
  health_.set_status("pkg.Later", ServingStatus::serving);  // no change: nothing sent
  std::thread([this] { health_.set_status("pkg.Later", ServingStatus::not_serving); }).join();
  EXPECT_EQ(next(0), "NOT_SERVING");
  health_.set_status("", ServingStatus::not_serving);
  EXPECT_EQ(next(1), "NOT_SERVING");
  // A watch the client cancels leaves; changes after it go to the others.
  run(drop(watches_[0]));
  health_.set_status("pkg.Later", ServingStatus::serving);
  health_.set_status("", ServingStatus::serving);
  EXPECT_EQ(next(1), "SERVING");
  EXPECT_EQ(check("pkg.Later"), "SERVING");
}

// 1,000 changes in one turn of the watch's loop: the first is written, the rest wait as one status (the
// newest), written once that write is done -- not 999 more messages, and nothing queued after.
TEST_P(HealthServiceTest, AWatchBehindGetsTheNewestStatusNotEveryChange) {
  watch(0, "flapping");
  EXPECT_EQ(next(0), "SERVICE_UNKNOWN");
  ASSERT_EQ(run(flap(*client_)), "OK");
  EXPECT_EQ(next(0), "SERVING");      // the first change
  EXPECT_EQ(next(0), "NOT_SERVING");  // the last
  health_.set_status("flapping", ServingStatus::serving);
  EXPECT_EQ(next(0), "SERVING");
}

// enter_shutdown() while the server drains: each watch gets NOT_SERVING (once) and ends OK, a watch
// made later too, set_status() is ignored, and the drain ends with no connection left to force.
TEST_P(HealthServiceTest, EnterShutdownEndsEveryWatchSoTheDrainIsNotHeld) {
  Future<DrainReport> drained = watch_two_and_drain();
  std::thread([this] { health_.enter_shutdown(); }).join();
  EXPECT_TRUE(health_.shutting_down());
  expect_watches_ended_and_drained(drained);
  health_.set_status("", ServingStatus::serving);
  EXPECT_EQ(health_.status(""), ServingStatus::not_serving);
}

// A drain without enter_shutdown(): the watches of the connection it ends get NOT_SERVING (once) and
// end OK (the codec tells each call its connection drains), so the drain is not held until its
// deadline; the service's own statuses are not changed.
TEST_P(HealthServiceTest, ADrainEndsTheWatchesOfItsConnectionWithoutEnterShutdown) {
  Future<DrainReport> drained = watch_two_and_drain();
  expect_watches_ended_and_drained(drained);
  EXPECT_FALSE(health_.shutting_down());
  EXPECT_EQ(health_.status(""), ServingStatus::serving);
}

// A watch that starts once the service is shutting down ends at once.
TEST_P(HealthServiceTest, AWatchAfterShutdownGetsNotServingAndEnds) {
  health_.enter_shutdown();
  watch(0, "pkg.Unknown");
  EXPECT_EQ(next(0), "NOT_SERVING");
  EXPECT_EQ(next(0), "end:OK");
  EXPECT_EQ(check(""), "NOT_SERVING");
}

WEFT_ON_EVERY_TRANSPORT(HealthServiceTest);

}  // namespace
}  // namespace weft::grpc
