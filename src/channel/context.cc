#include "weft/channel/context.h"

#include "offload.h"
#include "weft/buffer/byte_buf.h"
#include "weft/channel/channel.h"
#include "weft/channel/pipeline.h"
#include "weft/core/error.h"
#include "weft/core/log.h"
#include "weft/core/stall_watch.h"

namespace weft {
namespace {

// Bytes an event queued for an executor counts for.
std::size_t queued_size(MessageRef message) noexcept {
  return ExecutorGroup::kTaskOverhead + message.size();
}

}  // namespace

Context::Context(Pipeline& pipeline, Handler* handler, detail::ContextCold* cold, int slot)
    : handler_(handler),
      pipeline_(pipeline),
      cold_(cold),
      own_cold_(cold == nullptr ? std::make_unique<detail::ContextCold>() : nullptr),
      slot_(static_cast<std::int8_t>(slot)) {
  if (cold_ == nullptr) cold_ = own_cold_.get();
}

void detail::ContextDeleter::operator()(Context* ctx) const noexcept {
  if (ctx->slot_ < 0) {
    delete ctx;
    return;
  }
  Pipeline& pipeline = ctx->pipeline_;
  const int slot = ctx->slot_;
  detail::ContextCold& cold = *ctx->cold_;
  ctx->~Context();
  cold = detail::ContextCold{};  // releases the handler, as deleting a heap context does
  pipeline.free_slot(slot);
}

Channel& Context::channel() const noexcept { return pipeline_.channel(); }

bool Context::writes_to_channel() const noexcept { return prev_ == &pipeline_.head_ && offload_ == nullptr; }

std::uint32_t Context::write_refusals() const noexcept { return pipeline_.channel_write_refusals(); }

void Context::add_write_completion(Promise<void> done, std::uint32_t refusals_before) {
  pipeline_.add_write_completion(std::move(done), refusals_before);
}

void Context::offloaded_write_completion(Promise<void> done) {
  // Posted after the write, so it runs once the write has reached the head on the loop.
  to_loop([this, done = std::move(done)]() mutable {
    pipeline_.add_write_completion(std::move(done), pipeline_.channel_write_refusals());
  });
}
EventLoop& Context::loop() const noexcept { return pipeline_.channel().loop(); }
ByteBufAllocator& Context::allocator() const noexcept { return pipeline_.channel().allocator(); }

void Context::handle_inbound_exception(std::exception_ptr error) noexcept {
  try {
    handler_->exception_caught(*this, error);
  } catch (...) {
    log(LogLevel::error, "handler '{}' threw from exception_caught while handling '{}': {}", cold_->name,
        describe_exception(error), describe_exception(std::current_exception()));
  }
}

void Context::handle_outbound_exception(std::exception_ptr error) noexcept {
  log(LogLevel::debug, "outbound operation failed in handler '{}': {}", cold_->name, describe_exception(error));
  if (offload_ != nullptr && off_loop()) [[unlikely]] {
    try {
      to_loop([this, error] { pipeline_.fire_exception(error); });
    } catch (...) {
      log(LogLevel::warn, "handler '{}': exception dropped: {}", cold_->name, describe_exception(error));
    }
    return;
  }
  pipeline_.fire_exception(std::move(error));
}

// ---- executor offload (slow path) ----------------------------------------------------------------

bool Context::off_loop() const noexcept { return !loop().in_loop(); }

void Context::to_loop(UniqueFunction<void()> task) {
  offload_->to_loop([this, task = std::move(task)]() mutable {
    if (removed_) {
      log(LogLevel::debug, "handler '{}' emitted an event after its removal; dropped", cold_->name);
      return;
    }
    Pipeline::Depth depth(pipeline_);
    task();
  });
}

void Context::to_executor(std::size_t size, UniqueFunction<void()> task) { offload_->to_executor(size, std::move(task)); }

bool Context::offloaded_fire_read(MessageRef message) {
  if (!off_loop()) return false;
  to_loop([this, m = message.take()]() mutable { next_->invoke_read(m.ref()); });
  return true;
}

bool Context::offloaded_write(MessageRef message) {
  if (!off_loop()) return false;
  to_loop([this, m = message.take()]() mutable { prev_->invoke_write(m.ref()); });
  return true;
}

#define COMMA ,

// Runs one inbound callback of the handler; an exception becomes that handler's exception_caught.
#define WEFT_INVOKE_INBOUND(target, call)                   \
  try {                                                     \
    call;                                                   \
  } catch (...) {                                           \
    (target)->handle_inbound_exception(std::current_exception()); \
  }

// An inbound event: from an offloaded handler's executor it goes to the loop first; to an
// offloaded handler it goes to its executor; else it runs here.
#define WEFT_FIRE_INBOUND(method, capture, call)                                                      \
  if (offload_ != nullptr && off_loop()) [[unlikely]] {                                              \
    to_loop([this capture] { method; });                                                             \
    return;                                                                                          \
  }                                                                                                  \
  if (next_->offload_ != nullptr) [[unlikely]] {                                                     \
    next_->to_executor(ExecutorGroup::kTaskOverhead, [c = next_ capture] { WEFT_INVOKE_INBOUND(c, call) }); \
    return;                                                                                          \
  }                                                                                                  \
  {                                                                                                  \
    Context* c = next_;                                                                              \
    WEFT_INVOKE_INBOUND(c, call)                                                                     \
  }

void Context::fire_channel_active() { WEFT_FIRE_INBOUND(fire_channel_active(), , c->handler_->channel_active(*c)) }
void Context::fire_channel_inactive() {
  if (offload_ == nullptr || !off_loop())
    next_->read_gate_ |= kReadsDropped;  // on the loop, before anything follows it
  WEFT_FIRE_INBOUND(fire_channel_inactive(), , c->handler_->channel_inactive(*c))
}
void Context::fire_read_complete() {
  WEFT_FIRE_INBOUND(fire_read_complete(), , c->handler_->channel_read_complete(*c))
}
void Context::fire_user_event(const std::any& event) {
  WEFT_FIRE_INBOUND(fire_user_event(event), COMMA event, c->handler_->user_event(*c, event))
}
void Context::fire_writability_changed() {
  WEFT_FIRE_INBOUND(fire_writability_changed(), , c->handler_->writability_changed(*c))
}
#undef WEFT_FIRE_INBOUND
#undef WEFT_INVOKE_INBOUND

void Context::fire_exception(std::exception_ptr error) {
  if (offload_ != nullptr && off_loop()) [[unlikely]] {
    to_loop([this, error] { fire_exception(error); });
    return;
  }
  Context* c = next_;
  auto run = [c](const std::exception_ptr& e) {
    try {
      c->handler_->exception_caught(*c, e);
    } catch (...) {
      log(LogLevel::error, "handler '{}' threw from exception_caught while handling '{}': {}", c->cold_->name, describe_exception(e),
          describe_exception(std::current_exception()));
    }
  };
  if (c->offload_ != nullptr) [[unlikely]] {
    c->to_executor(ExecutorGroup::kTaskOverhead, [run, error] { run(error); });
    return;
  }
  run(error);
}

// A handler's read timed for the loop's stall watch. Out of line and cold: invoke_read's own frame
// (its saved registers, on every read) stays as it was without the watch.
template <class Read>
[[gnu::noinline, gnu::cold]] void watched_read(detail::StallWatch& watch, const std::string& name, Read read,
                                               Context& ctx, MessageRef message) {
  const TimePoint began = Clock::now();
  watch.enter();
  read(ctx, message);
  watch.leave(began, Clock::now(), "handler", [&name] { return std::string_view(name); });
}

// The plain read, off invoke_read's path (which has the same lines: an inlined call there made GCC
// spill the message on every read).
void Context::invoke_read_unwatched(MessageRef message) {
  try {
    handler_->read_message(*this, message);
  } catch (...) {
    handle_inbound_exception(std::current_exception());
  }
}

// A read for a handler on an executor: queued there.
void Context::read_on_executor(MessageRef message) {
  to_executor(queued_size(message), [this, m = message.take()]() mutable {
    try {
      handler_->read_message(*this, m.ref());
    } catch (...) {
      handle_inbound_exception(std::current_exception());
    }
  });
}

void Context::invoke_read(MessageRef message) {
  if (read_gate_ != 0) [[unlikely]] {
    // Out of line: invoke_read's own frame (its saved registers, on every read) stays small.
    read_through_gate(message);
    return;
  }
  if (offload_ != nullptr) [[unlikely]] {
    read_on_executor(message);
    return;
  }
  try {
    handler_->read_message(*this, message);
  } catch (...) {
    handle_inbound_exception(std::current_exception());
  }
}

void Context::read_through_gate(MessageRef message) {
  if (read_gate_ & kReadsDropped) {
    log(LogLevel::debug, "handler '{}': a {} read after channel_inactive was dropped", cold_->name,
        type_name(message.type()));
    return;
  }
  if (offload_ != nullptr) {
    read_on_executor(message);
    return;
  }
  if (detail::StallWatch* watch = detail::t_stall_watch) {
    // This handler's read is a unit of its loop's work, named as the pipeline knows it.
    watched_read(
        *watch, cold_->name, [](Context& ctx, MessageRef m) { ctx.invoke_read_unwatched(m); }, *this, message);
    return;
  }
  invoke_read_unwatched(message);
}

void Context::invoke_write(MessageRef message) {
  if (offload_ != nullptr) [[unlikely]] {
    to_executor(queued_size(message), [this, m = message.take()]() mutable {
      try {
        handler_->write_message(*this, m.ref());
      } catch (...) {
        handle_outbound_exception(std::current_exception());
      }
    });
    return;
  }
  try {
    handler_->write_message(*this, message);
  } catch (...) {
    handle_outbound_exception(std::current_exception());
  }
}

// An outbound operation: the mirror image of WEFT_FIRE_INBOUND, towards prev_.
#define WEFT_OUTBOUND(method, capture, call, on_error)                                              \
  if (offload_ != nullptr && off_loop()) [[unlikely]] {                                            \
    to_loop([this capture]() mutable { method; });                                                 \
    return;                                                                                        \
  }                                                                                                \
  Context* c = prev_;                                                                              \
  auto run = [c capture]() mutable {                                                               \
    try {                                                                                          \
      call;                                                                                        \
    } catch (...) {                                                                                \
      on_error;                                                                                    \
    }                                                                                              \
  };                                                                                               \
  if (c->offload_ != nullptr) [[unlikely]] {                                                       \
    c->to_executor(ExecutorGroup::kTaskOverhead, std::move(run));                                  \
    return;                                                                                        \
  }                                                                                                \
  run();

void Context::flush() {
  WEFT_OUTBOUND(flush(), , c->handler_->flush(*c), c->handle_outbound_exception(std::current_exception()))
}

void Context::read() {
  WEFT_OUTBOUND(read(), , c->handler_->read(*c), c->handle_outbound_exception(std::current_exception()))
}

Future<void> Context::close() {
  Promise<void> promise(&loop());
  close(promise);
  return promise.future();
}

void Context::close(Promise<void> promise) {
  WEFT_OUTBOUND(close(promise), COMMA promise, c->handler_->close(*c, promise),
                promise.set_error(std::current_exception()))
}

Future<void> Context::bind(const SocketAddress& local) {
  Promise<void> promise(&loop());
  bind(local, promise);
  return promise.future();
}

void Context::bind(const SocketAddress& local, Promise<void> promise) {
  WEFT_OUTBOUND(bind(local, promise), COMMA local COMMA promise, c->handler_->bind(*c, local, promise),
                promise.set_error(std::current_exception()))
}

Future<void> Context::connect(const SocketAddress& remote) {
  Promise<void> promise(&loop());
  connect(remote, promise);
  return promise.future();
}

void Context::connect(const SocketAddress& remote, Promise<void> promise) {
  WEFT_OUTBOUND(connect(remote, promise), COMMA remote COMMA promise, c->handler_->connect(*c, remote, promise),
                promise.set_error(std::current_exception()))
}

#undef WEFT_OUTBOUND
#undef COMMA

}  // namespace weft
