#pragma once
// A connection of an OriginPool: HTTP/1.1 (one request at a time) or HTTP/2 (streams up to the
// server's SETTINGS_MAX_CONCURRENT_STREAMS). Its channel may run on another loop than the pool's
// (Bootstrap chooses the loop); what it reports reaches the pool on the pool's loop. The fields
// below and every method: pool loop only.

#include <cstddef>
#include <exception>
#include <memory>

#include "weft/channel/channel.h"
#include "weft/core/clock.h"
#include "weft/core/event_loop.h"

namespace weft::client::detail {

struct Exchange;
class OriginPool;

class PooledConnection : public std::enable_shared_from_this<PooledConnection> {
 public:
  explicit PooledConnection(std::weak_ptr<OriginPool> pool, EventLoop& pool_loop) noexcept
      : pool_(std::move(pool)), pool_loop_(pool_loop), keep_pool_loop_(pool_loop) {}
  virtual ~PooledConnection() = default;
  PooledConnection(const PooledConnection&) = delete;
  PooledConnection& operator=(const PooledConnection&) = delete;

  // Carries `x` (ready, not dead, below capacity).
  virtual void send(std::shared_ptr<Exchange> x) = 0;
  // Gives up `x` (its request timed out): HTTP/1.1 closes the connection, HTTP/2 resets its stream (CANCEL).
  virtual void abandon(Exchange& x) = 0;
  // Closes the connection; what it carries fails with ChannelClosedError.
  virtual void close() = 0;

  bool ready = false;        // connected (TLS, ALPN, HTTP/2 SETTINGS): it may take requests
  bool dead = false;         // failed, closed, or not to be reused: never handed out again
  bool http2 = false;        // the protocol, once ready
  std::size_t capacity = 1;  // requests at once: 1, or the server's concurrency limit
  std::size_t in_flight = 0;
  std::size_t served = 0;  // requests answered on it
  TimePoint opened_at{};   // when it became ready (max_connection_age counts from it)
  TimePoint idle_since{};
  bool in_idle_stack = false;  // OriginPool's stack of idle connections holds it

 protected:
  // Runs `fn` on the pool's loop: now when this is it, else posted (dropped once it terminated,
  // and then the pool's promises break with BrokenPromiseError).
  template <class F>
  void on_pool_loop(F&& fn) {
    if (pool_loop_.in_loop()) {
      fn();
    } else {
      pool_loop_.try_execute(UniqueFunction<void()>(std::forward<F>(fn)));
    }
  }
  std::shared_ptr<OriginPool> pool() const noexcept { return pool_.lock(); }
  EventLoop& pool_loop() const noexcept { return pool_loop_; }

 private:
  std::weak_ptr<OriginPool> pool_;
  EventLoop& pool_loop_;
  // The channel's loop may outlive the pool's (a group's loops end one by one): a late report
  // then finds the pool's loop terminated, not freed.
  EventLoop::KeepAlive keep_pool_loop_;
};

}  // namespace weft::client::detail
