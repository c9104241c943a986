// weft-chat-server: a line-based chat server with one room.
//
//   weft-chat-server [port=9100] [idle_seconds=300]
//
// Every line a client sends goes to every other client, prefixed with its name. "/nick NAME"
// renames, "/quit" leaves. A client that sends nothing for idle_seconds is told so and
// disconnected (IdleStateHandler); a line over 1024 bytes is refused (TooLongFrameError).
// Try it with two terminals running `nc 127.0.0.1 9100`.

#include <weft/weft.h>

#include <weft/codec/line_based_frame_decoder.h>
#include <weft/codec/string_codec.h>
#include <weft/handler/idle_state_handler.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>

namespace {

// The room: channels by id. Thread-safe (connections live on several loops).
class Room {
 public:
  void join(const weft::ChannelPtr& ch) {
    std::lock_guard<std::mutex> lock(mu_);
    members_[ch->id()] = ch;
  }
  void leave(std::uint64_t id) {
    std::lock_guard<std::mutex> lock(mu_);
    members_.erase(id);
  }
  // Sends `line` to everyone but `from` (0: everyone).
  void broadcast(std::uint64_t from, const std::string& line) {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [id, ch] : members_) {
      if (id != from) ch->write_and_flush(std::string(line));  // thread-safe: posted to ch's loop
    }
  }
  std::size_t size() {
    std::lock_guard<std::mutex> lock(mu_);
    return members_.size();
  }

 private:
  std::mutex mu_;
  std::map<std::uint64_t, weft::ChannelPtr> members_;
};

class ChatHandler final : public weft::InboundHandler<std::string> {
 public:
  explicit ChatHandler(Room& room) : room_(room) {}

  void channel_active(weft::Context& ctx) override {
    weft::Channel& ch = ctx.channel();
    name_ = "guest" + std::to_string(ch.id());
    room_.join(ch.shared_from_this());
    ctx.write_and_flush("welcome, " + name_ + " (" + std::to_string(room_.size()) + " here; /nick NAME, /quit)\n");
    room_.broadcast(ch.id(), "* " + name_ + " joined\n");
    ctx.fire_channel_active();
  }

  void channel_read(weft::Context& ctx, std::string&& line) override {
    if (line == "/quit") {
      ctx.write_and_flush(std::string("bye\n"));
      ctx.channel().close_after_flush();
      return;
    }
    if (line.rfind("/nick ", 0) == 0 && line.size() > 6) {
      std::string old = std::move(name_);
      name_ = line.substr(6);
      room_.broadcast(0, "* " + old + " is now " + name_ + "\n");
      return;
    }
    if (!line.empty()) room_.broadcast(ctx.channel().id(), name_ + ": " + line + "\n");
  }

  void user_event(weft::Context& ctx, const std::any& event) override {
    if (std::any_cast<weft::IdleStateEvent>(&event) != nullptr) {
      ctx.write_and_flush(std::string("idle for too long, bye\n"));
      ctx.channel().close_after_flush();
      return;
    }
    ctx.fire_user_event(event);
  }

  void exception_caught(weft::Context& ctx, std::exception_ptr error) override {
    try {
      std::rethrow_exception(error);
    } catch (const weft::TooLongFrameError&) {
      ctx.write_and_flush(std::string("* line too long, ignored\n"));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s: %s\n", name_.c_str(), e.what());
      ctx.close();
    }
  }

  void channel_inactive(weft::Context& ctx) override {
    room_.leave(ctx.channel().id());
    room_.broadcast(0, "* " + name_ + " left\n");
    ctx.fire_channel_inactive();
  }

 private:
  Room& room_;
  std::string name_;
};

}  // namespace

int main(int argc, char** argv) {
  const auto port = static_cast<std::uint16_t>(argc > 1 ? std::atoi(argv[1]) : 9100);
  const int idle_seconds = argc > 2 ? std::atoi(argv[2]) : 300;
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);  // loop threads inherit the mask

  Room room;
  weft::EventLoopGroup loops(weft::epoll());
  weft::ChannelPtr server;
  try {
    server = weft::ServerBootstrap()
                 .group(loops)
                 .child_handler([&room, idle_seconds](weft::Channel& ch) {
                   ch.pipeline()
                       .add_last("idle", std::make_shared<weft::IdleStateHandler>(std::chrono::seconds(idle_seconds),
                                                                                  weft::Duration::zero(),
                                                                                  weft::Duration::zero()))
                       .add_last("lines", std::make_shared<weft::LineBasedFrameDecoder>(1024))
                       .add_last("decoder", std::make_shared<weft::StringDecoder>())
                       .add_last("encoder", std::make_shared<weft::StringEncoder>())
                       .add_last("chat", std::make_shared<ChatHandler>(room));
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
