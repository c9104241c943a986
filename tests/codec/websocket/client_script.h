#pragma once
// A WebSocket client's script for the tests: open a URL with HttpClient::websocket's coroutine
// form, send messages, read the answers, close, and report what was seen.

#include <gtest/gtest.h>

#include <cstdint>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "weft/client/http_client.h"
#include "weft/codec/websocket/client_upgrade.h"

namespace weft::test {

// What a client's coroutine saw: the answers (text prefixed "t:", binary "b:") and the close.
struct Outcome {
  std::vector<std::string> got;
  std::uint16_t close_code = 0;
  std::string close_reason;
};

// A message as the tests write it: "t:..." text, "b:..." binary.
inline ws::Message to_message(const std::string& s) {
  return s.rfind("t:", 0) == 0 ? ws::Message::text(std::string_view(s).substr(2))
                               : ws::Message::binary(std::string_view(s).substr(2));
}
inline std::string from_message(const ws::Message& m) { return (m.is_text() ? "t:" : "b:") + std::string(m.view()); }

// The client's script: send `messages`, read `answers` messages, then close with `close_code`
// (0: wait for the server's close), and read to the close.
struct Script {
  std::vector<std::string> messages;
  std::size_t answers = 0;
  std::uint16_t close_code = 1000;
  std::string close_reason;
};

// Runs `f` on `loop` (on this thread when null) and returns what it returns.
template <class F>
auto call_on(EventLoop* loop, F&& f) {
  if (loop == nullptr) return f();
  std::promise<decltype(f())> result;
  loop->execute([&] { result.set_value(f()); });
  return result.get_future().get();
}

// Opens `url` with the coroutine form and runs `script`; the handshake's result in *handshake.
// Throws what opening throws. `caller`: the loop that calls websocket() (its pools), else this thread.
inline Outcome run_script(client::HttpClient& client, const std::string& url, Script script,
                          client::WebSocketOptions options = {}, ws::Handshake* handshake = nullptr,
                          EventLoop* caller = nullptr) {
  auto done = std::make_shared<Promise<Outcome>>();
  Future<Outcome> outcome = done->future();
  Future<ws::Handshake> opened = call_on(caller, [&] {
    return client.websocket(
        url,
        [done, script](Connection<ws::Message>& c) -> Task<> {
          Outcome o;
          try {
            for (const std::string& m : script.messages) co_await c.write(to_message(m));
            c.flush();
            while (o.got.size() < script.answers) {
              ws::Message m = co_await c.read();
              if (m.is_close()) {
                o.close_code = m.close_code();
                done->set_value(std::move(o));
                co_return;
              }
              o.got.push_back(from_message(m));
            }
            if (script.close_code != 0) {
              co_await c.write(ws::Message::close(script.close_code, script.close_reason));
              c.flush();
            }
            for (;;) {
              ws::Message m = co_await c.read();
              if (m.is_close()) {
                o.close_code = m.close_code();
                o.close_reason = std::string(m.reason());
                break;
              }
            }
          } catch (...) {
            done->set_error(std::current_exception());
            co_return;
          }
          done->set_value(std::move(o));
        },
        std::move(options));
  });
  ws::Handshake h = opened.get();
  if (handshake != nullptr) *handshake = std::move(h);
  return outcome.get();
}

// The error a failed open gave.
template <class E>
std::optional<E> open_error(Future<ws::Handshake> opened) {
  try {
    opened.get();
  } catch (const E& e) {
    return e;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "another error: " << e.what();
  }
  return std::nullopt;
}

}  // namespace weft::test
