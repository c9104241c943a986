// The callback form of a gRPC method, driven by two coroutines on the call's loop: the main one
// writes and finishes, the reader reads; the reactor's requests wake them (reactor_wakes.h).

#include "weft/grpc/server_reactor.h"

#include <exception>
#include <mutex>
#include <stdexcept>
#include <utility>

#include "reactor_wakes.h"
#include "weft/core/error.h"
#include "weft/core/log.h"
#include "weft/core/spawn.h"

namespace weft::grpc {

// ServerCall's private end listener and close, for the reactor's coroutines.
class ReactorDriver {
 public:
  static void on_end(ServerCall& call, UniqueFunction<void()> listener) { call.end_listener_ = std::move(listener); }
  static void stop_listening(ServerCall& call) noexcept { call.end_listener_ = nullptr; }
  // After the response ended: a read still waiting for the client throws (the stream is reset if
  // the client is still sending, as when a handler returns).
  static void close(ServerCall& call) { call.connection_.close(); }
};

struct ServerStream::State {
  explicit State(ServerCall& c) : call(&c), loop(c.loop()), wakes(loop) {}

  // A reactor method; what it throws ends the call (the first failure counts).
  template <class F>
  void invoke(F method) noexcept {
    if (done.load()) return;  // ended without the loop: a coroutine resumed after that only unwinds
    wakes.enter_method();
    try {
      method(*reactor);
    } catch (const StatusError& e) {
      fail(e.status());
    } catch (const std::exception& e) {
      fail(Status(StatusCode::unknown, e.what()));
    } catch (...) {
      fail(Status(StatusCode::unknown, "the reactor threw"));
    }
    wakes.leave_method();
  }
  void fail(Status status) noexcept {
    if (!failure) failure = std::move(status);
    wakes.wake_main();
  }

  ServerCall* call;
  EventLoop& loop;
  std::shared_ptr<ServerReactor> reactor;  // dropped after on_done
  // Misuse checks, in the requester's thread.
  std::atomic<bool> read_outstanding{false};
  std::atomic<bool> write_outstanding{false};
  std::atomic<bool> reads_ended{false};   // a read gave nullopt: another would too (a reactor looping on it spins)
  std::atomic<bool> writes_ended{false};  // a write failed: the call has ended
  std::atomic<bool> finish_called{false};
  // Loop thread.
  detail::ReactorWakes wakes;
  bool read_wanted = false;
  struct Write {
    ByteBuf message;
    WriteOptions options;
    bool framed = false;  // framed already (start_write_framed)
  };
  std::optional<Write> write_wanted;
  std::optional<Status> finish_wanted;
  std::optional<Status> failure;  // a reactor method threw
  bool cancel_told = false;
  bool draining_due = false;   // the connection drains: on_draining() is owed (loop thread)
  bool over = false;           // the main coroutine is past the call: no more reads are started
  bool reader_reading = false;  // the reader waits in ServerCall::read()
  bool reader_exited = false;
  std::atomic<bool> done{false};  // on_done was called: requests do nothing
  std::mutex ending;              // end_without_loop and the end on the loop, one at a time

  // The loop has terminated with the call not over (see run_request): it ends here as one ended
  // without the reactor. From any thread once the loop's final drain is over, when nothing of the
  // loop touches the call any more; the requests the reactor makes from these methods do nothing.
  void end_without_loop() noexcept {
    const std::lock_guard lock(ending);
    if (done.exchange(true)) return;
    if (!cancel_told) {
      cancel_told = true;
      detail::call_without_loop(*reactor, [](ServerReactor& r) { r.on_cancel(); });
    }
    if (read_outstanding.exchange(false)) {
      reads_ended.store(true);
      detail::call_without_loop(*reactor, [](ServerReactor& r) { r.on_read_done(std::nullopt); });
    }
    if (write_outstanding.exchange(false)) {
      writes_ended.store(true);
      detail::call_without_loop(*reactor, [](ServerReactor& r) { r.on_write_done(false); });
    }
    detail::call_without_loop(*reactor, [](ServerReactor& r) { r.on_done(); });
    reactor.reset();
  }
};

namespace {

using ServerState = ServerStream::State;

Status status_of(std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const StatusError& e) {
    return e.status();
  } catch (const std::exception& e) {
    return Status(StatusCode::unknown, e.what());
  } catch (...) {
    return Status(StatusCode::unknown, "a write failed");
  }
}

Task<> read_requests(std::shared_ptr<ServerState> st) {
  try {
    for (;;) {
      while (!st->read_wanted && !st->over) co_await st->wakes.reader.wait();
      if (st->over) break;  // a read wanted now is failed by the main coroutine
      std::optional<ByteBuf> message;
      st->reader_reading = true;
      try {
        message = co_await st->call->read();
      } catch (const CallEnded&) {
      } catch (const ChannelClosedError&) {
      }
      st->reader_reading = false;
      if (st->done.load()) break;  // the call ended without the loop meanwhile
      st->read_wanted = false;
      st->read_outstanding.store(false);
      if (!message) st->reads_ended.store(true);
      st->invoke([&message](ServerReactor& r) { r.on_read_done(std::move(message)); });
    }
  } catch (const EventLoopTerminatedError&) {
    st->reader_reading = false;  // no turn of the loop is left to wake it: main ends the call
  }
  st->reader_exited = true;
  st->wakes.main.notify();  // main waits for this at the end (the reader's frame ends first)
}

}  // namespace

Task<> serve_with_reactor(ServerCall& call, const ReactorFactory& factory) {
  auto st = std::make_shared<ServerState>(call);
  st->reactor = factory(ServerStream(st));
  if (!st->reactor) throw StatusError(Status(StatusCode::internal, "the method made no reactor"));
  std::weak_ptr<ServerState> weak = st;
  ReactorDriver::on_end(call, [weak] {
    if (auto s = weak.lock()) s->wakes.main.notify();  // from anywhere (a reset read by the codec)
  });
  call.on_draining([weak] {
    auto s = weak.lock();
    if (s == nullptr) return;
    s->draining_due = true;  // told from the main coroutine, not nested in whatever fired it
    s->wakes.main.notify();
  });
  spawn_detached(call.loop(), read_requests(st));

  try {
    for (;;) {
      if (call.cancelled() && !st->cancel_told) {
        st->cancel_told = true;
        st->invoke([](ServerReactor& r) { r.on_cancel(); });
        continue;
      }
      if (st->draining_due && !call.cancelled() && !call.finished() && !st->finish_wanted) {
        st->draining_due = false;
        st->invoke([](ServerReactor& r) { r.on_draining(); });
        continue;
      }
      if (st->write_wanted) {
        ServerState::Write write = std::move(*st->write_wanted);
        st->write_wanted.reset();
        bool ok = false;
        if (!call.cancelled() && !call.finished()) {
          try {
            if (write.framed) {
              co_await call.write_framed(std::move(write.message), write.options);
            } else {
              co_await call.write(std::move(write.message), write.options);
            }
            ok = true;
          } catch (const CallEnded&) {
          } catch (const EventLoopTerminatedError&) {
            throw;
          } catch (...) {
            // Not the stream's end (e.g. a compression level zlib refuses): the call ends with it.
            st->fail(status_of(std::current_exception()));
          }
        }
        if (st->done.load()) break;  // the call ended without the loop meanwhile
        st->write_outstanding.store(false);
        if (!ok) st->writes_ended.store(true);
        st->invoke([ok](ServerReactor& r) { r.on_write_done(ok); });
        continue;
      }
      if (st->failure && !st->finish_wanted) st->finish_wanted = std::move(st->failure);
      if (st->finish_wanted) {
        Status status = std::move(*st->finish_wanted);
        st->finish_wanted.reset();
        try {
          co_await call.finish(std::move(status));
        } catch (const EventLoopTerminatedError&) {
          throw;
        } catch (...) {
          // CallEnded: the stream went away meanwhile; nothing else leaves finish() but bad_alloc
        }
        break;
      }
      if (call.cancelled() || st->done.load()) break;
      co_await st->wakes.main.wait();
    }

    ReactorDriver::stop_listening(call);
    st->over = true;
    if (st->reader_reading) ReactorDriver::close(call);
    st->wakes.reader.resume_now();  // a parked reader sees `over` and ends
    while (!st->reader_exited) co_await st->wakes.main.wait();
  } catch (const EventLoopTerminatedError&) {
    // A wake-up found the loop terminated (a call the loop's shutdown left open, woken by its
    // stream's end or its reader): no turn is left for the end below. The call ends here.
    ReactorDriver::stop_listening(call);
    st->over = true;
    if (!st->reader_reading) st->wakes.reader.resume_now();  // a parked reader ends
    st->end_without_loop();
    co_return;
  }
  if (st->done.load()) co_return;  // it ended without the loop
  detail::fail_remaining(*st);
  const std::lock_guard lock(st->ending);
  if (st->done.exchange(true)) co_return;
  try {
    st->reactor->on_done();
  } catch (const std::exception& e) {
    log(LogLevel::warn, "grpc reactor: on_done threw: {}", e.what());
  } catch (...) {
    log(LogLevel::warn, "grpc reactor: on_done threw");
  }
  st->reactor.reset();
}

void ServerStream::start_read() {
  if (state_->done.load()) return;
  if (state_->reads_ended.load()) throw std::logic_error("grpc::ServerStream::start_read after a read gave nullopt");
  if (state_->read_outstanding.exchange(true)) throw std::logic_error("grpc::ServerStream::start_read: a read is outstanding");
  detail::run_request(state_, [](ServerState& st) {
    if (st.done) return;
    st.read_wanted = true;
    st.wakes.wake_reader();
    if (st.over) st.wakes.wake_main();
  });
}

void ServerStream::start_write(ByteBuf message, WriteOptions options) { request_write(std::move(message), options, false); }

void ServerStream::start_write_framed(ByteBuf framed, WriteOptions options) {
  if (!is_one_framed_message(framed)) {
    throw std::invalid_argument("grpc::ServerStream::start_write_framed: not one uncompressed length-prefixed message");
  }
  request_write(std::move(framed), options, true);
}

void ServerStream::request_write(ByteBuf message, WriteOptions options, bool framed) {
  if (state_->done.load()) return;
  if (state_->finish_called.load()) throw std::logic_error("grpc::ServerStream::start_write after finish()");
  if (state_->writes_ended.load()) throw std::logic_error("grpc::ServerStream::start_write after a write failed");
  if (state_->write_outstanding.exchange(true)) {
    throw std::logic_error("grpc::ServerStream::start_write: a write is outstanding");
  }
  detail::run_request(state_, [message = std::move(message), options, framed](ServerState& st) mutable {
    if (st.done.load()) return;
    st.write_wanted.emplace(State::Write{std::move(message), options, framed});
    st.wakes.wake_main();
  });
}

void ServerStream::finish(Status status) {
  if (state_->done.load() || state_->finish_called.exchange(true)) return;
  detail::run_request(state_, [status = std::move(status)](ServerState& st) mutable {
    if (st.done || st.finish_wanted) return;
    st.finish_wanted = std::move(status);
    st.wakes.wake_main();
  });
}

ServerCall& ServerStream::call() const noexcept { return *state_->call; }

EventLoop& ServerStream::loop() const noexcept { return state_->loop; }

}  // namespace weft::grpc
