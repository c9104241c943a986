#include "exchange.h"

#include "weft/client/client_errors.h"

namespace weft::client::detail {

http::HttpClientRequest Exchange::wire_request() const {
  http::HttpClientRequest request(method, url.target());
  std::string_view lines = header_block;
  while (!lines.empty()) {
    const std::size_t end = lines.find("\r\n");
    const std::string_view line = lines.substr(0, end);
    lines.remove_prefix(end == std::string_view::npos ? lines.size() : end + 2);
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    request.header(line.substr(0, colon), value);
  }
  if (body.readable_bytes() > 0) request.body(body.slice());
  return request;
}

void Exchange::fail_closed(EventLoop& loop) {
  if (done) return;
  done = true;
  if (request_timer) loop.cancel(*request_timer);
  request_timer.reset();
  result.fail(ClientClosedError());
}

}  // namespace weft::client::detail
