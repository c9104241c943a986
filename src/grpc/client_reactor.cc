// The callback form of a gRPC client call, driven by two coroutines on the connection's loop: the
// main one starts the call, writes, half-closes and cancels; the reader reads. The reactor's
// requests wake them (reactor_wakes.h).

#include "weft/grpc/client_reactor.h"

#include <exception>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>

#include "client_call_state.h"
#include "reactor_wakes.h"
#include "weft/core/error.h"
#include "weft/core/log.h"
#include "weft/core/loop_signal.h"
#include "weft/core/spawn.h"
#include "weft/grpc/channel.h"
#include "weft/grpc/metadata.h"
#include "weft/grpc/server_call.h"  // kWritesPerTurn: the same turn-taking on both sides

namespace weft::grpc {

struct ClientStream::State : detail::ConnectionCloseWatcher, std::enable_shared_from_this<ClientStream::State> {
  explicit State(std::shared_ptr<Client> c) : client(std::move(c)), loop(client->loop()), wakes(loop) {}
  explicit State(std::shared_ptr<ClientChannel> c) : channel(std::move(c)), loop(channel->loop()), wakes(loop) {}

  // Client::start and ClientChannel::start: hands `reactor` the stream and starts the call from a
  // loop task. `who` names the caller in errors.
  static ClientStream begin(std::shared_ptr<State> st, std::string method, CallOptions options,
                            std::shared_ptr<ClientReactor> reactor, std::string_view who);

  // A reactor method; one that throws cancels the call (and is logged).
  template <class F>
  void invoke(F method) noexcept {
    if (done.load()) return;  // ended without the loop: a coroutine resumed after that only unwinds
    wakes.enter_method();
    try {
      method(*reactor);
    } catch (const std::exception& e) {
      log(LogLevel::warn, "grpc client reactor threw (the call is cancelled): {}", e.what());
      request_cancel();
    } catch (...) {
      log(LogLevel::warn, "grpc client reactor threw (the call is cancelled)");
      request_cancel();
    }
    wakes.leave_method();
  }

  // Cancels from a loop task (never inside a reactor method): the stream's reset wakes a write that
  // waits for the window, and the end listener wakes the main coroutine. A loop that has
  // terminated takes no task: the call ends without it (run_request).
  void request_cancel() {
    const bool posted = loop.try_execute(UniqueFunction<void()>([self = shared_from_this()] {
      if (self->done.load()) return;
      self->cancel_wanted = true;  // for a call not started yet
      self->call.cancel();
      self->wakes.main.resume_now();  // a loop task: nothing of the call is on the stack
    }));
    if (!posted) detail::end_after_the_loop(shared_from_this());
  }

  // The loop has terminated with the call not over (see run_request): it ends here, UNAVAILABLE.
  // From any thread once the loop's final drain is over, when nothing of the loop touches the call
  // any more; the requests the reactor makes from these methods do nothing. The call's handle is
  // left as it is (its release is the loop's).
  void end_without_loop() noexcept {
    const std::lock_guard lock(ending);
    if (done.exchange(true)) return;
    if (read_outstanding.exchange(false)) {
      reads_ended.store(true);
      detail::call_without_loop(*reactor, [](ClientReactor& r) { r.on_read_done(std::nullopt); });
    }
    if (write_outstanding.exchange(false)) {
      writes_ended.store(true);
      detail::call_without_loop(*reactor, [](ClientReactor& r) { r.on_write_done(false); });
    }
    const Status status(StatusCode::unavailable, "the connection's event loop has terminated");
    detail::call_without_loop(*reactor, [&status](ClientReactor& r) { r.on_done(status); });
    reactor.reset();
  }

  // The connection closed: the call is over even if nothing reads or writes (finish() says how).
  void connection_closed() noexcept override {
    connection_gone = true;
    wakes.main.notify();  // from the close future's listener
  }

  std::shared_ptr<Client> client;          // the call's connection, or
  std::shared_ptr<ClientChannel> channel;  // its channel: one of the two, dropped after on_done
  EventLoop& loop;
  std::shared_ptr<ClientReactor> reactor;  // dropped after on_done
  ClientCall call;
  // Misuse checks, in the requester's thread.
  std::atomic<bool> read_outstanding{false};
  std::atomic<bool> write_outstanding{false};
  std::atomic<bool> reads_ended{false};   // a read gave nullopt: another would too (a reactor looping on it spins)
  std::atomic<bool> writes_ended{false};  // a write failed: the call has ended
  std::atomic<bool> writes_done_called{false};
  std::atomic<bool> done{false};  // on_done was called: requests do nothing
  std::mutex ending;              // end_without_loop and the end on the loop, one at a time
  // Loop thread.
  detail::ReactorWakes wakes;
  bool read_wanted = false;
  std::optional<ByteBuf> write_wanted;
  bool writes_done_wanted = false;
  bool writes_done_sent = false;
  bool cancel_wanted = false;
  bool ended = false;           // the call is over (its status is known)
  bool connection_gone = false;  // the connection closed
  bool over = false;            // the main coroutine is past the call: no more reads are started
  bool reader_reading = false;  // the reader waits in ClientCall::read()
  bool reader_exited = false;
};

namespace {

using ClientState = ClientStream::State;

Task<> read_responses(std::shared_ptr<ClientState> st) {
  try {
    for (;;) {
      while (!st->read_wanted && !st->over) co_await st->wakes.reader.wait();
      if (st->over) break;  // a read wanted now is failed by the main coroutine
      st->reader_reading = true;
      std::optional<ByteBuf> message = co_await st->call.read();  // failures end the call: nullopt
      st->reader_reading = false;
      if (st->done.load()) break;  // the call ended without the loop meanwhile
      st->read_wanted = false;
      st->read_outstanding.store(false);
      if (!message) {
        st->reads_ended.store(true);
        st->ended = true;
      }
      // The call may have ended during the read (a cancel in its yield to the loop): main waits for
      // the reader to be idle.
      if (st->ended) st->wakes.wake_main();
      st->invoke([&message](ClientReactor& r) { r.on_read_done(std::move(message)); });
    }
  } catch (const EventLoopTerminatedError&) {
    st->reader_reading = false;  // no turn of the loop is left to wake it: main ends the call
  }
  st->reader_exited = true;
  st->wakes.main.notify();  // main waits for this at the end (the reader's frame ends first)
}

// The call from its start to on_done.
Task<> run_call(std::shared_ptr<ClientState> st, std::string method, CallOptions options) {
  std::optional<Status> refused;
  try {
    // The connection under the call is watched from the start: one that closes while the reactor
    // neither reads nor writes ends the call (a channel's waiting call is watched once it has one).
    std::weak_ptr<detail::ConnectionCloseWatcher> watcher(st);
    if (st->client) {
      st->call = st->client->call(method, options);
      st->client->watch_close(std::move(watcher));
    } else {
      st->call = st->channel->call_watched(method, options, std::move(watcher));
    }
  } catch (const InvalidMetadata& e) {
    refused = Status(StatusCode::invalid_argument, e.what());
  } catch (const std::exception& e) {
    refused = Status(StatusCode::internal, e.what());
  }
  Status status;
  if (refused) {
    status = std::move(*refused);
  } else {
    std::weak_ptr<ClientState> weak = st;
    ClientCallAccess::on_end(st->call, [weak] {
      if (auto s = weak.lock()) {
        s->ended = true;
        s->wakes.main.notify();  // from inside the call's read or write, or its deadline
      }
    });
    if (ClientCallAccess::state(st->call)->status) st->ended = true;  // a channel's call it could not start
    spawn_detached(st->loop, read_responses(st));
    std::uint32_t writes_this_turn = 0;
    try {
      for (;;) {
        if (st->cancel_wanted) {
          st->cancel_wanted = false;
          st->call.cancel();  // the end listener marks it ended
          continue;
        }
        if (st->write_wanted) {
          ByteBuf message = std::move(*st->write_wanted);
          st->write_wanted.reset();
          // A write that raced writes_done() from another thread and lost: it fails, not the call.
          bool ok = false;
          if (!st->writes_done_sent) ok = co_await st->call.write(std::move(message));
          if (st->done.load()) break;  // the call ended without the loop meanwhile
          st->write_outstanding.store(false);
          if (!ok) st->writes_ended.store(true);
          st->invoke([ok](ClientReactor& r) { r.on_write_done(ok); });
          if (++writes_this_turn >= kWritesPerTurn) {  // a reactor writing from on_write_done lets the loop poll
            writes_this_turn = 0;
            auto turn = next_turn(st->loop);  // named: g++ 12 destroys a temporary twice when it throws
            co_await turn;
          }
          continue;
        }
        if (st->writes_done_wanted && !st->writes_done_sent) {
          st->writes_done_sent = true;
          co_await st->call.writes_done();
          continue;
        }
        if (((st->ended || st->connection_gone) && !st->reader_reading) || st->done.load()) break;
        co_await st->wakes.main.wait();
      }
      st->over = true;
      st->wakes.reader.resume_now();  // a parked reader sees `over` and ends
      while (!st->reader_exited) co_await st->wakes.main.wait();
      // Ended: at once; the connection gone: what the stream left.
      if (!st->done.load()) status = co_await st->call.finish();
    } catch (const EventLoopTerminatedError&) {
      // A wake-up found the loop terminated (a call the loop's shutdown left open): no turn is left
      // for the end below. The call ends here.
      st->over = true;
      if (!st->reader_reading) st->wakes.reader.resume_now();  // a parked reader ends
      st->end_without_loop();
      co_return;
    }
  }
  if (st->done.load()) co_return;  // it ended without the loop
  detail::fail_remaining(*st);
  {
    const std::lock_guard lock(st->ending);
    if (st->done.exchange(true)) co_return;
    try {
      st->reactor->on_done(status);
    } catch (const std::exception& e) {
      log(LogLevel::warn, "grpc client reactor: on_done threw: {}", e.what());
    } catch (...) {
      log(LogLevel::warn, "grpc client reactor: on_done threw");
    }
    st->reactor.reset();
  }
  st->call = ClientCall();  // its stream is released here, on the loop
  st->client.reset();
  st->channel.reset();
}

}  // namespace

ClientStream ClientStream::State::begin(std::shared_ptr<State> st, std::string method, CallOptions options,
                                        std::shared_ptr<ClientReactor> reactor, std::string_view who) {
  reactor->stream_.emplace(st);  // before anything can reach the reactor
  st->reactor = std::move(reactor);
  // Started from a loop task even on the loop: the reactor hears nothing before start() returned.
  const bool posted = st->loop.try_execute(
      UniqueFunction<void()>([st, method = std::move(method), options = std::move(options)]() mutable {
        spawn_detached(st->loop, run_call(st, std::move(method), std::move(options)));
      }));
  if (!posted) {
    st->reactor->stream_.reset();
    st->reactor.reset();
    throw RejectedExecutionError(std::string(who) + ": the event loop has terminated");
  }
  return ClientStream(std::move(st));
}

namespace {

void check_reactor(const std::shared_ptr<ClientReactor>& reactor, const ClientStream* stream, std::string_view who) {
  if (!reactor) throw std::invalid_argument(std::string(who) + ": a null reactor");
  if (stream != nullptr) throw std::logic_error(std::string(who) + ": the reactor has a call already (one per call)");
}

}  // namespace

ClientStream Client::start(std::string method, CallOptions options, std::shared_ptr<ClientReactor> reactor) {
  check_reactor(reactor, reactor ? reactor->stream_ ? &*reactor->stream_ : nullptr : nullptr, "grpc::Client::start");
  return ClientState::begin(std::make_shared<ClientState>(shared_from_this()), std::move(method), std::move(options),
                            std::move(reactor), "grpc::Client::start");
}

ClientStream ClientChannel::start(std::string method, CallOptions options, std::shared_ptr<ClientReactor> reactor) {
  check_reactor(reactor, reactor ? reactor->stream_ ? &*reactor->stream_ : nullptr : nullptr,
                "grpc::ClientChannel::start");
  return ClientState::begin(std::make_shared<ClientState>(shared_from_this()), std::move(method), std::move(options),
                            std::move(reactor), "grpc::ClientChannel::start");
}

void ClientStream::start_read() {
  if (state_->done.load()) return;
  if (state_->reads_ended.load()) throw std::logic_error("grpc::ClientStream::start_read after a read gave nullopt");
  if (state_->read_outstanding.exchange(true)) throw std::logic_error("grpc::ClientStream::start_read: a read is outstanding");
  detail::run_request(state_, [](ClientState& st) {
    if (st.done.load()) return;
    st.read_wanted = true;
    st.wakes.wake_reader();
    if (st.over) st.wakes.wake_main();
  });
}

void ClientStream::start_write(ByteBuf message) {
  if (state_->done.load()) return;
  if (state_->writes_done_called.load()) throw std::logic_error("grpc::ClientStream::start_write after writes_done()");
  if (state_->writes_ended.load()) throw std::logic_error("grpc::ClientStream::start_write after a write failed");
  if (state_->write_outstanding.exchange(true)) {
    throw std::logic_error("grpc::ClientStream::start_write: a write is outstanding");
  }
  detail::run_request(state_, [message = std::move(message)](ClientState& st) mutable {
    if (st.done.load()) return;
    st.write_wanted.emplace(std::move(message));
    st.wakes.wake_main();
  });
}

void ClientStream::writes_done() {
  if (state_->done.load() || state_->writes_done_called.exchange(true)) return;
  detail::run_request(state_, [](ClientState& st) {
    if (st.done.load()) return;
    st.writes_done_wanted = true;
    st.wakes.wake_main();
  });
}

void ClientStream::cancel() {
  if (!state_->done.load()) state_->request_cancel();
}

const ClientCall& ClientStream::call() const noexcept { return state_->call; }

EventLoop& ClientStream::loop() const noexcept { return state_->loop; }

}  // namespace weft::grpc
