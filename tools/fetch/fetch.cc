#include "fetch.h"

#include <weft/weft.h>

#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>
#include <system_error>

namespace weft::fetch {
namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// "S.mmm", rounded to the millisecond as "%.3f" writes it, by integer arithmetic (formatting a
// double was a tenth of the client's instructions per request). Returns the end; null when `end`
// leaves no room.
char* write_seconds(char* p, char* end, std::chrono::steady_clock::duration took) {
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(took).count();
  const std::uint64_t ms = (static_cast<std::uint64_t>(ns < 0 ? 0 : ns) + 500'000) / 1'000'000;
  auto whole = std::to_chars(p, end, ms / 1000);
  if (whole.ec != std::errc() || end - whole.ptr < 4) return nullptr;
  p = whole.ptr;
  *p++ = '.';
  const auto frac = static_cast<unsigned>(ms % 1000);
  *p++ = static_cast<char>('0' + frac / 100);
  *p++ = static_cast<char>('0' + frac / 10 % 10);
  *p++ = static_cast<char>('0' + frac % 10);
  return p;
}

std::string error_text(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "unknown error";
  }
}

// Runs the fetch on the client's loop: `concurrency` requests at once, the next one started from
// the answer of one that ended (no thread hand-off per request). Loop thread only.
class Fetcher {
 public:
  // `loop`: the one the fetch runs on (the client's answers come there).
  Fetcher(const FetchOptions& options, client::HttpClient& client, EventLoop& loop, std::FILE* out)
      : options_(options), client_(client), loop_(loop), out_(out) {}

  // Starts what the window allows; completes done() once every URL has ended.
  void pump() {
    if (pumping_) {  // an answer that came at once (a bad URL) while starting: the loop below goes on
      pump_again_ = true;
      return;
    }
    pumping_ = true;
    do {
      pump_again_ = false;
      while (next_ < options_.urls.size() && in_flight_ < window()) start(next_++);
    } while (pump_again_);
    pumping_ = false;
    if (next_ == options_.urls.size() && in_flight_ == 0 && !finished_) {
      finished_ = true;
      flush_output();  // before the caller, woken, writes its summary
      done_.set_value();
    }
  }
  Future<void> done() { return done_.future(); }

  int ok = 0;
  int failed = 0;
  std::uint64_t bytes = 0;

 private:
  std::size_t window() const { return static_cast<std::size_t>(std::max(1, options_.concurrency)); }

  void start(std::size_t i) {
    ++in_flight_;
    // The loop's turn time: a clock read per turn, not two per request (~30 ns each), and exact
    // enough for a report in milliseconds.
    const TimePoint started = loop_.turn_time();
    auto reported = [this, i, started](const Future<http::HttpClientResponse>& answer) {
      --in_flight_;
      report(options_.urls[i], loop_.turn_time() - started, answer);
      pump();
    };
    if (const client::Url* url = parsed(options_.urls[i])) {
      client_.get(*url).add_listener(std::move(reported));
    } else {
      client_.get(options_.urls[i]).add_listener(std::move(reported));  // fails with its UrlError
    }
  }

  // `text` parsed: lists repeat URLs, parsed once while they repeat. Null when it does not parse.
  const client::Url* parsed(const std::string_view& text) {
    if (last_text_ != &text && (last_text_ == nullptr || *last_text_ != text)) {
      last_text_ = &text;
      try {
        last_url_ = client::Url::parse(text);
      } catch (const client::UrlError&) {
        last_url_.reset();
      }
    }
    return last_url_ ? &*last_url_ : nullptr;
  }

  void report(std::string_view url, std::chrono::steady_clock::duration took,
              const Future<http::HttpClientResponse>& answer) {
    const double seconds = std::chrono::duration<double>(took).count();
    if (auto error = answer.error()) {
      ++failed;
      flush_output();  // the lines stay in the order the answers came
      std::fprintf(out_, "ERR 0 %.3f %.*s %s\n", seconds, static_cast<int>(url.size()), url.data(),
                   error_text(error).c_str());
      return;
    }
    const http::HttpClientResponse& r = answer.get();
    bytes += r.body_view().size();
    (r.status() < 400 ? ok : failed) += 1;
    // printf's "%d %zu %.3f %s\n", by to_chars into the output's buffer: a third of the client's
    // CPU per request went to formatting the float with fprintf, and a tenth to fwrite's lock.
    // Each field leaves room for the space after it.
    if (sizeof out_buffer_ - out_used_ < 300 + url.size()) flush_output();
    if (sizeof out_buffer_ - out_used_ < 300 + url.size()) {  // a URL longer than the buffer
      std::fprintf(out_, "%d %zu %.3f %.*s\n", r.status(), r.body_view().size(), seconds, static_cast<int>(url.size()),
                   url.data());
      return;
    }
    char* const line = out_buffer_ + out_used_;
    char* const last = line + 255;
    char* p = line;
    auto field = [&](std::to_chars_result written) {
      if (written.ec != std::errc()) return false;
      p = written.ptr;
      *p++ = ' ';
      return true;
    };
    const std::size_t size = r.body_view().size();
    if (!field(std::to_chars(p, last, r.status())) || !field(std::to_chars(p, last, size)) ||
        (p = write_seconds(p, last, took)) == nullptr) {
      flush_output();
      std::fprintf(out_, "%d %zu %.3f %.*s\n", r.status(), size, seconds, static_cast<int>(url.size()),
                   url.data());  // a field too long
      return;
    }
    *p++ = ' ';
    std::memcpy(p, url.data(), url.size());
    p += url.size();
    *p++ = '\n';
    out_used_ += static_cast<std::size_t>(p - line);
  }

  void flush_output() {
    if (out_used_ > 0) std::fwrite(out_buffer_, 1, out_used_, out_);
    out_used_ = 0;
  }

  const FetchOptions& options_;
  client::HttpClient& client_;
  EventLoop& loop_;
  std::FILE* out_;
  std::size_t next_ = 0;
  std::size_t in_flight_ = 0;
  bool pumping_ = false;
  bool pump_again_ = false;
  bool finished_ = false;
  Promise<void> done_;
  char out_buffer_[64 * 1024];  // report()'s lines, written out a block at a time
  std::size_t out_used_ = 0;
  const std::string_view* last_text_ = nullptr;  // parsed(): the text last parsed, and what it gave
  std::optional<client::Url> last_url_;
};

}  // namespace

std::vector<std::string_view> url_lines(std::string_view text) {
  std::vector<std::string_view> urls;
  while (!text.empty()) {
    const std::size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    while (!line.empty() && (line.back() == ' ' || line.back() == '\t' || line.back() == '\r')) line.remove_suffix(1);
    if (!line.empty() && line.front() != '#') urls.push_back(line);
  }
  return urls;
}

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
  const auto start = std::chrono::steady_clock::now();
  int ok = 0;
  int failed = 0;
  std::uint64_t bytes = 0;
  {
    client::HttpClient client(group, client_options);
    Fetcher fetcher(options, client, group.at(0), out);
    Future<void> done = fetcher.done();
    group.at(0).execute([&fetcher] { fetcher.pump(); });
    done.wait();
    ok = fetcher.ok;
    failed = fetcher.failed;
    bytes = fetcher.bytes;
    client.close().wait();
  }
  std::fprintf(out, "fetched %zu URLs: %d ok, %d failed, %llu bytes in %.3f s\n", options.urls.size(), ok, failed,
               static_cast<unsigned long long>(bytes), seconds_since(start));
  std::fflush(out);
  group.shutdown_gracefully(Duration::zero(), std::chrono::seconds(5)).wait();
  return failed == 0 ? 0 : 1;
}

}  // namespace weft::fetch
