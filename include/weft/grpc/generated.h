#pragma once
/// @file
/// What the code protoc-gen-weft generates builds on (docs/grpc.md, "From a .proto"): a method's
/// descriptor, typed readers and writers for the four call shapes on both sides, and the glue
/// that registers a generated service's virtuals on a ServiceRegistry. Header-only, without
/// protobuf's headers (as protobuf_adapter.h): the application links libprotobuf.
///
/// For `rpc M(A) returns (B)`, a generated service's virtual and its stub's method take the shape
/// of the call (docs/grpc.md has the table):
/// - unary: `Task<B> M(ServerCall&, A)`; the stub's `Task<TypedUnaryResult<B>> M(const A&)`;
/// - server streaming: `Task<> M(ServerCall&, A, ServerWriter<B>&)`; `ClientReader<B> M(const A&)`;
/// - client streaming: `Task<B> M(ServerCall&, ServerReader<A>&)`; `ClientWriter<A, B> M()`;
/// - bidi streaming: `Task<> M(ServerCall&, ServerReaderWriter<A, B>&)`; `ClientReaderWriter<A, B> M()`.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "weft/buffer/byte_buf.h"
#include "weft/core/task.h"
#include "weft/core/unique_function.h"
#include "weft/grpc/caller.h"
#include "weft/grpc/client.h"
#include "weft/grpc/client_reactor.h"
#include "weft/grpc/protobuf_adapter.h"
#include "weft/grpc/server_call.h"
#include "weft/grpc/server_reactor.h"
#include "weft/grpc/service_registry.h"
#include "weft/grpc/status.h"
#include "weft/grpc/unary_responder.h"

namespace weft::grpc {

/// A method's shape, as its .proto declares it (`stream` on the request, the response, both or neither).
enum class CallShape : std::uint8_t { unary, server_streaming, client_streaming, bidi_streaming };

/// A method of a generated service: a constant (`routeguide::RouteGuide::Methods::GetFeature`).
struct MethodDescriptor {
  std::string_view path;  ///< "/package.Service/Method", what a call is sent to
  std::string_view name;  ///< "Method"
  CallShape shape;        ///< its call shape
};

/// The responses of a server-streaming method, typed. Loop thread only, as ServerCall.
template <class Response>
class ServerWriter {
 public:
  /// Loop thread only. Types the responses of `call`.
  explicit ServerWriter(ServerCall& call) noexcept : call_(call) {}
  /// Loop thread only. The untyped call (metadata, deadline, cancelled()).
  ServerCall& call() const noexcept { return call_; }
  /// Loop thread only. Sends `response`, serialized; waits while the client's window is full
  /// (ServerCall::write(): throws CallEnded once the call has ended).
  /// `response` is serialized at once (the Task holds the bytes, not the message).
  Task<> write(const Response& response, WriteOptions options = {}) {
    // Not a coroutine itself: the call's own write is the one frame a message costs.
    if (!call_.compresses_responses())
      return call_.write_framed(serialize_framed(response, call_.allocator()), options);
    return call_.write(serialize_message(response), options);
  }

 private:
  ServerCall& call_;
};

/// The requests of a client-streaming method, typed. Loop thread only, as ServerCall.
template <class Request>
class ServerReader {
 public:
  /// Loop thread only. Types the requests of `call`.
  explicit ServerReader(ServerCall& call) noexcept : call_(call) {}
  /// Loop thread only. The untyped call.
  ServerCall& call() const noexcept { return call_; }
  /// Loop thread only. The next request, parsed; nullopt once the client half-closed. A request
  /// that does not parse throws StatusError(INTERNAL), which ends the call so.
  Task<std::optional<Request>> read() {
    std::optional<ByteBuf> bytes = co_await call_.read();
    if (!bytes) co_return std::nullopt;
    co_return parse_message<Request>(*bytes);
  }

 private:
  ServerCall& call_;
};

/// Both directions of a bidirectional-streaming method, typed (read() and write() as above).
template <class Request, class Response>
using ServerReaderWriter = TypedCall<Request, Response>;

/// Answers a unary method of a generated callback service, typed (UnaryResponder's rules: once, from
/// any thread; dropped unanswered, the call fails INTERNAL). Move-only.
template <class Response>
class TypedUnaryResponder {
 public:
  /// Loop thread only (made by the registration). Types `responder`.
  explicit TypedUnaryResponder(UnaryResponder responder) noexcept : responder_(std::move(responder)) {}
  /// Thread-safe; the first answer counts. Sends `response`, serialized; the call ends OK after it.
  void respond(const Response& response) { responder_.respond(serialize_message(response)); }
  /// Thread-safe; the first answer counts. Ends the call with `status` (not OK), no message.
  void fail(Status status) { responder_.fail(std::move(status)); }

 private:
  UnaryResponder responder_;
};

/// The client's side of a server-streaming call, typed. Its one request leaves with the first read()
/// or finish(), followed by the half-close. Move-only; dropped while open, it cancels the call.
/// Loop thread only (the client's loop), as ClientCall.
template <class Response>
class ClientReader {
 public:
  /// Loop thread only. `call` (just started) with the serialized `request` it is to send.
  ClientReader(ClientCall call, ByteBuf request) noexcept : call_(std::move(call)), request_(std::move(request)) {}
  /// Loop thread only. The untyped call (metadata, cancel()).
  ClientCall& call() noexcept { return call_; }
  /// Loop thread only. The next response, parsed; nullopt once there is none (finish() says why). A
  /// response that does not parse cancels the call and throws StatusError(INTERNAL).
  Task<std::optional<Response>> read() {
    co_await send_request();
    std::optional<ByteBuf> bytes = co_await call_.read();
    if (!bytes) co_return std::nullopt;
    co_return parse_response(*bytes);
  }
  /// Loop thread only. Waits for the call's end (responses not read are dropped); its status.
  Task<Status> finish() {
    co_await send_request();
    co_return co_await call_.finish();
  }

 private:
  Task<> send_request() {
    if (!request_) co_return;
    ByteBuf request = std::move(*request_);
    request_.reset();
    if (co_await call_.write(std::move(request))) co_await call_.writes_done();
  }
  Response parse_response(const ByteBuf& bytes) {
    Response response;
    if (!response.ParseFromArray(bytes.read_ptr(), static_cast<int>(bytes.readable_bytes()))) {
      call_.cancel();
      throw StatusError(Status(StatusCode::internal, "a response message did not parse"));
    }
    return response;
  }

  ClientCall call_;
  std::optional<ByteBuf> request_;  // until it is sent
};

/// The client's side of a client-streaming call, typed: write() the requests, then finish() for
/// the one response and the status. Move-only; dropped while open, it cancels the call. Loop
/// thread only (the client's loop), as ClientCall.
template <class Request, class Response>
class ClientWriter {
 public:
  /// Loop thread only. Types `call` (just started).
  explicit ClientWriter(ClientCall call) noexcept : call_(std::move(call)) {}
  /// Loop thread only. The untyped call (metadata, cancel()).
  ClientCall& call() noexcept { return call_; }
  /// Loop thread only. Sends `request`; false once the call has ended (finish() says how).
  Task<bool> write(const Request& request) {
    ByteBuf bytes = serialize_message(request);
    co_return co_await call_.write(std::move(bytes));
  }
  /// Loop thread only. Half-closes, reads the response and waits for the status. An OK status with
  /// no response, or with a response that does not parse, gives INTERNAL (as grpc++ does).
  Task<TypedUnaryResult<Response>> finish() {
    co_await call_.writes_done();
    std::optional<ByteBuf> bytes = co_await call_.read();
    Status status = co_await call_.finish();
    if (!status.ok()) co_return TypedUnaryResult<Response>(std::move(status), std::nullopt);
    Response response;
    if (!bytes) {
      co_return TypedUnaryResult<Response>(Status(StatusCode::internal, "the server sent no response message"),
                                           std::nullopt);
    }
    if (!response.ParseFromArray(bytes->read_ptr(), static_cast<int>(bytes->readable_bytes()))) {
      co_return TypedUnaryResult<Response>(Status(StatusCode::internal, "a response message did not parse"),
                                           std::nullopt);
    }
    co_return TypedUnaryResult<Response>(Status(), std::move(response));
  }

 private:
  ClientCall call_;
};

/// The client's side of a bidirectional-streaming call, typed (TypedClientCall: write, read,
/// writes_done, finish).
template <class Request, class Response>
using ClientReaderWriter = TypedClientCall<Request, Response>;

/// Thread-safe. The callback form of a typed unary call over `client` (a Client, a ClientChannel or
/// a Caller): `done` runs once, on its loop, with the result (a response that does not parse gives
/// INTERNAL). See Client::unary.
template <class Request, class Response, class Over>
void unary(Over& client, std::string method, const Request& request, CallOptions options,
           UniqueFunction<void(TypedUnaryResult<Response>)> done) {
  client.unary(std::move(method), serialize_message(request), std::move(options),
               [done = std::move(done)](UnaryResult r) mutable {
                 if (!r.status.ok()) return done(TypedUnaryResult<Response>(std::move(r.status), std::nullopt));
                 Response response;
                 if (!response.ParseFromArray(r.message.read_ptr(), static_cast<int>(r.message.readable_bytes()))) {
                   return done(TypedUnaryResult<Response>(
                       Status(StatusCode::internal, "a response message did not parse"), std::nullopt));
                 }
                 done(TypedUnaryResult<Response>(Status(), std::move(response)));
               });
}

namespace detail {

/// What a generated service's method answers when it is not overridden (as grpc++'s generated base).
inline StatusError unimplemented(const MethodDescriptor& method) {
  return StatusError(Status(StatusCode::unimplemented, "method " + std::string(method.path) + " is not implemented"));
}

/// The default body of a generated coroutine virtual: ends the call UNIMPLEMENTED.
template <class Result>
Task<Result> unimplemented_task(MethodDescriptor method) {
  throw unimplemented(method);
  co_return Result{};
}
template <>
inline Task<> unimplemented_task<void>(MethodDescriptor method) {
  throw unimplemented(method);
  co_return;
}

/// The default reactor of a generated callback service's streaming method: ends the call UNIMPLEMENTED.
inline std::shared_ptr<ServerReactor> unimplemented_reactor(const MethodDescriptor& method, ServerStream stream) {
  stream.finish(unimplemented(method).status());
  return std::make_shared<ServerReactor>();
}

// Registrations of a generated service's methods: each call runs `service`'s virtual (a pointer
// to a virtual member dispatches to the override), and the registry keeps `service` alive.

template <class Service, class Request, class Response>
void add_unary(ServiceRegistry& registry, const MethodDescriptor& method, std::shared_ptr<Service> service,
               Task<Response> (Service::*handler)(ServerCall&, Request)) {
  grpc::add_unary<Request, Response>(registry, std::string(method.path),
                                     [service = std::move(service), handler](ServerCall& call, Request request) {
                                       return ((*service).*handler)(call, std::move(request));
                                     });
}

template <class Service, class Request, class Response>
void add_server_streaming(ServiceRegistry& registry, const MethodDescriptor& method, std::shared_ptr<Service> service,
                          Task<> (Service::*handler)(ServerCall&, Request, ServerWriter<Response>&)) {
  registry.add(std::string(method.path), [service = std::move(service), handler](ServerCall& call) -> Task<> {
    std::optional<ByteBuf> bytes = co_await call.read();
    if (!bytes) throw StatusError(Status(StatusCode::internal, "the client sent no request message"));
    Request request = parse_message<Request>(*bytes);
    if (co_await call.read())
      throw StatusError(Status(StatusCode::internal, "the client sent a second request message"));
    ServerWriter<Response> writer(call);
    co_await ((*service).*handler)(call, std::move(request), writer);
  });
}

template <class Service, class Request, class Response>
void add_client_streaming(ServiceRegistry& registry, const MethodDescriptor& method, std::shared_ptr<Service> service,
                          Task<Response> (Service::*handler)(ServerCall&, ServerReader<Request>&)) {
  registry.add(std::string(method.path), [service = std::move(service), handler](ServerCall& call) -> Task<> {
    ServerReader<Request> reader(call);
    Response response = co_await ((*service).*handler)(call, reader);
    co_await call.write(serialize_message(response));
  });
}

template <class Service, class Request, class Response>
void add_bidi_streaming(ServiceRegistry& registry, const MethodDescriptor& method, std::shared_ptr<Service> service,
                        Task<> (Service::*handler)(ServerCall&, ServerReaderWriter<Request, Response>&)) {
  grpc::add_method<Request, Response>(
      registry, std::string(method.path),
      [service = std::move(service), handler](ServerReaderWriter<Request, Response>& stream) {
        return ((*service).*handler)(stream.call(), stream);
      });
}

template <class Service, class Request, class Response>
void add_unary_callback(ServiceRegistry& registry, const MethodDescriptor& method, std::shared_ptr<Service> service,
                        void (Service::*handler)(ServerCall&, Request, TypedUnaryResponder<Response>)) {
  registry.add_unary_callback(std::string(method.path), [service = std::move(service), handler](
                                                            ServerCall& call, ByteBuf bytes, UnaryResponder responder) {
    Request request;
    if (!request.ParseFromArray(bytes.read_ptr(), static_cast<int>(bytes.readable_bytes()))) {
      responder.fail(Status(StatusCode::internal, "a request message did not parse"));
      return;
    }
    ((*service).*handler)(call, std::move(request), TypedUnaryResponder<Response>(std::move(responder)));
  });
}

template <class Service>
void add_reactor(ServiceRegistry& registry, const MethodDescriptor& method, std::shared_ptr<Service> service,
                 std::shared_ptr<ServerReactor> (Service::*handler)(ServerStream)) {
  registry.add_reactor(std::string(method.path), [service = std::move(service), handler](ServerStream stream) {
    return ((*service).*handler)(std::move(stream));
  });
}

}  // namespace detail
}  // namespace weft::grpc
