#pragma once
/// @file
/// grpc::Caller: what a generated Stub calls over, a grpc::Client (one connection) or a
/// grpc::ClientChannel (calls balanced over a target's connections), behind one set of methods.
///
///   weft::grpc::Caller over_one(client);      // std::shared_ptr<weft::grpc::Client>
///   weft::grpc::Caller balanced(channel);     // std::shared_ptr<weft::grpc::ClientChannel>
///   weft::grpc::ClientCall call = balanced.call("/pkg.Service/Method");   // on balanced.loop()

#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "weft/grpc/channel.h"
#include "weft/grpc/client.h"
#include "weft/grpc/client_reactor.h"

namespace weft::grpc {

/// A Client or a ClientChannel, shared. A value type; thread-safety as the methods of what it holds.
class Caller {
 public:
  /// Calls over `client`. Not explicit: a Stub takes either.
  Caller(std::shared_ptr<Client> client) noexcept : client_(std::move(client)) {}  // NOLINT
  /// Calls over `channel`.
  Caller(std::shared_ptr<ClientChannel> channel) noexcept : channel_(std::move(channel)) {}  // NOLINT

  /// Loop thread only (loop()). Client::call or ClientChannel::call.
  ClientCall call(std::string_view method, const CallOptions& options = {}) const {
    return client_ ? client_->call(method, options) : channel_->call(method, options);
  }
  /// Loop thread only (loop()). Client::unary or ClientChannel::unary (which retries refused calls).
  Task<UnaryResult> unary(std::string method, ByteBuf request, CallOptions options = {}) const {
    if (client_) return client_->unary(std::move(method), std::move(request), std::move(options));
    return channel_->unary(std::move(method), std::move(request), std::move(options));
  }
  /// Thread-safe. The callback form of unary(): `done` runs once, on loop().
  void unary(std::string method, ByteBuf request, CallOptions options, UniqueFunction<void(UnaryResult)> done) const {
    if (client_) return client_->unary(std::move(method), std::move(request), std::move(options), std::move(done));
    channel_->unary(std::move(method), std::move(request), std::move(options), std::move(done));
  }
  /// Thread-safe. Client::start or ClientChannel::start: a call of any shape in callback form.
  ClientStream start(std::string method, CallOptions options, std::shared_ptr<ClientReactor> reactor) const {
    if (client_) return client_->start(std::move(method), std::move(options), std::move(reactor));
    return channel_->start(std::move(method), std::move(options), std::move(reactor));
  }
  /// Thread-safe. The loop of the calls.
  EventLoop& loop() const noexcept { return client_ ? client_->loop() : channel_->loop(); }
  /// Thread-safe. The client, or null over a channel.
  Client* client() const noexcept { return client_.get(); }
  /// Thread-safe. The channel, or null over a client.
  ClientChannel* channel() const noexcept { return channel_.get(); }

 private:
  std::shared_ptr<Client> client_;
  std::shared_ptr<ClientChannel> channel_;
};

}  // namespace weft::grpc
