#pragma once
/// @file
/// Typed methods over the byte core: request and response types with protobuf's message interface
/// (ParseFromArray, ByteSizeLong, SerializeToArray: any protobuf C++ message, full or lite).
/// Header-only and without protobuf's headers: weft does not link libprotobuf, the application does.
///
///   weft::grpc::add_unary<SimpleRequest, SimpleResponse>(services, "/grpc.testing.BenchmarkService/UnaryCall",
///       [](weft::grpc::ServerCall&, SimpleRequest request) -> weft::Task<SimpleResponse> { ... });
///   weft::grpc::add_method<SimpleRequest, SimpleResponse>(services, "/grpc.testing.BenchmarkService/StreamingCall",
///       [](weft::grpc::TypedCall<SimpleRequest, SimpleResponse>& call) -> weft::Task<> {
///         while (std::optional<SimpleRequest> request = co_await call.read()) co_await call.write(respond(*request));
///       });
///
/// A request that does not parse ends the call with INTERNAL (as grpc++ does).
///
/// And the client's side, on grpc::Client (client.h):
///
///   weft::grpc::TypedUnaryResult<SimpleResponse> r =
///       co_await weft::grpc::unary<SimpleRequest, SimpleResponse>(*client, "/grpc.testing.BenchmarkService/UnaryCall", request);
///   weft::grpc::TypedClientCall<SimpleRequest, SimpleResponse> call(client->call("/grpc.testing.BenchmarkService/StreamingCall"));
///   co_await call.write(request);
///   std::optional<SimpleResponse> response = co_await call.read();   // throws StatusError(INTERNAL) if it does not parse

#include <functional>
#include <optional>
#include <string>
#include <utility>

#include "weft/buffer/byte_buf.h"
#include "weft/buffer/byte_buf_allocator.h"
#include "weft/grpc/client.h"
#include "weft/grpc/server_call.h"
#include "weft/grpc/service_registry.h"
#include "weft/core/task.h"

namespace weft::grpc {

/// Thread-safe (pure). `message` serialized into a new buffer.
template <class Message>
ByteBuf serialize_message(const Message& message) {
  const auto size = static_cast<std::size_t>(message.ByteSizeLong());
  ByteBuf bytes = default_allocator().buffer(size);
  if (size > 0 && !message.SerializeToArray(bytes.write_ptr(), static_cast<int>(size))) {
    throw StatusError(Status(StatusCode::internal, "a response message did not serialize"));
  }
  bytes.advance_writer(size);
  return bytes;
}

/// Thread-safe (the allocator is). `message` serialized behind gRPC's 5-byte prefix (compressed flag 0) in
/// one buffer from `allocator`: what ServerCall::write_framed() sends. One allocation, no copy. Throws
/// StatusError(INTERNAL) when it does not serialize, or is past 4 GiB.
template <class Message>
ByteBuf serialize_framed(const Message& message, ByteBufAllocator& allocator) {
  const auto size = static_cast<std::size_t>(message.ByteSizeLong());
  if (size > 0xFFFFFFFFu) throw StatusError(Status(StatusCode::internal, "a response message is past 4 GiB"));
  ByteBuf framed = allocator.buffer(5 + size);
  framed.write_u8(0);  // not compressed
  framed.write_u32(static_cast<std::uint32_t>(size));
  if (size > 0 && !message.SerializeToArray(framed.write_ptr(), static_cast<int>(size))) {
    throw StatusError(Status(StatusCode::internal, "a response message did not serialize"));
  }
  framed.advance_writer(size);
  return framed;
}

/// Thread-safe (pure). `bytes` parsed as a Message; throws StatusError(INTERNAL) when they do not parse.
template <class Message>
Message parse_message(const ByteBuf& bytes) {
  Message message;
  if (!message.ParseFromArray(bytes.read_ptr(), static_cast<int>(bytes.readable_bytes()))) {
    throw StatusError(Status(StatusCode::internal, "a request message did not parse"));
  }
  return message;
}

/// A call with typed messages: ServerCall's read and write, parsed and serialized. Loop thread only,
/// as ServerCall.
template <class Request, class Response>
class TypedCall {
 public:
  /// Loop thread only. Types the messages of `call`.
  explicit TypedCall(ServerCall& call) noexcept : call_(call) {}
  /// Loop thread only. The untyped call (metadata, timeout, finish()).
  ServerCall& call() const noexcept { return call_; }
  /// Loop thread only. The next request, parsed; nullopt once the client half-closed (see
  /// ServerCall::read()).
  Task<std::optional<Request>> read() {
    std::optional<ByteBuf> bytes = co_await call_.read();
    if (!bytes) co_return std::nullopt;
    co_return parse_message<Request>(*bytes);
  }
  /// Loop thread only. Sends `response`, serialized at once (see ServerCall::write()).
  Task<> write(const Response& response) {
    // Not a coroutine itself: the call's own write is the one frame a message costs. Uncompressed,
    // the message is framed as it is serialized, into the call's allocator.
    if (!call_.compresses_responses()) return call_.write_framed(serialize_framed(response, call_.allocator()));
    return call_.write(serialize_message(response));
  }

 private:
  ServerCall& call_;
};

/// Not thread-safe (register before serving). Registers a typed method of any shape on `services`.
template <class Request, class Response>
void add_method(ServiceRegistry& services, std::string path,
                std::function<Task<>(TypedCall<Request, Response>&)> handler) {
  services.add(std::move(path), [handler = std::move(handler)](ServerCall& call) -> Task<> {
    TypedCall<Request, Response> typed(call);
    co_await handler(typed);
  });
}

/// Not thread-safe (register before serving). Registers a typed unary method on `services`.
template <class Request, class Response>
void add_unary(ServiceRegistry& services, std::string path,
               std::function<Task<Response>(ServerCall&, Request)> handler) {
  // As ServiceRegistry::add_unary, in one frame, the response framed as it is serialized.
  services.add(std::move(path), [handler = std::move(handler)](ServerCall& call) -> Task<> {
    ByteBuf bytes = co_await detail::read_unary_request(call);
    Request request = parse_message<Request>(bytes);
    bytes = ByteBuf();
    Response response = co_await handler(call, std::move(request));
    if (!call.compresses_responses()) {
      co_await call.write_framed(serialize_framed(response, call.allocator()));
    } else {
      co_await call.write(serialize_message(response));
    }
    Status ok;
    co_await call.finish(std::move(ok));
  });
}

/// A client call with typed messages: ClientCall's write and read, serialized and parsed. Loop
/// thread only, as ClientCall.
template <class Request, class Response>
class TypedClientCall {
 public:
  /// Loop thread only. Types the messages of `call` (Client::call).
  explicit TypedClientCall(ClientCall call) noexcept : call_(std::move(call)) {}
  /// Loop thread only. The untyped call (writes_done, finish, cancel, metadata).
  ClientCall& call() noexcept { return call_; }
  /// Loop thread only. Sends `request`, serialized (see ClientCall::write()).
  Task<bool> write(const Request& request) {
    ByteBuf bytes = serialize_message(request);
    co_return co_await call_.write(std::move(bytes));
  }
  /// Loop thread only. The next response, parsed; nullopt once there is none (see ClientCall::read()).
  /// A response that does not parse cancels the call and throws StatusError(INTERNAL).
  Task<std::optional<Response>> read() {
    std::optional<ByteBuf> bytes = co_await call_.read();
    if (!bytes) co_return std::nullopt;
    Response response;
    if (!response.ParseFromArray(bytes->read_ptr(), static_cast<int>(bytes->readable_bytes()))) {
      call_.cancel();
      throw StatusError(Status(StatusCode::internal, "a response message did not parse"));
    }
    co_return response;
  }
  /// Loop thread only. See ClientCall::writes_done().
  Task<> writes_done() { return call_.writes_done(); }
  /// Loop thread only. See ClientCall::finish().
  Task<Status> finish() { return call_.finish(); }

 private:
  ClientCall call_;
};

/// What a typed unary call gives: its status and, when OK, the response. Not an aggregate (see Status).
template <class Response>
struct TypedUnaryResult {
  Status status;                    ///< how the call ended
  std::optional<Response> message;  ///< the response, when the status is OK
  /// `s` with `m`.
  TypedUnaryResult(Status s, std::optional<Response> m) : status(std::move(s)), message(std::move(m)) {}
};

/// Loop thread only. The typed result of a unary `call` under way: a response that does not parse gives INTERNAL.
template <class Response>
Task<TypedUnaryResult<Response>> typed_unary_result(Task<UnaryResult> call) {
  UnaryResult r = co_await call;
  if (!r.status.ok()) co_return TypedUnaryResult<Response>(std::move(r.status), std::nullopt);
  Response response;
  if (!response.ParseFromArray(r.message.read_ptr(), static_cast<int>(r.message.readable_bytes()))) {
    co_return TypedUnaryResult<Response>(Status(StatusCode::internal, "a response message did not parse"), std::nullopt);
  }
  co_return TypedUnaryResult<Response>(Status(), std::move(response));
}

/// Loop thread only (the client's loop). A unary call with typed messages over `client` (a Client,
/// a ClientChannel or a Caller; used only here, so it may go before the call ends); a response that
/// does not parse gives INTERNAL.
template <class Request, class Response, class Over>
Task<TypedUnaryResult<Response>> unary(Over& client, std::string method, const Request& request,
                                       CallOptions options = {}) {
  return typed_unary_result<Response>(client.unary(std::move(method), serialize_message(request), std::move(options)));
}

}  // namespace weft::grpc
