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
#include "support/h2_socket.h"
#include "support/transports.h"
#include "weft/codec/grpc/client.h"
#include "weft/codec/grpc/service_registry.h"
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

WEFT_ON_EVERY_TRANSPORT(GrpcMessageUnitTest);

}  // namespace
}  // namespace weft::grpc
