#pragma once
/// @file
/// client::ClientStats: what an HttpClient's pools did, counted (see HttpClient::stats()).

#include <cstdint>

namespace weft::client {

/// Counters of an HttpClient, summed over its loops and origins. A snapshot: plain values.
struct ClientStats {
  std::uint64_t requests = 0;            ///< requests started (a redirect's next request counts too)
  std::uint64_t connections_opened = 0;  ///< connections asked for
  std::uint64_t connect_failures = 0;    ///< of those, the ones that never became ready
  std::uint64_t connections_reused = 0;  ///< requests given a connection that had served one before
  std::uint64_t retries = 0;             ///< requests sent again after their connection closed unanswered
  std::uint64_t queue_full = 0;          ///< requests refused with PoolQueueFullError
  std::uint64_t peak_connections = 0;    ///< the most connections one origin's pool held at once
  std::uint64_t open_connections = 0;    ///< connections held now, over every pool
};

}  // namespace weft::client
