// weft-chat-server: a line-based chat server with one room.
//
//   weft-chat-server [port=9100] [idle_seconds=300]
//
// Every line a client sends goes to every other client, prefixed with its name. "/nick NAME"
// renames, "/quit" leaves. A client that sends nothing for idle_seconds is told so and
// disconnected (IdleStateHandler); a line over 1024 bytes is refused (TooLongFrameError).
// Try it with two terminals running `nc 127.0.0.1 9100`.

#include "chat_room.h"

#include <csignal>
#include <cstdio>
#include <cstdlib>

int main(int argc, char** argv) {
  const auto port = static_cast<std::uint16_t>(argc > 1 ? std::atoi(argv[1]) : 9100);
  const int idle_seconds = argc > 2 ? std::atoi(argv[2]) : 300;
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);  // loop threads inherit the mask

  weft_chat::Room room;
  weft::EventLoopGroup loops(weft::epoll());
  weft::ChannelPtr server;
  try {
    server = weft::ServerBootstrap()
                 .group(loops)
                 .child_handler([&room, idle_seconds](weft::Channel& ch) {
                   weft_chat::init_chat_channel(ch, room, std::chrono::seconds(idle_seconds));
                 })
                 .bind(weft::SocketAddress::any(port))
                 .get();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "weft-chat-server: %s\n", e.what());
    return 1;
  }
  std::printf("chat server on %s (idle timeout %d s)\n", server->local_address().to_string().c_str(), idle_seconds);
  std::fflush(stdout);
  int sig = 0;
  sigwait(&signals, &sig);
  room.broadcast(0, "* server shutting down\n");
  server->close().wait();
  loops.shutdown_gracefully(std::chrono::milliseconds(100), std::chrono::seconds(2)).wait();
  return 0;
}
