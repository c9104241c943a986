// Code protoc-gen-weft generated from tests/grpc/protos (weft_grpc_generate in CMakeLists.txt),
// served and called by weft on every transport: each call shape through the Service (coroutines)
// and the CallbackService (responders and reactors), the stub's coroutine and callback forms,
// messages of another package and nested ones, a .proto without a package, the generated default
// (UNIMPLEMENTED), and requests that break a method's shape or do not parse. grpc++ against the
// generated code is grpc_interop_test.cc's (bench.proto).

// Built only with the tests' generated protos (protobuf and protoc-gen-weft at configure time).
#ifdef WEFT_HAVE_TEST_PROTOS
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "no_package.weft.h"
#include "support/transports.h"
#include "weft/weft.h"
#include "weft_test/shapes.weft.h"

namespace weft::grpc {
namespace {

namespace shapes = ::weft_test::shapes;
using Shapes = shapes::Shapes;
using ::weft_test::notes::Note;

// The descriptors are constants of the .proto's names and shapes.
static_assert(Shapes::kName == "weft_test.shapes.Shapes");
static_assert(Shapes::kMethods.size() == 6);
static_assert(Shapes::Methods::Shout.path == "/weft_test.shapes.Shapes/Shout");
static_assert(Shapes::Methods::Double.shape == CallShape::unary);
static_assert(Shapes::Methods::Count.shape == CallShape::server_streaming);
static_assert(Shapes::Methods::Sum.shape == CallShape::client_streaming);
static_assert(Shapes::Methods::Shout.shape == CallShape::bidi_streaming);
static_assert(shapes::Empty::kMethods.empty());
static_assert(::PlainPinger::Methods::Echo.path == "/PlainPinger/Echo");

shapes::Number number(std::int64_t value) {
  shapes::Number n;
  n.set_value(value);
  return n;
}

Note note(std::string text, int sequence) {
  Note n;
  n.set_text(std::move(text));
  n.set_sequence(sequence);
  return n;
}

std::string upper(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::toupper(c); });
  return text;
}

class CoroutineShapes final : public Shapes::Service {
 public:
  Task<shapes::Number> Double(ServerCall&, shapes::Number request) override { co_return number(request.value() * 2); }
  Task<> Count(ServerCall&, shapes::CountRequest request, ServerWriter<shapes::Number>& writer) override {
    for (int i = 0; i < request.count(); ++i) co_await writer.write(number(request.start() + i));
  }
  Task<shapes::Number> Sum(ServerCall&, ServerReader<shapes::Number>& reader) override {
    std::int64_t sum = 0;
    while (std::optional<shapes::Number> n = co_await reader.read()) sum += n->value();
    co_return number(sum);
  }
  Task<> Shout(ServerCall&, ServerReaderWriter<Note, Note>& stream) override {
    while (std::optional<Note> heard = co_await stream.read()) {
      co_await stream.write(note(upper(heard->text()), heard->sequence()));
    }
  }
  Task<shapes::Outer_Inner_Deeper> Deepen(ServerCall&, shapes::Outer_Inner request) override {
    shapes::Outer_Inner_Deeper deeper;
    deeper.set_text(request.text() + "!");
    deeper.set_depth(2);
    co_return deeper;
  }
};

// Count as a reactor: reads the request, then writes each number once the last one left.
class CountReactor final : public ServerReactor {
 public:
  explicit CountReactor(ServerStream stream) : stream_(std::move(stream)) { stream_.start_read(); }
  void on_read_done(std::optional<ByteBuf> message) override {
    if (!message) return stream_.finish(Status(StatusCode::invalid_argument, "no request"));
    request_ = parse_message<shapes::CountRequest>(*message);
    next();
  }
  void on_write_done(bool ok) override {
    if (ok) next();
  }

 private:
  void next() {
    if (sent_ == request_.count()) return stream_.finish(Status());
    stream_.start_write(serialize_message(number(request_.start() + sent_++)));
  }
  ServerStream stream_;
  shapes::CountRequest request_;
  int sent_ = 0;
};

// Double and Count in callback form; Sum, Shout, Deepen and Unimplemented left to the defaults.
class CallbackShapes final : public Shapes::CallbackService {
 public:
  void Double(ServerCall&, shapes::Number request, TypedUnaryResponder<shapes::Number> responder) override {
    responder.respond(number(request.value() * 2));
  }
  std::shared_ptr<ServerReactor> Count(ServerStream stream) override {
    return std::make_shared<CountReactor>(std::move(stream));
  }
};

class Pinger final : public ::PlainPinger::Service {
 public:
  Task<::Ping> Echo(ServerCall&, ::Ping request) override { co_return request; }
};

std::string code_of(const Status& status) { return std::string(status_code_name(status.code)); }

// Every shape through the stub's coroutine forms; "OK" or what went wrong.
Task<std::string> call_every_shape(Shapes::Stub& stub) {
  TypedUnaryResult<shapes::Number> doubled = co_await stub.Double(number(21));
  if (!doubled.status.ok() || !doubled.message || doubled.message->value() != 42) co_return "Double";

  shapes::CountRequest count;
  count.set_start(10);
  count.set_count(5);
  ClientReader<shapes::Number> counted = stub.Count(count);
  std::vector<std::int64_t> numbers;
  while (std::optional<shapes::Number> n = co_await counted.read()) numbers.push_back(n->value());
  const Status count_status = co_await counted.finish();
  if (!count_status.ok() || numbers != std::vector<std::int64_t>{10, 11, 12, 13, 14}) co_return "Count";

  ClientWriter<shapes::Number, shapes::Number> summed = stub.Sum();
  for (int i = 1; i <= 100; ++i) {
    if (!co_await summed.write(number(i))) co_return "Sum write " + std::to_string(i);
  }
  TypedUnaryResult<shapes::Number> sum = co_await summed.finish();
  if (!sum.status.ok() || !sum.message || sum.message->value() != 5050) co_return "Sum: " + code_of(sum.status);

  ClientReaderWriter<Note, Note> shouting = stub.Shout();
  for (int i = 0; i < 3; ++i) {
    co_await shouting.write(note("note " + std::to_string(i), i));
    std::optional<Note> heard = co_await shouting.read();
    if (!heard || heard->text() != "NOTE " + std::to_string(i) || heard->sequence() != i)
      co_return "Shout " + std::to_string(i);
  }
  co_await shouting.writes_done();
  if (std::optional<Note> extra = co_await shouting.read()) co_return "Shout: a note after the half-close";
  const Status shout_status = co_await shouting.finish();
  if (!shout_status.ok()) co_return "Shout: " + code_of(shout_status);

  shapes::Outer_Inner inner;
  inner.set_text("in");
  TypedUnaryResult<shapes::Outer_Inner_Deeper> deeper = co_await stub.Deepen(inner);
  if (!deeper.status.ok() || !deeper.message || deeper.message->text() != "in!" || deeper.message->depth() != 2) {
    co_return "Deepen";
  }

  TypedUnaryResult<shapes::Number> unimplemented = co_await stub.Unimplemented(number(1));
  if (unimplemented.status.code != StatusCode::unimplemented ||
      unimplemented.status.message.find("/weft_test.shapes.Shapes/Unimplemented") == std::string::npos) {
    co_return "Unimplemented: " + code_of(unimplemented.status) + " " + unimplemented.status.message;
  }
  co_return "OK";
}

// The callback service: Double and Count answer; the shapes left to the defaults are UNIMPLEMENTED.
Task<std::string> call_callback_service(Shapes::Stub& stub) {
  TypedUnaryResult<shapes::Number> doubled = co_await stub.Double(number(-4));
  if (!doubled.status.ok() || !doubled.message || doubled.message->value() != -8) co_return "Double";

  shapes::CountRequest count;
  count.set_start(1);
  count.set_count(3);
  ClientReader<shapes::Number> counted = stub.Count(count);
  std::vector<std::int64_t> numbers;
  while (std::optional<shapes::Number> n = co_await counted.read()) numbers.push_back(n->value());
  const Status count_status = co_await counted.finish();
  if (!count_status.ok() || numbers != std::vector<std::int64_t>{1, 2, 3}) co_return "Count: " + code_of(count_status);

  ClientWriter<shapes::Number, shapes::Number> summed = stub.Sum();
  co_await summed.write(number(1));
  TypedUnaryResult<shapes::Number> sum = co_await summed.finish();
  if (sum.status.code != StatusCode::unimplemented) co_return "Sum: " + code_of(sum.status);

  ClientReaderWriter<Note, Note> shouting = stub.Shout();
  co_await shouting.writes_done();
  if (co_await shouting.read()) co_return "Shout: a note";
  const Status shout_status = co_await shouting.finish();
  if (shout_status.code != StatusCode::unimplemented) co_return "Shout: " + code_of(shout_status);

  TypedUnaryResult<shapes::Number> unimplemented = co_await stub.Unimplemented(number(1));
  if (unimplemented.status.code != StatusCode::unimplemented)
    co_return "Unimplemented: " + code_of(unimplemented.status);
  co_return "OK";
}

// Requests that break the method's contract, sent as raw bytes past the stub.
Task<std::string> call_with_bad_requests(Client& client) {
  ByteBuf garbage = ByteBuf::copy_of("\xff\xff\xff");  // a field key whose varint never ends
  UnaryResult unparsed = co_await client.unary(std::string(Shapes::Methods::Double.path), std::move(garbage));
  if (unparsed.status.code != StatusCode::internal) co_return "unparsed: " + code_of(unparsed.status);

  // Two requests to a server-streaming method: INTERNAL, and no response.
  ClientCall twice = client.call(Shapes::Methods::Count.path);
  shapes::CountRequest count;
  count.set_count(1);
  co_await twice.write(serialize_message(count));
  co_await twice.write(serialize_message(count));
  co_await twice.writes_done();
  if (co_await twice.read()) co_return "twice: a response";
  const Status twice_status = co_await twice.finish();
  if (twice_status.code != StatusCode::internal) co_return "twice: " + code_of(twice_status);
  co_return "OK";
}

Task<std::string> ping(std::shared_ptr<Client> client) {
  ::PlainPinger::Stub stub(std::move(client));
  ::Ping request;
  request.set_text("hello");
  TypedUnaryResult<::Ping> echoed = co_await stub.Echo(request);
  co_return echoed.status.ok() && echoed.message&& echoed.message->text() == "hello" ? "OK" : code_of(echoed.status);
}

class GrpcGeneratedTest : public test::TransportTest {
 protected:
  void serve(ServiceRegistry services) {
    services_ = std::move(services);
    http2::Settings settings = services_.http2_settings();
    server_ = ServerBootstrap()
                  .group(loops_)
                  .child_handler([settings](Channel& ch) {
                    ch.pipeline().add_last("http2", std::make_shared<http2::ServerCodec>(settings));
                  })
                  .bind(SocketAddress::loopback(0))
                  .get();
    client_ = Client::connect(loops_, SocketAddress::loopback(server_->local_address().port())).get();
  }
  void TearDown() override {
    if (client_) client_->close().wait();
    if (server_) server_->close().wait();
  }
  template <class T>
  T run(Task<T> task) {
    Future<T> done = spawn(client_->loop(), std::move(task));
    EXPECT_TRUE(done.wait_for(std::chrono::seconds(60))) << "the calls did not end";
    return done.get();
  }

  // A server loop and a client loop; on the blocking transport a loop per channel.
  EventLoopGroup loops_{transport(), loops(2, 3)};
  ServiceRegistry services_;
  ChannelPtr server_;
  std::shared_ptr<Client> client_;
};

TEST_P(GrpcGeneratedTest, EveryShapeIsServedByTheCoroutineServiceAndCalledByTheStub) {
  ServiceRegistry services;
  Shapes::Service::add_to(services, std::make_shared<CoroutineShapes>());
  ::PlainPinger::Service::add_to(services, std::make_shared<Pinger>());
  shapes::Empty::Service::add_to(services, std::make_shared<shapes::Empty::Service>());
  EXPECT_EQ(services.size(), Shapes::kMethods.size() + 1);
  serve(std::move(services));
  Shapes::Stub stub(client_);
  EXPECT_EQ(run(call_every_shape(stub)), "OK");
  EXPECT_EQ(run(ping(client_)), "OK");
  EXPECT_EQ(run(call_with_bad_requests(*client_)), "OK");

  // The stub's callback form, from this thread.
  std::promise<std::string> answered;
  stub.Double(number(5), CallOptions{}, [&answered](TypedUnaryResult<shapes::Number> r) {
    answered.set_value(r.status.ok() && r.message ? std::to_string(r.message->value()) : code_of(r.status));
  });
  std::future<std::string> answer = answered.get_future();
  ASSERT_EQ(answer.wait_for(std::chrono::seconds(60)), std::future_status::ready);
  EXPECT_EQ(answer.get(), "10");
}

TEST_P(GrpcGeneratedTest, EveryShapeIsCalledByAStubOverABalancedChannel) {
  ServiceRegistry services;
  Shapes::Service::add_to(services, std::make_shared<CoroutineShapes>());
  serve(std::move(services));
  if (is_blocking()) {
    // A ClientChannel keeps its connections on one loop, which the blocking transport does not allow.
    EXPECT_THROW(ClientChannel::create(loops_.at(0), "ipv4:127.0.0.1:1"), std::invalid_argument);
    return;
  }
  const std::string target = "ipv4:" + server_->local_address().to_string() + "," +
                             server_->local_address().to_string() + "," +
                             server_->local_address().to_string();  // the same server, listed 3 times: once
  auto channel = ClientChannel::create(client_->loop(), target, {});
  Shapes::Stub stub(channel);
  EXPECT_EQ(stub.caller().channel(), channel.get());
  EXPECT_EQ(run(call_every_shape(stub)), "OK");
  channel->close().wait();
}

// The typed writers' compressed branch: a call that compresses its responses (set_compression) sends
// them through ServerCall::write, which compresses; the others are framed as they are serialized.
class CompressingShapes final : public Shapes::Service {
 public:
  Task<> Count(ServerCall& call, shapes::CountRequest request, ServerWriter<shapes::Number>& writer) override {
    call.set_compression(CompressionOptions(Compression::gzip, -1, 0));
    for (int i = 0; i < request.count(); ++i) co_await writer.write(number(request.start() + i));
  }
  Task<> Shout(ServerCall& call, ServerReaderWriter<Note, Note>& stream) override {
    call.set_compression(CompressionOptions(Compression::gzip, -1, 0));
    while (std::optional<Note> heard = co_await stream.read()) {
      co_await stream.write(note(upper(heard->text()), heard->sequence()));
    }
  }
};

// What the client read: each message, "(z)" after one that came compressed, then both statuses.
Task<std::string> read_compressed_responses(Client& client) {
  std::string seen;
  ClientCall count = client.call(Shapes::Methods::Count.path);
  shapes::CountRequest request;
  request.set_start(10);
  request.set_count(3);
  co_await count.write(serialize_message(request));
  co_await count.writes_done();
  while (std::optional<ByteBuf> m = co_await count.read()) {
    seen += std::to_string(parse_message<shapes::Number>(*m).value()) + " ";
  }
  const Status counted = co_await count.finish();
  // A note gzip shrinks (tiny numbers do not: they go uncompressed, flag 0, as grpc++ sends them).
  ClientCall shout = client.call(Shapes::Methods::Shout.path);
  co_await shout.write(serialize_message(note(std::string(2000, 'a'), 1)));
  co_await shout.writes_done();
  while (std::optional<ByteBuf> m = co_await shout.read()) {
    const Note echoed = parse_message<Note>(*m);
    seen += (echoed.text() == std::string(2000, 'A') ? "AAA..." : "a different note") +
            std::string(shout.last_read_compressed() ? "(z) " : " ");
  }
  const Status shouted = co_await shout.finish();
  co_return seen + code_of(counted) + " " + code_of(shouted);
}

TEST_P(GrpcGeneratedTest, TheTypedWritersCompressWhenTheCallDoes) {
  ServiceRegistry services;
  Shapes::Service::add_to(services, std::make_shared<CompressingShapes>());
  serve(std::move(services));
  EXPECT_EQ(run(read_compressed_responses(*client_)), "10 11 12 AAA...(z) OK OK");
}

// A client reactor on a generated bidi method: one note out, its echo back, then the status.
class ShoutOnce final : public ClientReactor {
 public:
  void start() {
    stream().start_write(serialize_message(note("once", 7)));
    stream().writes_done();
    stream().start_read();
  }
  void on_read_done(std::optional<ByteBuf> message) override {
    if (!message) return;
    heard = parse_message<Note>(*message).text();
    stream().start_read();
  }
  void on_done(const Status& status) override { done.set_value(code_of(status) + " " + heard); }
  std::string heard;
  std::promise<std::string> done;
};

// Shout through the stub's reactor form: "<status> <what the server shouted back>".
std::string shout_once(Shapes::Stub& stub) {
  auto reactor = std::make_shared<ShoutOnce>();
  std::future<std::string> done = reactor->done.get_future();
  stub.Shout(CallOptions{}, reactor);
  reactor->start();
  if (done.wait_for(std::chrono::seconds(60)) != std::future_status::ready) return "the call did not end";
  return done.get();
}

TEST_P(GrpcGeneratedTest, TheStubStartsAReactorOnAStreamingMethod) {
  ServiceRegistry services;
  Shapes::Service::add_to(services, std::make_shared<CoroutineShapes>());
  serve(std::move(services));
  Shapes::Stub stub(client_);
  EXPECT_EQ(shout_once(stub), "OK ONCE");
}

TEST_P(GrpcGeneratedTest, TheStubStartsAReactorOverABalancedChannel) {
  ServiceRegistry services;
  Shapes::Service::add_to(services, std::make_shared<CoroutineShapes>());
  serve(std::move(services));
  if (is_blocking()) GTEST_SKIP() << "a ClientChannel is refused there (EveryShapeIsCalledByAStubOverABalancedChannel)";
  auto channel = ClientChannel::create(client_->loop(), "ipv4:" + server_->local_address().to_string());
  Shapes::Stub stub(channel);
  EXPECT_EQ(shout_once(stub), "OK ONCE");
  channel->close().wait();
}

TEST_P(GrpcGeneratedTest, TheCallbackServiceAnswersAndItsDefaultsAreUnimplemented) {
  ServiceRegistry services;
  Shapes::CallbackService::add_to(services, std::make_shared<CallbackShapes>());
  serve(std::move(services));
  Shapes::Stub stub(client_);
  EXPECT_EQ(run(call_callback_service(stub)), "OK");
}

WEFT_ON_EVERY_TRANSPORT(GrpcGeneratedTest);

}  // namespace
}  // namespace weft::grpc
#endif  // WEFT_HAVE_TEST_PROTOS
