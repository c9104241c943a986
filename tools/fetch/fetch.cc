#include "fetch.h"

#include <weft/weft.h>

#include <chrono>
#include <deque>

namespace weft::fetch {
namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

struct InFlight {
  std::string url;
  std::chrono::steady_clock::time_point started;
  Future<http::HttpClientResponse> answer;
};

std::string error_text(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "unknown error";
  }
}

}  // namespace

int run_fetch(const FetchOptions& options, std::FILE* out) {
  client::ClientOptions client_options;
  client_options.http2 = options.http2;
  client_options.http2_prior_knowledge = options.http2;
  client_options.insecure = options.insecure;
  client_options.max_connections_per_origin = static_cast<std::size_t>(std::max(1, options.concurrency));
  client_options.max_pending_requests = client_options.max_connections_per_origin;
  client_options.request_timeout =
      std::chrono::duration_cast<Duration>(std::chrono::duration<double>(options.timeout_s));
  for (const std::string& server : options.dns_servers) {
    client_options.resolver.servers.push_back(SocketAddress::parse(server));
  }
  EventLoopGroup group(epoll(), 1, "weft-fetch");
  int ok = 0;
  int failed = 0;
  std::uint64_t bytes = 0;
  const auto start = std::chrono::steady_clock::now();
  {
    client::HttpClient client(group, client_options);
    std::deque<InFlight> window;
    std::size_t next = 0;
    while (next < options.urls.size() || !window.empty()) {
      if (next < options.urls.size() && window.size() < static_cast<std::size_t>(std::max(1, options.concurrency))) {
        const std::string& url = options.urls[next++];
        window.push_back({url, std::chrono::steady_clock::now(), client.get(url)});
        continue;
      }
      InFlight done = std::move(window.front());
      window.pop_front();
      done.answer.wait();
      const double took = seconds_since(done.started);
      if (auto error = done.answer.error()) {
        ++failed;
        std::fprintf(out, "ERR 0 %.3f %s %s\n", took, done.url.c_str(), error_text(error).c_str());
        continue;
      }
      const http::HttpClientResponse& r = done.answer.get();
      bytes += r.body_view().size();
      (r.status() < 400 ? ok : failed) += 1;
      std::fprintf(out, "%d %zu %.3f %s\n", r.status(), r.body_view().size(), took, done.url.c_str());
    }
    client.close().wait();
  }
  std::fprintf(out, "fetched %zu URLs: %d ok, %d failed, %llu bytes in %.3f s\n", options.urls.size(), ok, failed,
               static_cast<unsigned long long>(bytes), seconds_since(start));
  std::fflush(out);
  group.shutdown_gracefully(Duration::zero(), std::chrono::seconds(5)).wait();
  return failed == 0 ? 0 : 1;
}

}  // namespace weft::fetch
