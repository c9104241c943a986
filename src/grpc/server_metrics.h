#pragma once
// A gRPC server's per-call metrics, gRFC A66's server instruments in Prometheus form, into
// metrics::Registry::global():
//   grpc_server_call_started_total{grpc_method}                                          counter
//   grpc_server_call_duration_seconds{grpc_method, grpc_status}                           histogram
//   grpc_server_call_sent_total_compressed_message_size_bytes{grpc_method, grpc_status}   histogram
//   grpc_server_call_rcvd_total_compressed_message_size_bytes{grpc_method, grpc_status}   histogram
// `grpc_method` is a registered method's name without its leading '/', or "other" for any path
// not registered (A66: what clients send cannot grow the series); `grpc_status` the code's name.
// Each method's handles are made when the registry's stream chooser is, its per-status ones on
// the first call ending with that status; a call then writes the thread's own cells.

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "weft/core/clock.h"
#include "weft/grpc/status.h"
#include "weft/metrics/registry.h"

namespace weft::grpc::detail {

class MethodMetrics {
 public:
  // The handles of method `name` (its label). Throws what Registry throws.
  explicit MethodMetrics(std::string name);
  // A call started. Thread-safe.
  void started() const noexcept { started_.inc(); }
  // A call ended with `code` after `duration`, having sent and received these message bytes.
  // Thread-safe.
  void ended(StatusCode code, Duration duration, std::uint64_t sent_bytes, std::uint64_t received_bytes) noexcept;

 private:
  static constexpr std::size_t kCodes = 17;
  struct ByStatus {
    metrics::Histogram duration, sent, received;
  };
  const ByStatus* by_status(std::size_t code) noexcept;

  const std::string name_;
  metrics::Counter started_;
  std::array<std::atomic<const ByStatus*>, kCodes> by_status_{};  // made on first use, under mutex_
  std::array<ByStatus, kCodes> storage_{};
  std::mutex mutex_;
};

// The methods of one stream chooser: each registered path's metrics, and "other" for the rest.
struct ServerMetrics {
  std::map<std::string, std::shared_ptr<MethodMetrics>, std::less<>> methods;
  std::shared_ptr<MethodMetrics> other;
};

}  // namespace weft::grpc::detail
