// Resolver: c-ares driven by the loop's timers.
//
// Why a timer and not the loop's I/O: the epoll and io_uring drivers can watch a descriptor, but the
// blocking transport's driver watches its one channel's socket and nothing else, and a loop made
// with BasicDriver watches none. c-ares' sockets are non-blocking, so every loop can serve them the
// same way: while a query is in flight, a timer of the loop (ResolverOptions::poll_interval) asks
// c-ares for its sockets (ares_getsock), checks them with one poll(2) of timeout zero, and hands the
// ready ones to ares_process_fd, which also runs c-ares' retransmissions and timeouts. With nothing
// in flight there is no timer; cache, hosts-file and numeric answers never start one. The price is
// at most one interval of latency on an answer from the network.
//
// Re-entrancy: c-ares calls back from inside ares_getaddrinfo, ares_process_fd and ares_destroy. The
// callback only records the outcome (ready_); promises are completed by flush(), after c-ares has
// returned and as the last step of whatever called it, so a listener may resolve again or destroy
// the resolver.

#include "weft/dns/resolver.h"

#include <ares.h>
#include <poll.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <unordered_map>

#include "dns_cache.h"
#include "host_name.h"
#include "weft/core/log.h"
#include "weft/dns/dns_error.h"
#include "weft/dns/hosts_file.h"

namespace weft {

namespace {

using Addresses = std::vector<SocketAddress>;

void init_ares_library() {
  static std::once_flag once;
  static int status = ARES_SUCCESS;
  std::call_once(once, [] { status = ::ares_library_init(ARES_LIB_INIT_ALL); });
  if (status != ARES_SUCCESS) throw DnsError(DnsErrorCode::failure, "", ::ares_strerror(status));
}

DnsErrorCode code_of(int status) noexcept {
  switch (status) {
    case ARES_ENOTFOUND: return DnsErrorCode::not_found;
    case ARES_ENODATA: return DnsErrorCode::no_address;
    case ARES_ETIMEOUT: return DnsErrorCode::timeout;
    case ARES_ESERVFAIL:
    case ARES_EREFUSED:
    case ARES_ECONNREFUSED:
    case ARES_EBADRESP:
    case ARES_EFORMERR:
    case ARES_ENOTIMP: return DnsErrorCode::server_failure;
    case ARES_EBADNAME: return DnsErrorCode::bad_name;
    case ARES_EDESTRUCTION:
    case ARES_ECANCELLED: return DnsErrorCode::cancelled;
    default: return DnsErrorCode::failure;
  }
}

int family_of(AddressFamily family) noexcept {
  return family == AddressFamily::ipv4 ? AF_INET : family == AddressFamily::ipv6 ? AF_INET6 : AF_UNSPEC;
}

// `addresses` with `port`, the preferred family first (each family in its given order).
Addresses answer(const Addresses& addresses, std::uint16_t port, AddressFamily preferred) {
  Addresses out;
  out.reserve(addresses.size());
  for (const SocketAddress& a : addresses) out.push_back(dns_detail::with_port(a, port));
  if (preferred != AddressFamily::any) {
    int first = family_of(preferred);
    std::stable_partition(out.begin(), out.end(), [first](const SocketAddress& a) { return a.family() == first; });
  }
  return out;
}

}  // namespace

class Resolver::Impl : public std::enable_shared_from_this<Resolver::Impl> {
 public:
  Impl(EventLoop& loop, ResolverOptions options);
  ~Impl();
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  void resolve(std::string_view host, std::uint16_t port, Promise<Addresses> promise);
  void close();
  void clear_cache() { cache_.clear(); }
  const ResolverStats& stats() const noexcept { return stats_; }

 private:
  struct Waiter {
    Promise<Addresses> promise;
    std::uint16_t port;
  };
  struct Query {
    Impl* impl;
    std::string key;   // name and family: the cache's and pending_'s key
    std::string host;  // as the first caller spelled it, for errors
    std::vector<Waiter> waiters;
    TimerId timeout_timer = 0;
    bool finished = false;  // answered or timed out; c-ares may still hold it
  };
  struct Completion {
    std::vector<Waiter> waiters;
    Addresses addresses;
    std::exception_ptr error;
  };

  static void on_answer(void* arg, int status, int timeouts, ares_addrinfo* result) noexcept;
  void answered(Query& query, int status, ares_addrinfo* result);
  void on_timeout(Query* query);
  void finish(Query& query, Addresses addresses, std::exception_ptr error);
  void refresh_hosts();
  void arm_poll();
  void poll_sockets();
  void flush();

  EventLoop& loop_;
  ResolverOptions options_;
  ares_channel channel_ = nullptr;
  bool closed_ = false;
  dns_detail::DnsCache cache_;
  HostsFile hosts_;
  bool hosts_loaded_ = false;
  TimePoint hosts_checked_{};
  struct timespec hosts_mtime_ {};
  off_t hosts_size_ = -1;
  std::unordered_map<std::string, Query*> pending_;               // by key, not finished
  std::unordered_map<Query*, std::unique_ptr<Query>> in_flight_;  // until c-ares lets go
  std::vector<Completion> ready_;
  TimerId poll_timer_ = 0;
  bool poll_armed_ = false;
  ResolverStats stats_;
};

Resolver::Impl::Impl(EventLoop& loop, ResolverOptions options)
    : loop_(loop), options_(std::move(options)), cache_(options_.max_cache_entries) {
  if (options_.timeout <= Duration::zero()) throw std::invalid_argument("ResolverOptions: timeout must be positive");
  if (options_.poll_interval <= Duration::zero()) {
    throw std::invalid_argument("ResolverOptions: poll_interval must be positive");
  }
  init_ares_library();
  ares_options ao{};
  int mask = ARES_OPT_FLAGS | ARES_OPT_TIMEOUTMS | ARES_OPT_TRIES | ARES_OPT_LOOKUPS;
  ao.flags = options_.search_domains ? 0 : ARES_FLAG_NOSEARCH;
  // Two tries, the first at half the timeout: one lost datagram is retransmitted in time.
  auto timeout_ms = std::chrono::duration_cast<std::chrono::milliseconds>(options_.timeout).count();
  ao.timeout = static_cast<int>(std::clamp<std::int64_t>(timeout_ms / 2, 1, std::numeric_limits<int>::max()));
  ao.tries = 2;
  char lookups[] = "b";  // DNS only: the hosts file is read here (a path per resolver, cached)
  ao.lookups = lookups;
  int status = ::ares_init_options(&channel_, &ao, mask);
  if (status != ARES_SUCCESS) throw DnsError(DnsErrorCode::failure, "", ::ares_strerror(status));
  if (!options_.servers.empty()) {
    std::vector<ares_addr_port_node> nodes(options_.servers.size());
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      const SocketAddress& server = options_.servers[i];
      ares_addr_port_node& node = nodes[i];
      node.next = i + 1 < nodes.size() ? &nodes[i + 1] : nullptr;
      node.family = server.family();
      node.udp_port = node.tcp_port = server.port() == 0 ? 53 : server.port();
      if (server.family() == AF_INET) {
        node.addr.addr4 = reinterpret_cast<const sockaddr_in*>(server.raw())->sin_addr;
      } else {
        std::memcpy(&node.addr.addr6, &reinterpret_cast<const sockaddr_in6*>(server.raw())->sin6_addr,
                    sizeof node.addr.addr6);
      }
    }
    status = ::ares_set_servers_ports(channel_, nodes.data());
    if (status != ARES_SUCCESS) {
      ::ares_destroy(channel_);
      throw std::invalid_argument(std::string("ResolverOptions: servers: ") + ::ares_strerror(status));
    }
  }
}

Resolver::Impl::~Impl() {
  if (channel_ != nullptr) ::ares_destroy(channel_);
}

void Resolver::Impl::close() {
  if (closed_) return;
  closed_ = true;
  if (loop_.in_loop()) {
    if (poll_armed_) loop_.cancel(poll_timer_);
    for (auto& [query, owned] : in_flight_) {
      if (!query->finished) loop_.cancel(query->timeout_timer);
    }
  }
  poll_armed_ = false;
  ::ares_destroy(std::exchange(channel_, nullptr));  // calls back every query with ARES_EDESTRUCTION
  flush();
}

void Resolver::Impl::resolve(std::string_view host, std::uint16_t port, Promise<Addresses> promise) {
  if (closed_) {
    promise.fail(DnsError(DnsErrorCode::cancelled, std::string(host), "the resolver was destroyed"));
    return;
  }
  if (auto numeric = dns_detail::numeric_address(host)) {
    ++stats_.numeric;
    promise.set_value(Addresses{dns_detail::with_port(*numeric, port)});
    return;
  }
  std::string name = dns_detail::normalize_host_name(host);
  if (name.empty()) {
    promise.fail(DnsError(DnsErrorCode::bad_name, std::string(host)));
    return;
  }
  refresh_hosts();
  Addresses from_hosts;
  for (const SocketAddress& a : hosts_.lookup(name)) {
    if (options_.family == AddressFamily::any || a.family() == family_of(options_.family)) from_hosts.push_back(a);
  }
  if (from_hosts.empty() && (name == "localhost" || name.ends_with(".localhost"))) {
    // RFC 6761 section 6.3: loopback, never asked of a server, even when the hosts file lacks it.
    for (const char* loopback : {"::1", "127.0.0.1"}) {
      SocketAddress a = *dns_detail::numeric_address(loopback);
      if (options_.family == AddressFamily::any || a.family() == family_of(options_.family)) from_hosts.push_back(a);
    }
  }
  if (!from_hosts.empty()) {
    ++stats_.hosts_hits;
    promise.set_value(answer(from_hosts, port, options_.preferred));
    return;
  }
  std::string key = name;
  key += options_.family == AddressFamily::ipv4 ? "/4" : options_.family == AddressFamily::ipv6 ? "/6" : "/*";
  if (const dns_detail::CacheEntry* hit = cache_.find(key, loop_.now())) {
    ++stats_.cache_hits;
    if (hit->addresses.empty()) {
      promise.fail(DnsError(hit->error, std::string(host), "cached"));
    } else {
      promise.set_value(answer(hit->addresses, port, options_.preferred));
    }
    return;
  }
  if (auto it = pending_.find(key); it != pending_.end()) {
    it->second->waiters.push_back(Waiter{std::move(promise), port});
    return;
  }
  auto owned = std::make_unique<Query>();
  Query* query = owned.get();
  query->impl = this;
  query->key = key;
  query->host = std::string(host);
  query->waiters.push_back(Waiter{std::move(promise), port});
  query->timeout_timer = loop_.schedule(options_.timeout, [weak = weak_from_this(), query] {
    if (auto self = weak.lock()) self->on_timeout(query);
  });
  pending_.emplace(key, query);
  in_flight_.emplace(query, std::move(owned));
  ++stats_.queries;
  ares_addrinfo_hints hints{};
  hints.ai_family = family_of(options_.family);
  hints.ai_flags = ARES_AI_NOSORT;  // the preferred family goes first here; RFC 6724 sorting probes routes
  ::ares_getaddrinfo(channel_, name.c_str(), nullptr, &hints, &Impl::on_answer, query);
  arm_poll();
  flush();  // c-ares may have answered at once
}

void Resolver::Impl::on_answer(void* arg, int status, int /*timeouts*/, ares_addrinfo* result) noexcept {
  auto* query = static_cast<Query*>(arg);
  Impl& self = *query->impl;
  try {
    if (!query->finished) self.answered(*query, status, result);
  } catch (...) {
    // Only allocation can fail here: the waiters stay with the query and break when it goes.
    log_write(LogLevel::error, "dns: could not record an answer (out of memory): its waiters fail");
  }
  if (result != nullptr) ::ares_freeaddrinfo(result);
  self.in_flight_.erase(query);
}

void Resolver::Impl::answered(Query& query, int status, ares_addrinfo* result) {
  if (!closed_) loop_.cancel(query.timeout_timer);
  Addresses addresses;
  int ttl = std::numeric_limits<int>::max();
  if (status == ARES_SUCCESS && result != nullptr) {
    for (ares_addrinfo_node* node = result->nodes; node != nullptr; node = node->ai_next) {
      if (node->ai_family != AF_INET && node->ai_family != AF_INET6) continue;
      SocketAddress address(node->ai_addr, static_cast<socklen_t>(node->ai_addrlen));
      address = dns_detail::with_port(address, 0);
      bool seen = std::any_of(addresses.begin(), addresses.end(), [&](const SocketAddress& a) {
        return a.length() == address.length() && std::memcmp(a.raw(), address.raw(), a.length()) == 0;
      });
      if (!seen) addresses.push_back(address);
      ttl = std::min(ttl, std::max(node->ai_ttl, 0));
    }
    if (addresses.empty()) status = ARES_ENODATA;
  }
  TimePoint now = loop_.now();
  if (status == ARES_SUCCESS) {
    Duration lifetime = std::min<Duration>(options_.max_ttl, std::chrono::seconds(ttl));
    cache_.put(query.key, dns_detail::CacheEntry{addresses, DnsErrorCode::failure, now + lifetime, now}, now);
    finish(query, std::move(addresses), nullptr);
    return;
  }
  DnsErrorCode code = code_of(status);
  if (code == DnsErrorCode::not_found || code == DnsErrorCode::no_address) {
    cache_.put(query.key, dns_detail::CacheEntry{{}, code, now + options_.negative_ttl, now}, now);
  }
  std::string detail = code == DnsErrorCode::cancelled ? "the resolver was destroyed" : ::ares_strerror(status);
  finish(query, {}, std::make_exception_ptr(DnsError(code, query.host, detail)));
}

void Resolver::Impl::on_timeout(Query* query) {
  if (!in_flight_.contains(query) || query->finished) return;
  auto timeout = std::chrono::duration_cast<std::chrono::milliseconds>(options_.timeout).count();
  finish(*query, {},
         std::make_exception_ptr(
             DnsError(DnsErrorCode::timeout, query->host, "no answer in " + std::to_string(timeout) + " ms")));
  flush();
}

void Resolver::Impl::finish(Query& query, Addresses addresses, std::exception_ptr error) {
  query.finished = true;
  if (auto it = pending_.find(query.key); it != pending_.end() && it->second == &query) pending_.erase(it);
  ready_.push_back(Completion{std::move(query.waiters), std::move(addresses), std::move(error)});
}

void Resolver::Impl::flush() {
  if (ready_.empty()) return;
  std::vector<Completion> ready = std::move(ready_);
  ready_.clear();
  AddressFamily preferred = options_.preferred;
  // From here on `this` may be destroyed by a listener: only locals are used.
  for (Completion& done : ready) {
    for (Waiter& waiter : done.waiters) {
      if (done.error) {
        waiter.promise.set_error(done.error);
      } else {
        waiter.promise.set_value(answer(done.addresses, waiter.port, preferred));
      }
    }
  }
}

void Resolver::Impl::refresh_hosts() {
  if (options_.hosts_file.empty()) return;
  TimePoint now = loop_.now();
  if (hosts_loaded_ && now - hosts_checked_ < options_.hosts_file_check_interval) return;
  hosts_checked_ = now;
  struct stat st {};
  if (::stat(options_.hosts_file.c_str(), &st) != 0) st = {};
  bool changed = !hosts_loaded_ || st.st_size != hosts_size_ || st.st_mtim.tv_sec != hosts_mtime_.tv_sec ||
                 st.st_mtim.tv_nsec != hosts_mtime_.tv_nsec;
  if (!changed) return;
  hosts_ = HostsFile::load(options_.hosts_file);
  hosts_loaded_ = true;
  hosts_size_ = st.st_size;
  hosts_mtime_ = st.st_mtim;
}

void Resolver::Impl::arm_poll() {
  if (poll_armed_ || closed_ || in_flight_.empty()) return;
  poll_armed_ = true;
  poll_timer_ = loop_.schedule(options_.poll_interval, [weak = weak_from_this()] {
    if (auto self = weak.lock()) self->poll_sockets();
  });
}

void Resolver::Impl::poll_sockets() {
  poll_armed_ = false;
  if (closed_) return;
  auto keep = shared_from_this();  // a listener run by flush() may destroy the Resolver
  ares_socket_t sockets[ARES_GETSOCK_MAXNUM];
  int bits = ::ares_getsock(channel_, sockets, ARES_GETSOCK_MAXNUM);
  pollfd fds[ARES_GETSOCK_MAXNUM];
  nfds_t count = 0;
  for (int i = 0; i < ARES_GETSOCK_MAXNUM; ++i) {
    short events = 0;
    if (ARES_GETSOCK_READABLE(bits, i)) events |= POLLIN;
    if (ARES_GETSOCK_WRITABLE(bits, i)) events |= POLLOUT;
    if (events != 0) fds[count++] = pollfd{sockets[i], events, 0};
  }
  if (count > 0 && ::poll(fds, count, 0) > 0) {
    for (nfds_t i = 0; i < count; ++i) {
      short r = fds[i].revents;
      if (r == 0) continue;
      bool readable = (r & (POLLIN | POLLERR | POLLHUP)) != 0;
      bool writable = (r & (POLLOUT | POLLERR | POLLHUP)) != 0;
      ::ares_process_fd(channel_, readable ? fds[i].fd : ARES_SOCKET_BAD, writable ? fds[i].fd : ARES_SOCKET_BAD);
    }
  }
  ::ares_process_fd(channel_, ARES_SOCKET_BAD, ARES_SOCKET_BAD);  // retransmissions and c-ares' timeouts
  arm_poll();
  flush();
}

Resolver::Resolver(EventLoop& loop, ResolverOptions options)
    : loop_(loop), impl_(std::make_shared<Impl>(loop, std::move(options))) {}

Resolver::~Resolver() {
  if (!loop_.is_terminated()) loop_.assert_in_loop("Resolver::~Resolver");
  impl_->close();
}

Future<Addresses> Resolver::resolve(std::string_view host, std::uint16_t port) {
  Promise<Addresses> promise(&loop_);
  Future<Addresses> future = promise.future();
  if (loop_.in_loop()) {
    impl_->resolve(host, port, std::move(promise));
    return future;
  }
  Promise<Addresses> refused = promise;
  UniqueFunction<void()> task = [impl = impl_, host = std::string(host), port, promise = std::move(promise)]() mutable {
    impl->resolve(host, port, std::move(promise));
  };
  if (!loop_.try_execute(std::move(task))) refused.fail(EventLoopTerminatedError());
  return future;
}

void Resolver::clear_cache() {
  loop_.assert_in_loop("Resolver::clear_cache");
  impl_->clear_cache();
}

ResolverStats Resolver::stats() const noexcept { return impl_->stats(); }

}  // namespace weft
