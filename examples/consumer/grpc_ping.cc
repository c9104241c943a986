// A gRPC service and its client from ping.proto's generated code (weft_grpc_generate), built
// against an installed weft: serves consumer.Pinger on 127.0.0.1 (a port the kernel picks), calls
// Echo through the stub, prints the answer and exits 0 when it came back unchanged.
#include <weft/weft.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "ping.weft.h"

namespace {

class Pinger final : public consumer::Pinger::Service {
 public:
  weft::Task<consumer::Ping> Echo(weft::grpc::ServerCall&, consumer::Ping request) override { co_return request; }
};

weft::Task<std::string> ping(std::shared_ptr<weft::grpc::Client> client) {
  consumer::Pinger::Stub stub(std::move(client));
  consumer::Ping request;
  request.set_text("ping over weft");
  weft::grpc::TypedUnaryResult<consumer::Ping> answer = co_await stub.Echo(request);
  if (!answer.status.ok()) co_return "failed: " + answer.status.message;
  co_return answer.message->text();
}

}  // namespace

int main() {
  weft::grpc::ServiceRegistry services;
  consumer::Pinger::Service::add_to(services, std::make_shared<Pinger>());
  const weft::http2::Settings settings = services.http2_settings();
  weft::EventLoopGroup loops(weft::epoll(), 1);
  weft::ChannelPtr server = weft::ServerBootstrap()
                                .group(loops)
                                .child_handler([settings](weft::Channel& ch) {
                                  ch.pipeline().add_last("http2", std::make_shared<weft::http2::ServerCodec>(settings));
                                })
                                .bind(weft::SocketAddress::loopback(0))
                                .get();
  auto client = weft::grpc::Client::connect(loops, weft::SocketAddress::loopback(server->local_address().port())).get();
  weft::Future<std::string> answer = weft::spawn(client->loop(), ping(client));
  if (!answer.wait_for(std::chrono::seconds(30))) {
    std::fprintf(stderr, "grpc_ping: no answer in 30 s\n");
    return 1;
  }
  const std::string text = answer.get();
  std::printf("grpc_ping: %s\n", text.c_str());
  client->close().wait();
  server->close().wait();
  return text == "ping over weft" ? 0 : 1;
}
