// An HTTP/1.1 hello server built against an installed weft: hello PORT (on 127.0.0.1).
//   GET /  ->  200 "Hello, World!"
#include <weft/weft.h>

#include <cstdio>
#include <cstdlib>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: hello PORT\n");
    return 2;
  }
  auto router = std::make_shared<weft::http::Router>();
  router->get("/", [](weft::Context& ctx, weft::http::HttpRequest&) {
    ctx.write(weft::http::HttpResponse(200).content_type("text/plain").body_view("Hello, World!"));
  });
  weft::EventLoopGroup loops(weft::epoll(), 1);
  weft::ChannelPtr server = weft::ServerBootstrap()
                                .group(loops)
                                .child_handler([router](weft::Channel& ch) {
                                  ch.pipeline().add_last("http", std::make_shared<weft::http::ServerCodec>());
                                  ch.pipeline().add_last("router", router);
                                })
                                .bind(weft::SocketAddress::loopback(static_cast<std::uint16_t>(std::atoi(argv[1]))))
                                .get();
  std::printf("hello on http://%s/\n", server->local_address().to_string().c_str());
  std::fflush(stdout);
  server->close_future().wait();
}
