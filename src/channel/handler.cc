#include "weft/channel/handler.h"

#include <cxxabi.h>

#include <cstdlib>
#include <memory>

#include <fmt/format.h>

#include "weft/channel/context.h"
#include "weft/core/error.h"

namespace weft {

std::string type_name(const std::type_info& type) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> demangled(abi::__cxa_demangle(type.name(), nullptr, nullptr, &status),
                                                   std::free);
  return status == 0 && demangled ? std::string(demangled.get()) : std::string(type.name());
}

void Handler::channel_active(Context& ctx) { ctx.fire_channel_active(); }
void Handler::channel_inactive(Context& ctx) { ctx.fire_channel_inactive(); }
void Handler::channel_read_complete(Context& ctx) { ctx.fire_read_complete(); }
void Handler::user_event(Context& ctx, const std::any& event) { ctx.fire_user_event(event); }
void Handler::writability_changed(Context& ctx) { ctx.fire_writability_changed(); }
void Handler::exception_caught(Context& ctx, std::exception_ptr error) { ctx.fire_exception(std::move(error)); }

void Handler::bind(Context& ctx, const SocketAddress& local, Promise<void> promise) {
  ctx.bind(local, std::move(promise));
}

void Handler::connect(Context& ctx, const SocketAddress& remote, Promise<void> promise) {
  ctx.connect(remote, std::move(promise));
}

void Handler::flush(Context& ctx) { ctx.flush(); }
void Handler::read(Context& ctx) { ctx.read(); }
void Handler::close(Context& ctx, Promise<void> promise) { ctx.close(std::move(promise)); }

void Handler::read_message(Context& ctx, MessageRef message) { ctx.fire_read_erased(message); }

void Handler::write_message(Context& ctx, MessageRef message) { ctx.write_erased(message); }

void Handler::throw_type_mismatch(const Context& ctx, const char* direction, const std::type_info& expected,
                                  const std::type_info& type) {
  throw PipelineTypeError(fmt::format("handler '{}' takes {} messages of type {} but received {}", ctx.name(),
                                      direction, type_name(expected), type_name(type)));
}

}  // namespace weft
