// An echo server built against an installed weft: echo_server PORT (on 127.0.0.1).
#include <weft/version.h>
#include <weft/weft.h>

#include <cstdio>
#include <cstdlib>

class Echo final : public weft::InboundHandler<weft::ByteBuf> {
 public:
  void channel_read(weft::Context& ctx, weft::ByteBuf&& buf) override { ctx.write(std::move(buf)); }
  void channel_read_complete(weft::Context& ctx) override { ctx.flush(); }
};

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: echo_server PORT\n");
    return 2;
  }
  weft::EventLoopGroup loops(weft::epoll(), 1);
  weft::ChannelPtr server = weft::ServerBootstrap()
                                .group(loops)
                                .child_handler([](weft::Channel& ch) {
                                  ch.pipeline().add_last("echo", std::make_shared<Echo>());
                                })
                                .bind(weft::SocketAddress::loopback(static_cast<std::uint16_t>(std::atoi(argv[1]))))
                                .get();  // throws weft::IoError if the port is taken
  std::printf("echo server (weft %s) on %s\n", weft::version(), server->local_address().to_string().c_str());
  std::fflush(stdout);
  server->close_future().wait();
}
