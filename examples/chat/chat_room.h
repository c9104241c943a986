#pragma once
// The chat room of weft-chat-server: the room, the per-connection handler and the pipeline that
// serves one connection. In a header so that tests/integration can run the example's own code.

#include <weft/weft.h>

#include <weft/codec/line_based_frame_decoder.h>
#include <weft/codec/string_codec.h>
#include <weft/handler/idle_state_handler.h>

#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace weft_chat {


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
    // Write outside the lock: a write runs the channel's encoder right here when the channel is on
    // this loop (else it is posted to its loop), and nothing that calls out should hold a lock.
    std::vector<weft::ChannelPtr> to;
    {
      std::lock_guard<std::mutex> lock(mu_);
      to.reserve(members_.size());
      for (auto& [id, ch] : members_) {
        if (id != from) to.push_back(ch);
      }
    }
    for (auto& ch : to) ch->write_and_flush(std::string(line));  // thread-safe
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


// Sets up one connection's pipeline (the ServerBootstrap child handler).
inline void init_chat_channel(weft::Channel& ch, Room& room, weft::Duration idle) {
  ch.pipeline()
      .add_last("idle", std::make_shared<weft::IdleStateHandler>(idle, weft::Duration::zero(), weft::Duration::zero()))
      .add_last("lines", std::make_shared<weft::LineBasedFrameDecoder>(1024))
      .add_last("decoder", std::make_shared<weft::StringDecoder>())
      .add_last("encoder", std::make_shared<weft::StringEncoder>())
      .add_last("chat", std::make_shared<ChatHandler>(room));
}

}  // namespace weft_chat
