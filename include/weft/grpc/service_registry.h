#pragma once
/// @file
/// grpc::ServiceRegistry: gRPC methods served on weft's HTTP/2 server, each call as a child
/// stream channel (http2::Settings::stream_initializer) whose coroutine is the method's handler.
///
///   weft::grpc::ServiceRegistry services;
///   services.add("/grpc.testing.BenchmarkService/StreamingCall", [](weft::grpc::ServerCall& call) -> weft::Task<> {
///     while (auto request = co_await call.read()) co_await call.write(std::move(*request));
///   });
///   services.add_unary("/pkg.Echo/Say",
///                      [](weft::grpc::ServerCall&, weft::ByteBuf request) -> weft::Task<weft::ByteBuf> {
///                        co_return request;  // the response: the request back
///                      });
///   weft::http2::Settings settings;
///   settings.stream_initializer = services.stream_chooser();
///   ch.pipeline().add_last("http2", std::make_shared<weft::http2::ServerCodec>(settings));
///
/// Which requests are calls: a content-type application/grpc (or application/grpc+proto, or with
/// parameters), or any request to a registered method's path. A call to a path not registered is
/// answered UNIMPLEMENTED (Trailers-Only); a request to a registered path with another content-type
/// is answered HTTP 415 with grpc-status INTERNAL (as grpc-java does); every other request is left
/// to the pipeline's other handlers (served whole), so gRPC and plain HTTP share a server.

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "weft/buffer/byte_buf.h"
#include "weft/codec/http2/settings.h"
#include "weft/core/task.h"
#include "weft/grpc/server_call.h"
#include "weft/grpc/server_reactor.h"
#include "weft/grpc/unary_responder.h"

namespace weft::grpc {

namespace detail {
struct CallWatch;    // service_registry.cc
struct MethodEntry;  // service_registry.cc
/// Loop thread only. The one request message of a unary call (ServiceRegistry::add_unary, and the
/// typed add_unary); a missing or second one throws StatusError(INTERNAL), as grpc-java answers.
Task<ByteBuf> read_unary_request(ServerCall& call);
}  // namespace detail

/// A method's handler: a coroutine over its call, for the four call shapes (read() as often as the
/// method takes messages, write() as often as it gives them). Returning ends the call OK unless it
/// was finished; throwing StatusError ends it with that status, another exception with UNKNOWN.
using Handler = std::function<Task<>(ServerCall&)>;
/// A unary method's handler: the one request message in, the one response message out (throw
/// StatusError for another status).
using UnaryHandler = std::function<Task<ByteBuf>(ServerCall&, ByteBuf)>;

/// A unary method's handler in callback form: called on the call's loop with the request; answers
/// through the responder, at once or later from any thread (see unary_responder.h).
using UnaryCallback = std::function<void(ServerCall&, ByteBuf, UnaryResponder)>;

/// The methods of a server (see the file's description). Not thread-safe while methods are added;
/// stream_chooser() takes a snapshot, and what it returns is safe on any number of loops.
class ServiceRegistry {
 public:
  /// Not thread-safe. `options` bound every call served by the choosers made after.
  explicit ServiceRegistry(ServerOptions options = {}) : options_(options) {}

  /// Not thread-safe (register before serving). Registers `handler` for the method `path`
  /// ("/package.Service/Method"), replacing one there.
  void add(std::string path, Handler handler);
  /// Not thread-safe (register before serving). Registers a unary method: reads the one request
  /// (none, or a second one: INTERNAL, as grpc-java does), writes the response, ends the call OK.
  void add_unary(std::string path, UnaryHandler handler);
  /// Not thread-safe (register before serving). Registers a unary method in callback form: reads the
  /// one request as add_unary does, calls `callback`, and sends what its responder answers.
  void add_unary_callback(std::string path, UnaryCallback callback);
  /// Not thread-safe (register before serving). Registers a method of any shape in callback form:
  /// each call gets the reactor `factory` makes (server_reactor.h).
  void add_reactor(std::string path, ReactorFactory factory);
  /// Not thread-safe against add(). The number of methods registered.
  std::size_t size() const noexcept { return methods_.size(); }
  /// Not thread-safe against add(). The services of the methods registered ("package.Service" of
  /// "/package.Service/Method"), each once, sorted.
  std::vector<std::string> services() const;

  /// Thread-safe once methods are added. For http2::Settings::stream_initializer: serves calls as
  /// described (the methods registered now; later additions are not seen by it).
  http2::StreamChooser stream_chooser() const;
  /// Thread-safe once methods are added. HTTP/2 settings for a gRPC server: stream_chooser() as the
  /// stream initializer, and grpc-core's keepalive defaults -- a PING after 2 hours without input
  /// (20 s for its answer), and its ping policy on clients (min_ping_interval 5 minutes, 2 strikes,
  /// then GOAWAY(ENHANCE_YOUR_CALM, "too_many_pings")). Change what differs before use.
  http2::Settings http2_settings() const;

 private:
  using Methods = std::map<std::string, std::shared_ptr<const Handler>, std::less<>>;
  // `grpc`: the request's content-type is gRPC's.
  static void serve_call(http2::StreamChannel& channel, const detail::MethodEntry& method, bool grpc);
  static Task<> run_call(Connection<http2::StreamMessage>& connection,
                         std::shared_ptr<const detail::MethodEntry> method, std::shared_ptr<detail::CallWatch> watch,
                         bool grpc);

  ServerOptions options_;
  Methods methods_;
};

}  // namespace weft::grpc
