#include "exchange.h"

#include "request_deadlines.h"
#include "upload_stream.h"
#include "weft/client/client_errors.h"

namespace weft::client::detail {

http::HttpClientRequest Exchange::wire_request() const {
  http::HttpClientRequest request(method, url.target());
  request.append_checked_lines(header_block);  // the caller's request checked them
  if (body.readable_bytes() > 0) request.body(body.slice());
  return request;
}

Exchange::~Exchange() { RequestDeadlines::remove(*this); }

void Exchange::fail_closed(EventLoop&) {
  if (done) return;
  done = true;
  RequestDeadlines::remove(*this);
  if (upload) upload->stop(std::make_exception_ptr(ClientClosedError()));
  result.fail(ClientClosedError());
}

}  // namespace weft::client::detail
