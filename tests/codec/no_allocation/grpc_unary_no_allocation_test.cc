// A warm unary gRPC call allocates nothing from the general heap on the server: the stream's channel,
// its pipeline, the call and its coroutines come from per-thread pools once the first calls have
// filled them. Counts global operator new calls made on this thread while the server codec takes a
// request and answers it; its own executable, because it replaces operator new for the whole program.

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "support/allocation_counter.h"
#include "support/h2_client.h"
#include "weft/channel/embedded_channel.h"
#include "weft/codec/http2/server_codec.h"
#include "weft/grpc/service_registry.h"

namespace weft::grpc {
namespace {

// Between the codec and the EmbeddedChannel, which keeps each buffer written in a heap box of its
// own: what the test's transport does is not the server's to count.
class Uncounted final : public OutboundHandler<ByteBuf, ByteBuf> {
 public:
  void write(Context& ctx, ByteBuf&& bytes) override {
    const test::Uncounted harness;
    ctx.write(std::move(bytes));
  }
};

struct Server {
  Server() {
    ServiceRegistry services;
    services.add_unary("/alloc.Test/Echo", [](ServerCall&, ByteBuf request) -> Task<ByteBuf> { co_return request; });
    http2::Settings settings;
    settings.stream_initializer = services.stream_chooser();
    ch.pipeline().add_last("uncounted", std::make_shared<Uncounted>());
    ch.pipeline().add_last("http2", std::make_shared<http2::ServerCodec>(std::move(settings)));
    written.reserve(64);
  }

  // One call, start to end; returns the operator new calls the server made for it.
  long call() {
    const std::int32_t id =
        client.request_streamed("POST", "/alloc.Test/Echo", {{"content-type", "application/grpc"}, {"te", "trailers"}});
    client.send(id, std::string("\0\0\0\0\5hello", 10));
    client.finish(id);
    ByteBuf request = ByteBuf::copy_of(client.take_output());
    const long allocations = test::allocations_of([&] {
      ch.write_inbound(std::move(request));
      ch.run_pending();
      while (auto b = ch.read_outbound<ByteBuf>()) written.push_back(std::move(*b));
    });
    for (const ByteBuf& b : written) client.receive(b.to_string());
    written.clear();
    const test::H2Response& r = client.response(id);
    EXPECT_TRUE(r.closed) << "stream " << id;
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body, std::string("\0\0\0\0\5hello", 10));
    EXPECT_EQ(r.trailers, (std::vector<std::pair<std::string, std::string>>{{"grpc-status", "0"}}));
    return allocations;
  }

  EmbeddedChannel ch;
  test::H2Client client;
  std::vector<ByteBuf> written;
};

TEST(GrpcUnaryNoAllocationTest, AWarmUnaryCallAllocatesNothingFromTheHeap) {
  Server server;
  for (int i = 0; i < 20; ++i) server.call();  // the pools, the HPACK tables and the buffers warm up
  for (int i = 0; i < 5; ++i) EXPECT_EQ(server.call(), 0) << "call " << i;
}

}  // namespace
}  // namespace weft::grpc
