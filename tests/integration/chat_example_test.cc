// examples/chat under abuse: 30 clients chatter, never read, then all reset at once (issue 14).
// Each reset closes a channel whose channel_inactive broadcasts to the others, whose writes fail in
// turn: the server must not run one channel's events inside another's call (it deadlocked on the
// room's lock), and must still serve new clients afterwards.

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "../../examples/chat/chat_room.h"
#include "support/blocking_client.h"
#include "support/transports.h"

namespace weft {
namespace {

using namespace std::chrono_literals;
using test::BlockingClient;

class ChatExampleTest : public test::TransportTest {};
WEFT_ON_EVERY_TRANSPORT(ChatExampleTest);

// Reads lines until one contains `wanted`; false when none did within `timeout`.
bool await_line(BlockingClient& client, const std::string& wanted, std::string& seen, test::TestDuration timeout = 10s) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (seen.find(wanted) == std::string::npos) {
    const auto left = std::chrono::duration_cast<test::TestDuration>(deadline - std::chrono::steady_clock::now());
    if (left <= 0ms) return false;
    test::StreamEnd end{};
    std::string got = client.recv_some(4096, left, &end);
    if (got.empty() && (end == test::StreamEnd::eof || end == test::StreamEnd::reset)) return false;
    seen += got;
  }
  return true;
}

TEST_P(ChatExampleTest, ServerStaysResponsiveAfterThirtyClientsChatterAndReset) {
  constexpr int kClients = 30;
  constexpr int kLinesEach = 20;
  // One loop on epoll and io_uring, so that every channel's calls meet on the same thread.
  // Before the group: the loops close the channels (which leave the room) when the group ends.
  weft_chat::Room room;
  EventLoopGroup group(transport(), loops(1, kClients + 4));
  ChannelPtr server = ServerBootstrap()
                          .group(group)
                          .child_handler([&room](Channel& ch) { weft_chat::init_chat_channel(ch, room, 300s); })
                          .bind(SocketAddress::loopback(0))
                          .get();
  const std::uint16_t port = server->local_address().port();

  std::vector<BlockingClient> clients;
  for (int i = 0; i < kClients; ++i) {
    clients.emplace_back(port);
    ASSERT_TRUE(clients.back().is_open()) << "client " << i << ": errno " << clients.back().error();
  }
  ASSERT_TRUE(test::eventually([&] { return room.size() == kClients; }, 10s)) << room.size() << " joined";
  for (int line = 0; line < kLinesEach; ++line) {
    for (int i = 0; i < kClients; ++i) {
      ASSERT_TRUE(clients[static_cast<std::size_t>(i)].send_all("line " + std::to_string(line) + " from " +
                                                                std::to_string(i) + "\n"));
    }
  }
  for (auto& c : clients) c.reset();  // never read a byte; every server write to them now fails

  // A new client joins, a second one joins and speaks: the first hears it.
  BlockingClient alice(port);
  BlockingClient bob(port);
  std::string alice_saw;
  std::string bob_saw;
  const bool responsive = alice.is_open() && bob.is_open() && await_line(alice, "welcome", alice_saw) &&
                          await_line(bob, "welcome", bob_saw) && bob.send_all("hello after the resets\n") &&
                          await_line(alice, ": hello after the resets", alice_saw);
  if (!responsive) {
    ADD_FAILURE() << "the chat server stopped answering after the resets (alice saw: '" << alice_saw
                  << "', bob saw: '" << bob_saw << "')";
    // Its loop is stuck: shutting the group down would wait for it forever.
    std::fprintf(stderr, "chat server loop is stuck; exiting instead of hanging\n");
    std::fflush(nullptr);
    std::_Exit(1);
  }
  alice.close();
  bob.close();
  EXPECT_TRUE(test::eventually([&] { return room.size() == 0; }, 10s)) << room.size() << " still in the room";
  EXPECT_TRUE(server->close().wait_for(5s));
}

}  // namespace
}  // namespace weft
