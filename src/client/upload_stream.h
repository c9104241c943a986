#pragma once
// The state behind a RequestBody, on the loop of its request's pool (known when the request is
// made, before any connection): the caller's chunk not yet handed on, the caller's waiting
// write()/finish(), the declared length, and the connection's side (UploadSink) once one carries the
// request. One chunk at a time goes to the sink; the caller's write completes when the sink says the
// connection can take more. Pool loop only, except write(), finish(), abandon() and let_go().

#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "weft/buffer/byte_buf.h"
#include "weft/core/event_loop.h"
#include "weft/core/future.h"

namespace weft::client::detail {

// The connection's side of an upload (HTTP/1.1: its channel; HTTP/2: its stream). Pool loop only.
class UploadSink {
 public:
  virtual ~UploadSink() = default;
  // Sends `chunk`; the future completes on the pool loop when the connection can take more, or
  // fails when the body cannot go on.
  virtual Future<void> push(ByteBuf chunk) = 0;
  // The body's end, after every push.
  virtual void end() = 0;
  // The body stops before its end (abandoned, wrong length): the connection is not reused
  // (HTTP/1.1) or the stream is reset (HTTP/2).
  virtual void abort() = 0;
  // The request ended before the body (failed, or answered early): nothing more will be pushed.
  virtual void stopped() {}
};

class UploadStream : public std::enable_shared_from_this<UploadStream> {
 public:
  // On `loop` (the request's pool loop); `length`: the declared Content-Length; `url` names the
  // request in errors.
  UploadStream(EventLoop& loop, std::optional<std::uint64_t> length, std::string url)
      : loop_(loop), length_(length), url_(std::move(url)) {}
  UploadStream(const UploadStream&) = delete;
  UploadStream& operator=(const UploadStream&) = delete;

  // Thread-safe (see RequestBody).
  Future<void> write(ByteBuf chunk);
  Future<void> finish();
  void abandon();
  // Thread-safe. The last handle's end: abandons unless finished, on the loop.
  static void let_go(std::shared_ptr<UploadStream> stream);

  // Pool loop. A connection carries the request now: chunks go to `sink`.
  void attach(std::shared_ptr<UploadSink> sink);
  // Pool loop. The request ended before the body did (failed, answered): the waiting and later
  // calls fail with `error`. The sink is left as it is (the request's end took care of it).
  void stop(std::exception_ptr error);
  // Pool loop. The body's end was handed to the connection.
  bool complete() const noexcept { return ended_; }
  // Pool loop. Neither ended nor stopped, and (a declared length) bytes still to be handed on: an
  // answer that ends now came before the body's end.
  bool active() const noexcept { return !ended_ && !error_ && !(length_ && written_ == *length_ && !held_); }
  std::optional<std::uint64_t> length() const noexcept { return length_; }
  const std::string& url() const noexcept { return url_; }
  EventLoop& loop() const noexcept { return loop_; }
  // Pool loop: the body itself failed the request (wrong length, abandoned); set by the client.
  std::function<void(std::exception_ptr)> on_failure;

 private:
  void write_on_loop(ByteBuf chunk, Promise<void> promise);
  void finish_on_loop(Promise<void> promise);
  void abandon_on_loop();
  void pump();
  void pushed(std::exception_ptr error);
  void fail_request(std::exception_ptr error);  // the body's own failure: the request fails too
  bool claim(Promise<void>& promise);           // false (and `promise` failed) when it may not wait now

  EventLoop& loop_;
  const std::optional<std::uint64_t> length_;
  const std::string url_;
  std::shared_ptr<UploadSink> sink_;
  std::optional<Promise<void>> waiting_;  // the caller's write() or finish()
  std::optional<ByteBuf> held_;           // the caller's chunk, not yet pushed
  std::uint64_t written_ = 0;             // bytes the caller wrote
  bool pushing_ = false;                  // a push is in flight
  bool finishing_ = false;                // finish() was called
  bool ended_ = false;                    // the end went to the sink
  std::exception_ptr error_;
};

}  // namespace weft::client::detail
