#include <weft/weft.h>

#include <cstdio>

// Writes every buffer it receives back to the sender; one flush per read batch.
class Echo final : public weft::InboundHandler<weft::ByteBuf> {
 public:
  void channel_read(weft::Context& ctx, weft::ByteBuf&& buf) override { ctx.write(std::move(buf)); }
  void channel_read_complete(weft::Context& ctx) override { ctx.flush(); }
};

int main() {
  weft::EventLoopGroup loops(weft::epoll());  // one event loop per core
  weft::ChannelPtr server = weft::ServerBootstrap()
                                .group(loops)
                                .child_handler([](weft::Channel& ch) {
                                  ch.pipeline().add_last("echo", std::make_shared<Echo>());
                                })
                                .bind(weft::SocketAddress::loopback(9000))
                                .get();  // throws weft::IoError if the port is taken
  std::printf("echo server on %s\n", server->local_address().to_string().c_str());
  server->close_future().wait();
}
