#include "server_metrics.h"

#include <vector>

namespace weft::grpc::detail {

namespace {

// gRFC A66's default buckets (its 0 bound is the first here: an empty message, or no time at all).
const std::vector<double>& latency_bounds() {
  static const std::vector<double> bounds = {
      0,    0.00001, 0.00005, 0.0001, 0.0003, 0.0006, 0.0008, 0.001, 0.002, 0.003, 0.004, 0.005, 0.006, 0.008,
      0.01, 0.013,   0.016,   0.02,   0.025,  0.03,   0.04,   0.05,  0.065, 0.08,  0.1,   0.13,  0.16,  0.2,
      0.25, 0.3,     0.4,     0.5,    0.65,   0.8,    1,      2,     5,     10,    20,    50,    100};
  return bounds;
}
const std::vector<double>& size_bounds() {
  static const std::vector<double> bounds = {0,       1024,    2048,     4096,     16384,     65536,      262144,
                                             1048576, 4194304, 16777216, 67108864, 268435456, 1073741824, 4294967296};
  return bounds;
}

}  // namespace

MethodMetrics::MethodMetrics(std::string name) : name_(std::move(name)) {
  started_ = metrics::Registry::global()
                 .counter("grpc_server_call_started", "gRPC calls a server received (gRFC A66).", {"grpc_method"})
                 .counter({name_});
}

const MethodMetrics::ByStatus* MethodMetrics::by_status(std::size_t code) noexcept {
  if (const ByStatus* made = by_status_[code].load(std::memory_order_acquire)) return made;
  try {
    std::lock_guard lock(mutex_);
    if (const ByStatus* made = by_status_[code].load(std::memory_order_relaxed)) return made;
    metrics::Registry& registry = metrics::Registry::global();
    const std::string_view status = status_code_name(static_cast<StatusCode>(code));
    ByStatus& s = storage_[code];
    s.duration = registry
                     .histogram("grpc_server_call_duration_seconds",
                                "Time from a gRPC call's request head to its status (gRFC A66).",
                                {"grpc_method", "grpc_status"}, latency_bounds())
                     .histogram({name_, status});
    s.sent = registry
                 .histogram("grpc_server_call_sent_total_compressed_message_size_bytes",
                            "Message bytes a gRPC server call sent, compressed (gRFC A66).",
                            {"grpc_method", "grpc_status"}, size_bounds())
                 .histogram({name_, status});
    s.received = registry
                     .histogram("grpc_server_call_rcvd_total_compressed_message_size_bytes",
                                "Message bytes a gRPC server call received, compressed (gRFC A66).",
                                {"grpc_method", "grpc_status"}, size_bounds())
                     .histogram({name_, status});
    by_status_[code].store(&s, std::memory_order_release);
    return &s;
  } catch (...) {
    return nullptr;  // no memory for the series: the call goes uncounted
  }
}

void MethodMetrics::ended(StatusCode code, Duration duration, std::uint64_t sent_bytes,
                          std::uint64_t received_bytes) noexcept {
  const auto index = static_cast<std::size_t>(code);
  const ByStatus* s = by_status(index < kCodes ? index : static_cast<std::size_t>(StatusCode::unknown));
  if (s == nullptr) return;
  s->duration.observe(static_cast<double>(duration.count()) * 1e-9);
  s->sent.observe(static_cast<double>(sent_bytes));
  s->received.observe(static_cast<double>(received_bytes));
}

}  // namespace weft::grpc::detail
