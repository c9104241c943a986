#include "weft/channel/context.h"

#include "weft/channel/channel.h"
#include "weft/channel/pipeline.h"
#include "weft/core/log.h"

namespace weft {
namespace {

std::string describe(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "non-standard exception";
  }
}

}  // namespace

Context::Context(Pipeline& pipeline, std::string name, Handler* handler, std::shared_ptr<Handler> owner)
    : pipeline_(pipeline),
      name_(std::move(name)),
      handler_(handler),
      owner_(std::move(owner)),
      types_(handler->message_types()) {}

Channel& Context::channel() const noexcept { return pipeline_.channel(); }
EventLoop& Context::loop() const noexcept { return pipeline_.channel().loop(); }
ByteBufAllocator& Context::allocator() const noexcept { return pipeline_.channel().allocator(); }

void Context::handle_inbound_exception(std::exception_ptr error) noexcept {
  try {
    handler_->exception_caught(*this, error);
  } catch (...) {
    log(LogLevel::error, "handler '{}' threw from exception_caught while handling '{}': {}", name_,
        describe(error), describe(std::current_exception()));
  }
}

void Context::handle_outbound_exception(std::exception_ptr error) noexcept {
  log(LogLevel::debug, "outbound operation failed in handler '{}': {}", name_, describe(error));
  pipeline_.fire_exception(std::move(error));
}

// Runs one inbound callback of the handler; an exception becomes that handler's exception_caught.
#define WEFT_INVOKE_INBOUND(call)                          \
  try {                                                    \
    call;                                                  \
  } catch (...) {                                          \
    next_->handle_inbound_exception(std::current_exception()); \
  }

void Context::fire_channel_active() { WEFT_INVOKE_INBOUND(next_->handler_->channel_active(*next_)) }
void Context::fire_channel_inactive() { WEFT_INVOKE_INBOUND(next_->handler_->channel_inactive(*next_)) }
void Context::fire_read_complete() { WEFT_INVOKE_INBOUND(next_->handler_->channel_read_complete(*next_)) }
void Context::fire_user_event(const std::any& event) { WEFT_INVOKE_INBOUND(next_->handler_->user_event(*next_, event)) }
void Context::fire_writability_changed() { WEFT_INVOKE_INBOUND(next_->handler_->writability_changed(*next_)) }
#undef WEFT_INVOKE_INBOUND

void Context::fire_exception(std::exception_ptr error) {
  try {
    next_->handler_->exception_caught(*next_, error);
  } catch (...) {
    log(LogLevel::error, "handler '{}' threw from exception_caught while handling '{}': {}", next_->name_,
        describe(error), describe(std::current_exception()));
  }
}

void Context::invoke_read(MessageRef message) {
  try {
    handler_->read_message(*this, message);
  } catch (...) {
    handle_inbound_exception(std::current_exception());
  }
}

void Context::invoke_write(MessageRef message) {
  try {
    handler_->write_message(*this, message);
  } catch (...) {
    handle_outbound_exception(std::current_exception());
  }
}

void Context::flush() {
  try {
    prev_->handler_->flush(*prev_);
  } catch (...) {
    prev_->handle_outbound_exception(std::current_exception());
  }
}

void Context::read() {
  try {
    prev_->handler_->read(*prev_);
  } catch (...) {
    prev_->handle_outbound_exception(std::current_exception());
  }
}

Future<void> Context::close() {
  Promise<void> promise(&loop());
  close(promise);
  return promise.future();
}

void Context::close(Promise<void> promise) {
  try {
    prev_->handler_->close(*prev_, promise);
  } catch (...) {
    promise.set_error(std::current_exception());
  }
}

Future<void> Context::bind(const SocketAddress& local) {
  Promise<void> promise(&loop());
  bind(local, promise);
  return promise.future();
}

void Context::bind(const SocketAddress& local, Promise<void> promise) {
  try {
    prev_->handler_->bind(*prev_, local, promise);
  } catch (...) {
    promise.set_error(std::current_exception());
  }
}

Future<void> Context::connect(const SocketAddress& remote) {
  Promise<void> promise(&loop());
  connect(remote, promise);
  return promise.future();
}

void Context::connect(const SocketAddress& remote, Promise<void> promise) {
  try {
    prev_->handler_->connect(*prev_, remote, promise);
  } catch (...) {
    promise.set_error(std::current_exception());
  }
}

}  // namespace weft
