// A gRPC message leaves whole or not at all, on every transport (issue 28, item 11). A message of
// 8 KiB or more is framed as a prefix and its bytes; the two must reach the stream as one unit, so
// that an end written while the message waits for a flow-control window follows the whole message:
// - the server: the deadline passes while the client's window (0) holds back a server stream of
//   64 KiB messages; once the client opens its window it gets whole messages, then the trailers
//   with DEADLINE_EXCEEDED (on the wire, as nghttp2 parses it), never a prefix and then trailers;
// - the client: the call's request ends (finish(), once the server has answered) while a 64 KiB
//   request message waits for the server's window; the server gets whole messages, then
//   END_STREAM, never a prefix and then END_STREAM.

#include <nghttp2/nghttp2.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "support/blocking_client.h"
#include "support/h2_client.h"
#include "support/h2_frames.h"
#include "support/h2_socket.h"
#include "support/transports.h"
#include "weft/grpc/client.h"
#include "weft/grpc/service_registry.h"
#include "weft/codec/http2/server_codec.h"
#include "weft/codec/http2/stream_channel.h"
#include "weft/weft.h"

using namespace std::chrono_literals;

namespace weft::grpc {
namespace {

// Framed, 64 KiB: the stream's write-buffer high-water mark. The first message reaches it exactly
// (still writable), so the next one's prefix alone would cross it: a two-part write left its body
// waiting and its prefix queued.
constexpr std::size_t kUnitMessageBytes = 64 * 1024 - kMessagePrefixBytes;

// How many whole gRPC messages of kUnitMessageBytes 'u's `body` holds; nullopt when it ends inside
// one or a prefix or a byte is not what was sent.
std::optional<std::size_t> whole_unit_messages(std::string_view body) {
  std::size_t count = 0;
  while (!body.empty()) {
    if (body.size() < kMessagePrefixBytes) return std::nullopt;
    const auto* p = reinterpret_cast<const unsigned char*>(body.data());
    const std::size_t length = (std::size_t{p[1]} << 24) | (std::size_t{p[2]} << 16) | (std::size_t{p[3]} << 8) | p[4];
    if (p[0] != 0 || length != kUnitMessageBytes) return std::nullopt;
    if (body.size() < kMessagePrefixBytes + length) return std::nullopt;
    if (body.substr(kMessagePrefixBytes, length).find_first_not_of('u') != std::string_view::npos) return std::nullopt;
    body.remove_prefix(kMessagePrefixBytes + length);
    ++count;
  }
  return count;
}

ByteBuf unit_message() { return ByteBuf::copy_of(std::string(kUnitMessageBytes, 'u')); }

// What the server saw.
struct UnitSeen {
  Promise<Status> stream_ended;  // /unit.Test/Stream: the status its handler's CallEnded carried

  // /unit.Test/Upload's recorder (its loop's thread writes, the test reads once `upload_done` is set).
  std::mutex mutex;
  ChannelPtr upload_channel;   // paused once it answered
  std::string upload_bytes;    // the request's DATA, in order
  Promise<std::string> upload_done;  // how the request ended: "end_stream", "trailers", "reset", "closed"
};

// Answers an upload at once (head, then grpc-status 0) and stops reading, so that the client's
// writes wait for the stream's window; records the request's bytes and its end once reading resumes.
class UnitUploadRecorder final : public InboundHandler<http2::StreamMessage, http2::StreamMessage> {
 public:
  explicit UnitUploadRecorder(std::shared_ptr<UnitSeen> seen) : seen_(std::move(seen)) {}

  void channel_read(Context& ctx, http2::StreamMessage&& message) override {
    if (std::holds_alternative<http2::StreamHeaders>(message)) {
      ctx.write(http2::ResponseHeaders{http::HttpResponse(200).header("content-type", "application/grpc"), false});
      ctx.write(http2::StreamTrailers{http2::Fields().add("grpc-status", "0")});
      ctx.flush();
      ctx.channel().set_auto_read(false);
      std::lock_guard lock(seen_->mutex);
      seen_->upload_channel = ctx.channel().shared_from_this();
    } else if (auto* data = std::get_if<http2::StreamData>(&message)) {
      {
        std::lock_guard lock(seen_->mutex);
        seen_->upload_bytes.append(data->data.view());
      }
      if (data->end_stream) end("end_stream");
    } else {
      end("trailers");
    }
  }
  void exception_caught(Context&, std::exception_ptr) override { end("reset"); }
  void channel_inactive(Context& ctx) override {
    end("closed");
    ctx.fire_channel_inactive();
  }

 private:
  void end(const char* how) {
    if (ended_) return;
    ended_ = true;
    seen_->upload_done.set_value(how);
  }

  std::shared_ptr<UnitSeen> seen_;
  bool ended_ = false;
};

ServiceRegistry unit_services(std::shared_ptr<UnitSeen> seen) {
  ServiceRegistry services;
  // A server stream of 64 KiB messages until the call ends.
  services.add("/unit.Test/Stream", [seen](ServerCall& call) -> Task<> {
    try {
      for (;;) co_await call.write(unit_message());
    } catch (const CallEnded& e) {
      seen->stream_ended.set_value(e.status());
      throw;
    }
  });
  return services;
}

class GrpcMessageUnitTest : public test::TransportTest {
 protected:
  void SetUp() override {
    http2::Settings settings;
    settings.stream_initializer = [chooser = unit_services(seen_).stream_chooser(),
                                   seen = seen_](const http::RequestHead& head) -> http2::StreamInitializer {
      if (head.path == "/unit.Test/Upload") {
        return [seen](http2::StreamChannel& ch) {
          ch.pipeline().add_last("recorder", std::make_shared<UnitUploadRecorder>(seen));
        };
      }
      return chooser(head);
    };
    server_ = ServerBootstrap()
                  .group(loops_)
                  .child_handler([settings](Channel& ch) {
                    ch.pipeline().add_last("http2", std::make_shared<http2::ServerCodec>(settings));
                  })
                  .bind(SocketAddress::loopback(0))
                  .get();
  }
  void TearDown() override {
    if (client_) client_->close().wait();
    {
      // The paused upload channel holds its loop's objects: let it go before the loops stop.
      std::lock_guard lock(seen_->mutex);
      seen_->upload_channel.reset();
    }
    if (server_) server_->close().wait();
  }

  EventLoopGroup loops_{transport(), loops(2, 4)};
  std::shared_ptr<UnitSeen> seen_ = std::make_shared<UnitSeen>();
  ChannelPtr server_;
  std::shared_ptr<Client> client_;
};

TEST_P(GrpcMessageUnitTest, ADeadlineWhileTheClientsWindowHoldsAMessageEndsAfterTheWholeMessage) {
  test::BlockingClient socket(server_->local_address().port());
  ASSERT_TRUE(socket.is_open());
  // A window of 0: nothing of the response's body leaves until the client opens it.
  test::H2Client client({{NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 0}});
  const std::int32_t id = client.request(
      "POST", "/unit.Test/Stream", "",
      {{"content-type", "application/grpc"}, {"te", "trailers"}, {"grpc-timeout", "20m"}});
  ASSERT_TRUE(socket.send_all(client.take_output()));

  Future<Status> ended = seen_->stream_ended.future();
  ASSERT_TRUE(ended.wait_for(30s)) << "the deadline did not end the handler's write";
  EXPECT_EQ(ended.get().code, StatusCode::deadline_exceeded);

  // The client opens its windows and reads what the server queued for it.
  const nghttp2_settings_entry open{NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 1 << 20};
  nghttp2_submit_settings(client.session(), NGHTTP2_FLAG_NONE, &open, 1);
  nghttp2_session_set_local_window_size(client.session(), NGHTTP2_FLAG_NONE, 0, 1 << 20);
  ASSERT_TRUE(test::exchange_until_closed(socket, client, 30000ms)) << "error " << client.error();

  const test::H2Response& response = client.response(id);
  EXPECT_EQ(response.status, 200);
  ASSERT_EQ(response.close_error, std::uint32_t{NGHTTP2_NO_ERROR}) << "the stream was reset";
  std::optional<std::string> status;
  for (const auto& [name, value] : response.trailers) {
    if (name == "grpc-status") status = value;
  }
  ASSERT_TRUE(status.has_value()) << "no trailers";
  EXPECT_EQ(*status, "4") << "DEADLINE_EXCEEDED";
  const std::optional<std::size_t> messages = whole_unit_messages(response.body);
  ASSERT_TRUE(messages.has_value()) << "trailers after part of a message: " << response.body.size()
                                    << " bytes of DATA, not a multiple of " << kUnitMessageBytes + kMessagePrefixBytes;
  EXPECT_GE(*messages, 1u);
}

// Writes two 64 KiB request messages, both before the loop takes a turn (the second one waits for
// the server's window, which is 0); then, once the server has answered, finish() ends the request.
// (Not `if (!co_await call.write(...)) co_return false;` as the first statement: GCC 12.2 compiles
// that coroutine so that its body never runs, and nothing was written.)
Task<bool> write_two_unit_messages(ClientCall& call) {
  const bool first = co_await call.write(unit_message());
  if (!first) co_return false;
  const bool second = co_await call.write(unit_message());
  co_return second;
}

// What the second write said once the call had ended ("true", "false", or the exception's text).
Task<std::string> finish_while_a_message_waits(Client& client, Promise<std::string>& finished) {
  ClientCall call = client.call("/unit.Test/Upload");
  Future<bool> writes = spawn(client.loop(), write_two_unit_messages(call));  // runs now, to its wait
  const Status status = co_await call.finish();
  finished.set_value(std::string(status_code_name(status.code)));
  try {
    co_return (co_await writes) ? "true" : "false";  // the call's handle outlives the write that uses it
  } catch (const std::exception& e) {
    co_return std::string(e.what());
  }
}

// A listening socket on 127.0.0.1 (port 0) for a hand-played HTTP/2 server.
int unit_listen(std::uint16_t& port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0 || ::listen(fd, 1) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    if (fd >= 0) ::close(fd);
    return -1;
  }
  port = ntohs(addr.sin_port);
  return fd;
}

// A hand-played server's side of its one connection.
struct UnitServerSocket {
  int fd = -1;
  ~UnitServerSocket() {
    if (fd >= 0) ::close(fd);
  }
  bool send_all(std::string_view bytes) const {
    while (!bytes.empty()) {
      const ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      bytes.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
  }
  // What arrives next (empty on EOF, an error, or 30 s without a byte: a broken client fails the test).
  std::string recv_some() const {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 30000) <= 0) return {};
    std::string in(256 * 1024, '\0');
    const ssize_t n = ::recv(fd, in.data(), in.size(), 0);
    in.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
    return in;
  }
};

// The client's frames (after its preface) as they come, until `done` holds.
template <class Done>
bool unit_read_until(const UnitServerSocket& socket, std::string& preface, test::ServerFrames& frames, Done done) {
  while (!done()) {
    std::string in = socket.recv_some();
    if (in.empty()) return false;
    if (preface.size() < test::kH2Preface.size()) {
      const std::size_t take = std::min(in.size(), test::kH2Preface.size() - preface.size());
      preface += in.substr(0, take);
      in.erase(0, take);
    }
    frames.feed(in);
  }
  return true;
}

// A hand-played HTTP/2 server with a stream window of 0 (what the client writes stays queued in
// it), a grpc::Client connected to it, and the call of finish_while_a_message_waits on it, its
// request's HEADERS read.
class GrpcMessageUnitClientSideTest : public GrpcMessageUnitTest {
 protected:
  // False (with a failure) when a step did not happen.
  bool start_upload() {
    std::uint16_t port = 0;
    const int listener = unit_listen(port);
    EXPECT_GE(listener, 0);
    if (listener < 0) return false;
    Future<std::shared_ptr<Client>> connecting = Client::connect(loops_, SocketAddress::loopback(port));
    socket_.fd = ::accept(listener, nullptr, nullptr);
    ::close(listener);
    EXPECT_GE(socket_.fd, 0);
    if (socket_.fd < 0) return false;
    EXPECT_TRUE(socket_.send_all(
        test::frame(NGHTTP2_SETTINGS, 0, 0, test::setting(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 0))));
    // The client acknowledged the window of 0 before it opens a stream.
    const bool acked = unit_read_until(socket_, preface_, frames_, [&] {
      for (const auto& f : frames_.frames) {
        if (f.type == NGHTTP2_SETTINGS && (f.flags & NGHTTP2_FLAG_ACK) != 0) return true;
      }
      return false;
    });
    EXPECT_TRUE(acked) << "no SETTINGS ACK";
    EXPECT_TRUE(connecting.wait_for(30s));
    if (!acked || !connecting.is_done()) return false;
    client_ = connecting.get();
    status_ = finished_.future();
    done_ = spawn(client_->loop(), finish_while_a_message_waits(*client_, finished_));
    const bool opened = unit_read_until(socket_, preface_, frames_, [&] { return frames_.count(NGHTTP2_HEADERS, 1) > 0; });
    EXPECT_TRUE(opened) << "no request HEADERS";
    return opened;
  }
  // The answer, whole: a head, then grpc-status 0 (END_STREAM); then `after`.
  bool answer(std::string_view after = {}) {
    const std::string head = std::string("\x88") + test::literal("content-type", "application/grpc");
    return socket_.send_all(test::frame(NGHTTP2_SETTINGS, NGHTTP2_FLAG_ACK, 0, "") +
                            test::frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS, 1, head) +
                            test::frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS | NGHTTP2_FLAG_END_STREAM, 1,
                                        test::literal("grpc-status", "0")) +
                            std::string(after));
  }

  UnitServerSocket socket_;
  std::string preface_;
  test::ServerFrames frames_;
  Promise<std::string> finished_;
  Future<std::string> status_;
  Future<std::string> done_;
};

TEST_P(GrpcMessageUnitClientSideTest, ARequestThatEndsWhileAMessageWaitsForTheWindowEndsAfterTheWholeMessage) {
  ASSERT_TRUE(start_upload());
  ASSERT_TRUE(answer());
  ASSERT_TRUE(status_.wait_for(30s)) << "the call did not end";
  EXPECT_EQ(status_.get(), "OK");
  // finish() ended the request while the second message waited: the server opens its windows.
  ASSERT_TRUE(socket_.send_all(test::frame(NGHTTP2_WINDOW_UPDATE, 0, 1, test::u32(1 << 20)) +
                               test::frame(NGHTTP2_WINDOW_UPDATE, 0, 0, test::u32(1 << 20))));
  ASSERT_TRUE(unit_read_until(socket_, preface_, frames_, [&] { return frames_.ended[1] || frames_.resets.count(1) > 0; }))
      << "the request did not end";
  // The stream is still open for the client (half-closed remote): the queued whole messages go,
  // then END_STREAM; never a prefix and then END_STREAM.
  EXPECT_EQ(frames_.resets.count(1), 0u) << "the request was reset, not ended";
  const std::optional<std::size_t> messages = whole_unit_messages(frames_.data[1]);
  ASSERT_TRUE(messages.has_value()) << "END_STREAM after part of a message: " << frames_.data[1].size()
                                    << " bytes of DATA, not a multiple of " << kUnitMessageBytes + kMessagePrefixBytes;
  EXPECT_EQ(*messages, 2u);
  // The waiting write went on once its message left; the call had ended by then.
  ASSERT_TRUE(done_.wait_for(30s)) << "the second write still waits";
  EXPECT_EQ(done_.get(), "false");
}

TEST_P(GrpcMessageUnitClientSideTest, AStreamResetWithNoErrorAfterAWholeAnswerWakesTheWriteWaitingForTheWindow) {
  // RFC 9113 8.1: a server that has answered whole may stop the upload with RST_STREAM(NO_ERROR);
  // the stream closes normally (the response stands) while the second message waits for the window.
  ASSERT_TRUE(start_upload());
  ASSERT_TRUE(answer());
  ASSERT_TRUE(status_.wait_for(30s)) << "the call did not end";
  EXPECT_EQ(status_.get(), "OK");
  // The reset comes on its own, once the call has ended: nothing else about the stream wakes the write.
  ASSERT_TRUE(socket_.send_all(test::frame(NGHTTP2_RST_STREAM, 0, 1, test::u32(NGHTTP2_NO_ERROR))));
  // The write waiting for the window ends with the stream, not with the connection (still open).
  ASSERT_TRUE(done_.wait_for(30s)) << "the write waiting for the window was not woken when its stream closed";
  EXPECT_EQ(done_.get(), "false");
  // Nothing of the upload left after the reset, and no END_STREAM on a partial message.
  ASSERT_TRUE(socket_.send_all(test::frame(NGHTTP2_PING, 0, 0, std::string(8, 'p'))));
  ASSERT_TRUE(unit_read_until(socket_, preface_, frames_, [&] {
    for (const auto& f : frames_.frames) {
      if (f.type == NGHTTP2_PING && (f.flags & NGHTTP2_FLAG_ACK) != 0) return true;
    }
    return false;
  }));
  EXPECT_EQ(frames_.data[1].size(), 0u);
  EXPECT_FALSE(frames_.ended[1]) << "END_STREAM after a reset stream";
}

WEFT_ON_EVERY_TRANSPORT(GrpcMessageUnitClientSideTest);

WEFT_ON_EVERY_TRANSPORT(GrpcMessageUnitTest);

}  // namespace
}  // namespace weft::grpc
