#pragma once
/// @file
/// grpc::HealthService: grpc's standard health service (`grpc.health.v1.Health`, Check and Watch),
/// wire-compatible with grpc's published health.proto and behaving as grpc++'s
/// DefaultHealthCheckService, ready to add to a ServiceRegistry.
///
///   weft::grpc::ServiceRegistry services;
///   weft::grpc::HealthService health;             // "" (the whole server) is SERVING
///   health.add_to(services);
///   health.set_status("pkg.Echo", weft::grpc::ServingStatus::serving);
///   ...
///   health.enter_shutdown();                      // on SIGTERM, before weft::drain_server
///
/// Check answers a service's status, NOT_FOUND for a name never set. Watch sends the status at once
/// (SERVICE_UNKNOWN for a name never set, and goes on watching), then each change until the client
/// cancels: only changes, and the newest wins (a client that reads slowly gets the latest status, not
/// every one in between: a watch holds one status, never a queue). A request that does not parse is
/// answered INTERNAL. enter_shutdown() makes every service NOT_SERVING for good and ends every Watch
/// (NOT_SERVING, then OK), so that a draining server is not held until its deadline by Watch streams.
/// Without it, a drain does the same on each connection it ends (weft::drain_server, the loop's
/// graceful shutdown: ServerCall::draining()): its Watch calls send NOT_SERVING and end OK, and a
/// Check that arrives on it meanwhile answers NOT_SERVING; calls on other connections are not touched.
///
/// The two messages are encoded and decoded here (libweft does not link libprotobuf): health_*
/// functions below, which a client may use too.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "weft/buffer/byte_buf.h"

namespace weft::grpc {

class ServiceRegistry;

/// health.proto's HealthCheckResponse.ServingStatus (the same numbers on the wire).
enum class ServingStatus : std::int32_t {
  unknown = 0,          ///< UNKNOWN
  serving = 1,          ///< SERVING
  not_serving = 2,      ///< NOT_SERVING
  service_unknown = 3,  ///< SERVICE_UNKNOWN: only Watch sends it, for a service never set
};

/// Thread-safe (pure). health.proto's name of `status` ("SERVING"...), "INVALID" for another number.
std::string_view serving_status_name(ServingStatus status) noexcept;

/// Thread-safe (pure). A HealthCheckRequest{service} as protobuf encodes it.
ByteBuf health_encode_request(std::string_view service);
/// Thread-safe (pure). The service of a HealthCheckRequest (the last field 1 wins; other fields, and
/// field 1 of another wire type, are skipped by their wire type as protobuf does); nullopt when the
/// bytes are not a protobuf message.
std::optional<std::string> health_decode_request(std::string_view bytes);
/// Thread-safe (pure). A HealthCheckResponse{status} as protobuf encodes it (SERVING: 2 bytes).
ByteBuf health_encode_response(ServingStatus status);
/// Thread-safe (pure). The status of a HealthCheckResponse (a number outside the enum is kept, as
/// proto3 keeps open enums); nullopt when the bytes are not a protobuf message.
std::optional<ServingStatus> health_decode_response(std::string_view bytes);

/// The health service (see the file's description). Every method is thread-safe. The service's state
/// lives as long as the HealthService or a registry's method or call that serves it.
class HealthService {
 public:
  /// The method paths served.
  static constexpr std::string_view kCheckMethod = "/grpc.health.v1.Health/Check";
  /// The method paths served.
  static constexpr std::string_view kWatchMethod = "/grpc.health.v1.Health/Watch";

  /// Thread-safe. A service where "" (the whole server) is SERVING and no other name is known.
  HealthService();
  ~HealthService();
  HealthService(const HealthService&) = delete;
  HealthService& operator=(const HealthService&) = delete;

  /// Not thread-safe against other use of `registry` (register before serving, as every method).
  /// Registers Check and Watch on `registry`; they serve this service's statuses.
  void add_to(ServiceRegistry& registry) const;

  /// Thread-safe (any thread). Sets the status of `service` ("" for the whole server) and tells the
  /// calls watching it, each on its own loop. Ignored after enter_shutdown(). Throws
  /// std::invalid_argument for ServingStatus::service_unknown (a status only Watch answers).
  void set_status(std::string_view service, ServingStatus status);
  /// Thread-safe. The status of `service`; nullopt for a name never set (Check answers NOT_FOUND).
  std::optional<ServingStatus> status(std::string_view service) const;
  /// Thread-safe; the first call counts (grpc++'s HealthCheckServiceInterface::Shutdown). Every
  /// service NOT_SERVING from now on, set_status() ignored; every open Watch gets NOT_SERVING and then
  /// ends OK, and a Watch started later does the same at once. Call it when the server starts to drain.
  void enter_shutdown();
  /// Thread-safe. Whether enter_shutdown() was called.
  bool shutting_down() const;

  struct State;  ///< The statuses and the watching calls (grpc/health.cc).

 private:
  std::shared_ptr<State> state_;
};

}  // namespace weft::grpc
