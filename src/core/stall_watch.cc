#include "weft/core/stall_watch.h"

#include <cxxabi.h>

#include <cstdlib>
#include <memory>

#include "weft/core/log.h"

namespace weft::detail {

constinit thread_local StallWatch* t_stall_watch = nullptr;
constinit thread_local StallWatch* t_poll_watch = nullptr;

std::string StallWatch::type_name(const std::type_info& type) {
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> demangled(abi::__cxa_demangle(type.name(), nullptr, nullptr, &status),
                                                        &std::free);
  return status == 0 && demangled ? std::string(demangled.get()) : std::string(type.name());
}

void StallWatch::report(std::string_view kind, std::string_view name, Duration took) {
  if (reported_) return;  // an inner unit of this one was reported: it is the stall
  reported_ = true;
  stalls_.store(stalls_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  if (logged_names_.contains(std::string(name))) return;
  if (logged_names_.size() >= kMaxLoggedNames) {
    if (!names_full_logged_) {
      names_full_logged_ = true;
      log(LogLevel::warn, "event loop '{}': {} stall names logged; later stalls are only counted", loop_name_,
          kMaxLoggedNames);
    }
    return;
  }
  logged_names_.emplace(name);
  log(LogLevel::warn, "event loop '{}' stalled: {} '{}' ran {:.3f} ms (threshold {:.3f} ms); logged once per name",
      loop_name_, kind, name, std::chrono::duration<double, std::milli>(took).count(),
      std::chrono::duration<double, std::milli>(threshold_).count());
}

}  // namespace weft::detail
