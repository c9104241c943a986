// The router must not allocate on its exact-path hot path, and match() must not allocate at all:
// counts global operator new calls made on this thread. Its own executable, because it replaces
// operator new for the whole program.

#include <gtest/gtest.h>

#include <string>

#include "support/allocation_counter.h"
#include "weft/channel/embedded_channel.h"
#include "weft/codec/http1/router.h"
#include "weft/codec/http1/server_codec.h"

namespace weft::http {
namespace {

using test::allocations_of;

std::shared_ptr<Router> make_router() {
  auto router = std::make_shared<Router>();
  router->get("/plaintext", [](Context& ctx, HttpRequest&) { ctx.write(HttpResponse(200).body_view("Hello, World!")); });
  router->get("/users/{id}/posts/{post}", [](Context& ctx, HttpRequest&, const RouteParams&) {
    ctx.write(HttpResponse(200).body_view("post"));
  });
  router->post("/items/{id}", [](Context&, HttpRequest&) {});
  return router;
}

TEST(RouterNoAllocationTest, MatchAllocatesForNoOutcome) {
  auto router = make_router();
  RouteMatch m;
  EXPECT_EQ(allocations_of([&] { m = router->match("GET", "/plaintext"); }), 0);
  EXPECT_TRUE(m);
  EXPECT_EQ(allocations_of([&] { m = router->match("GET", "/users/7/posts/9"); }), 0);
  EXPECT_EQ(m.params().get("post"), "9");
  EXPECT_EQ(allocations_of([&] { m = router->match("GET", "/items/3"); }), 0);
  EXPECT_EQ(m.outcome(), RouteMatch::Outcome::method_not_allowed);
  EXPECT_EQ(allocations_of([&] { m = router->match("GET", "/nowhere"); }), 0);
  EXPECT_EQ(m.outcome(), RouteMatch::Outcome::not_found);
}

// A pipelined batch routed through the codec and the router, once warm (the codec's buffers
// come from the pooled allocator, whose caches the first batch fills). The EmbeddedChannel boxes
// each buffer that reaches its head to queue it for read_outbound(): that one allocation per flushed
// buffer is the test harness's, and the only one allowed.
TEST(RouterNoAllocationTest, RoutingABatchToExactPathsAndPatternsDoesNotAllocate) {
  EmbeddedChannel ch;
  ch.pipeline().add_last("http", std::make_shared<ServerCodec>());
  ch.pipeline().add_last("router", make_router());
  for (const char* path : {"/plaintext", "/users/1/posts/2"}) {
    std::string batch;
    for (int i = 0; i < 8; ++i) batch += "GET " + std::string(path) + " HTTP/1.1\r\nHost: h\r\n\r\n";
    long allocations = 0, flushed = 0;
    for (int round = 0; round < 3; ++round) {
      ByteBuf in = ByteBuf::copy_of(batch);
      allocations = allocations_of([&] {
        ch.pipeline().fire_read(std::move(in));
        ch.pipeline().fire_read_complete();
      });
      flushed = 0;
      while (ch.read_outbound<ByteBuf>()) ++flushed;
    }
    EXPECT_EQ(flushed, 1) << path;  // the batch's responses leave in one buffer
    EXPECT_EQ(allocations, flushed) << path;
  }
}

}  // namespace
}  // namespace weft::http
