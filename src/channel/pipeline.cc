#include "weft/channel/pipeline.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "offload.h"
#include "weft/channel/channel.h"
#include "weft/channel/events.h"
#include "weft/core/executor_group.h"
#include "weft/core/error.h"
#include "weft/core/log.h"

namespace weft {

namespace detail {

constinit thread_local int events_on_this_thread = 0;
constinit thread_local int pipeline_calls_on_this_thread = 0;
constinit thread_local bool frees_wait_on_this_thread = false;

namespace {
// The pipelines that wait (frees_wait_on_this_thread); one destroyed meanwhile leaves the list.
thread_local std::vector<Pipeline*> waiting_frees;
}  // namespace

void free_what_waits_on_this_thread() noexcept {
  frees_wait_on_this_thread = false;
  // One at a time: freeing a pipeline's handlers may free other pipelines of the list.
  while (!waiting_frees.empty()) {
    Pipeline* pipeline = waiting_frees.back();
    waiting_frees.pop_back();
    pipeline->free_removed();
  }
}

void PipelineHead::write_message(Context&, MessageRef message) { channel_.head_write(message); }
void PipelineHead::flush(Context&) { channel_.head_flush(); }
void PipelineHead::read(Context&) { channel_.head_read(); }
void PipelineHead::close(Context&, Promise<void> promise) { channel_.head_close(std::move(promise)); }
void PipelineHead::bind(Context&, const SocketAddress& local, Promise<void> promise) {
  channel_.do_bind(local, std::move(promise));
}
void PipelineHead::connect(Context&, const SocketAddress& remote, Promise<void> promise) {
  channel_.do_connect(remote, std::move(promise));
}

void PipelineTail::exception_caught(Context&, std::exception_ptr error) {
  channel_.on_unhandled_exception(std::move(error));
}
void PipelineTail::read_message(Context&, MessageRef message) { channel_.on_unhandled_read(message); }

}  // namespace detail

Pipeline::Pipeline(Channel& channel)
    : head_handler_(channel),
      tail_handler_(channel),
      channel_(channel),
      head_(*this, &head_handler_, &head_cold_),
      tail_(*this, &tail_handler_, &tail_cold_) {
  head_cold_.name = "head";
  tail_cold_.name = "tail";
  head_.next_ = &tail_;
  tail_.prev_ = &head_;
}

Pipeline::~Pipeline() {
  if (free_when_unwound_) std::erase(detail::waiting_frees, this);
  // Contexts in inline slots give them back to this pipeline: free them while it is whole.
  removed_.clear();
  for (auto& ctx : contexts_) release(*ctx->handler_);
  contexts_.clear();
}

template <class Event>
void Pipeline::deliver(const Event& event) {
  if (called_from_another_channel() && post_later(event)) [[unlikely]] return;
  EventDepth depth(*this);
  event();
}

template <class Event>
bool Pipeline::post_later(const Event& event) {
  if (!channel_.registered_) return false;  // no loop serves the channel yet
  // The channel stays alive for the task; an unshared one (EmbeddedChannel) runs its tasks before it dies.
  return channel_.loop().try_execute([this, keep = channel_.weak_from_this().lock(), event] {
    EventDepth depth(*this);
    event();
  });
  // false: the loop has terminated and would never run it, so the caller delivers now.
}

void Pipeline::deliver_close(bool was_active, std::shared_ptr<Channel> keep_alive) {
  deliver([this, was_active, keep_alive] { channel_.finish_close(was_active, keep_alive); });
}

void Pipeline::deliver_output_closing(std::function<void()> then) {
  deliver([this, then = std::move(then)] {
    head_.fire_user_event(std::any(ChannelOutputClosingEvent{}));
    then();
  });
}

void Pipeline::schedule_free() {
  if (free_scheduled_ || removed_.empty() || !channel_.registered_) return;
  free_scheduled_ = channel_.loop().try_execute([this, keep = channel_.weak_from_this().lock()] {
    free_scheduled_ = false;
    removed_.clear();
  });
  if (free_scheduled_) return;
  // Not posted: the loop's final drain is over, and no turn will come to free them. Left to the
  // destructor they would never be freed when a removed handler holds its channel (a Connection<>
  // does: channel -> pipeline -> handler -> channel). Nothing runs on the loop any more, so the
  // thread calling on the channel now stands for it (as a completion that reaches a terminated loop
  // runs on the caller's thread): the contexts are freed on it once no pipeline call is left on its
  // stack -- of any channel: a handler is also called from other channels' calls (an HTTP/2 codec
  // from its streams') -- or now when there is none.
  if (detail::pipeline_calls_on_this_thread == 0) {
    free_removed();
    return;
  }
  if (!free_when_unwound_) detail::waiting_frees.push_back(this);
  free_when_unwound_ = true;
  detail::frees_wait_on_this_thread = true;
}

void Pipeline::free_removed() noexcept {
  free_when_unwound_ = false;
  // A removed handler may hold the last reference to the channel, and so to this pipeline: keep it
  // while the contexts go (one in an inline slot gives the slot back), and touch nothing after.
  const std::shared_ptr<Channel> keep = channel_.weak_from_this().lock();
  ContextList freed = std::move(removed_);
  removed_.clear();
  freed.clear();
}

void Pipeline::claim(Handler& handler, std::string_view name) {
  if (handler.is_sharable()) return;
  if (handler.membership_.in_pipeline.exchange(true, std::memory_order_acq_rel)) {
    throw std::invalid_argument(
        fmt::format("handler '{}' ({}) is already in a pipeline and is not sharable: it keeps per-channel state, so "
                    "give each pipeline its own instance (a handler that keeps none overrides Handler::is_sharable)",
                    name, type_name(typeid(handler))));
  }
}

void Pipeline::release(Handler& handler) noexcept {
  if (!handler.is_sharable()) handler.membership_.in_pipeline.store(false, std::memory_order_release);
}

void Pipeline::check_thread(const char* operation) const noexcept {
  if (channel_.registered_) channel_.loop().assert_in_loop(operation);
}

Context* Pipeline::find(std::string_view name) const noexcept {
  for (Context* c = head_.next_; c != &tail_; c = c->next_) {
    if (c->cold_->name == name) return c;
  }
  return nullptr;
}

Context& Pipeline::find_or_throw(std::string_view name) const {
  Context* c = find(name);
  if (c == nullptr) throw std::invalid_argument(fmt::format("no handler named '{}' in the pipeline", name));
  return *c;
}

void Pipeline::check_name_free(std::string_view name) const {
  if (name.empty()) throw std::invalid_argument("a handler needs a non-empty name");
  if (find(name) != nullptr) throw std::invalid_argument(fmt::format("duplicate handler name '{}'", name));
}

void Pipeline::link_after(Context& prev, ContextPtr ctx) {
  check_thread("Pipeline::add_*");
  Context& c = *ctx;
  c.prev_ = &prev;
  c.next_ = prev.next_;
  prev.next_->prev_ = &c;
  prev.next_ = &c;
  if (handler_reads_timed_) c.read_gate_ |= Context::kReadTimed;
  if (contexts_.capacity() == 0) contexts_.reserve(kInlineContexts);  // one allocation, not one per growth
  contexts_.push_back(std::move(ctx));
  try {
    check_types();
  } catch (...) {
    unlink(c);
    release(*c.handler_);
    contexts_.pop_back();
    throw;
  }
  if (c.offload_ != nullptr) {
    c.offload_->to_executor(ExecutorGroup::kTaskOverhead, [&c] {
      try {
        c.handler_->handler_added(c);
      } catch (const std::exception& e) {
        log(LogLevel::warn, "handler '{}' threw from handler_added on its executor: {}", c.cold_->name, e.what());
        c.fire_exception(std::current_exception());
      }
    });
    return;
  }
  try {
    c.handler_->handler_added(c);
  } catch (...) {
    unlink(c);
    release(*c.handler_);
    auto it = std::find_if(contexts_.begin(), contexts_.end(), [&](auto& p) { return p.get() == &c; });
    contexts_.erase(it);
    throw;
  }
}

void Pipeline::unlink(Context& ctx) {
  // The removed context keeps its own prev_/next_, so an event it is forwarding right now still
  // reaches the right neighbour.
  ctx.prev_->next_ = ctx.next_;
  ctx.next_->prev_ = ctx.prev_;
  ctx.removed_ = true;
}

namespace {
bool is_any(const std::type_info* t) { return t == nullptr || *t == typeid(AnyMessage); }
}  // namespace

void Pipeline::check_types() const {
  const std::type_info* current = channel_.inbound_message_type();
  const Context* emitter = &head_;
  for (const Context* c = head_.next_; c != &tail_; c = c->next_) {
    const MessageTypes types = c->handler_->message_types();
    const std::type_info* in = types.inbound_in;
    if (is_any(in)) continue;
    if (current != nullptr && *current != *in) {
      throw PipelineTypeError(fmt::format("handler '{}' takes inbound {} but '{}' before it emits {}", c->cold_->name,
                                          type_name(*in), emitter->cold_->name, type_name(*current)));
    }
    current = is_any(types.inbound_out) ? nullptr : types.inbound_out;
    emitter = c;
  }
  current = nullptr;
  emitter = nullptr;
  for (const Context* c = tail_.prev_; c != &head_; c = c->prev_) {
    const MessageTypes types = c->handler_->message_types();
    const std::type_info* in = types.outbound_in;
    if (is_any(in)) continue;
    if (current != nullptr && *current != *in) {
      throw PipelineTypeError(fmt::format("handler '{}' takes outbound {} but '{}' after it writes {}", c->cold_->name,
                                          type_name(*in), emitter->cold_->name, type_name(*current)));
    }
    current = is_any(types.outbound_out) ? nullptr : types.outbound_out;
    emitter = c;
  }
  const std::type_info* accepted = channel_.outbound_message_type();
  if (accepted != nullptr && current != nullptr && *accepted != *current) {
    throw PipelineTypeError(fmt::format("the channel writes {} to its transport but '{}' writes {}",
                                        type_name(*accepted), emitter->cold_->name, type_name(*current)));
  }
}

ContextPtr Pipeline::new_context(std::string name, std::shared_ptr<Handler> handler, ExecutorGroup* executors) {
  if (!handler) throw std::invalid_argument(fmt::format("handler '{}' is null", name));
  Handler* raw = handler.get();
  claim(*raw, name);
  struct ReleaseUnlessOwned {  // new_context may still throw below
    Handler* handler;
    ~ReleaseUnlessOwned() {
      if (handler != nullptr) release(*handler);
    }
  } guard{raw};
  // An offloaded context may outlive the pipeline (its executor frees it), so it lives on the heap.
  int slot = -1;
  if (executors == nullptr) {
    for (int i = 0; i < kInlineContexts; ++i) {
      if ((used_slots_ & (1u << i)) == 0) {
        slot = i;
        break;
      }
    }
  }
  ContextPtr ctx;
  if (slot >= 0) {
    ctx.reset(new (slots_[slot].bytes) Context(*this, raw, &slot_cold_[slot], slot));
    used_slots_ |= static_cast<std::uint8_t>(1u << slot);
  } else {
    ctx.reset(new Context(*this, raw, nullptr));
  }
  ctx->cold_->name = std::move(name);
  ctx->cold_->owner = std::move(handler);
  if (executors != nullptr) {
    if (channel_.weak_from_this().expired()) {
      throw std::logic_error(fmt::format("handler '{}': executor offload needs a channel owned by a shared_ptr",
                                         ctx->cold_->name));
    }
    ctx->cold_->offload = std::make_shared<detail::Offload>(*executors, channel_);
    ctx->offload_ = ctx->cold_->offload.get();
  }
  guard.handler = nullptr;
  return ctx;
}

Pipeline& Pipeline::add_last(ExecutorGroup& executors, std::string name, std::shared_ptr<Handler> handler) {
  check_name_free(name);
  link_after(*tail_.prev_, new_context(std::move(name), std::move(handler), &executors));
  return *this;
}

Pipeline& Pipeline::add_first(ExecutorGroup& executors, std::string name, std::shared_ptr<Handler> handler) {
  check_name_free(name);
  link_after(head_, new_context(std::move(name), std::move(handler), &executors));
  return *this;
}

Pipeline& Pipeline::add_last(std::string name, std::shared_ptr<Handler> handler) {
  check_name_free(name);
  link_after(*tail_.prev_, new_context(std::move(name), std::move(handler)));
  return *this;
}

Pipeline& Pipeline::add_first(std::string name, std::shared_ptr<Handler> handler) {
  check_name_free(name);
  link_after(head_, new_context(std::move(name), std::move(handler)));
  return *this;
}

Pipeline& Pipeline::add_before(std::string_view base, std::string name, std::shared_ptr<Handler> handler) {
  Context& at = find_or_throw(base);
  check_name_free(name);
  link_after(*at.prev_, new_context(std::move(name), std::move(handler)));
  return *this;
}

Pipeline& Pipeline::add_after(std::string_view base, std::string name, std::shared_ptr<Handler> handler) {
  Context& at = find_or_throw(base);
  check_name_free(name);
  link_after(at, new_context(std::move(name), std::move(handler)));
  return *this;
}

std::shared_ptr<Handler> Pipeline::remove(std::string_view name) {
  check_thread("Pipeline::remove");
  return remove_context(find_or_throw(name));
}

std::shared_ptr<Handler> Pipeline::remove_context(Context& c) {
  if (removed_.capacity() == 0) removed_.reserve(kInlineContexts);
  unlink(c);
  release(*c.handler_);
  std::shared_ptr<Handler> handler = c.cold_->owner;
  if (c.offload_ != nullptr) {
    // handler_removed runs on the executor after the events queued for it; the context is freed
    // on the loop after everything the handler posted back.
    auto it = std::find_if(contexts_.begin(), contexts_.end(), [&](auto& p) { return p.get() == &c; });
    ContextPtr owned = std::move(*it);
    contexts_.erase(it);
    std::shared_ptr<detail::Offload> offload = owned->cold_->offload;
    if (auto back = offload->retire(std::move(owned))) {
      try {
        back->handler_->handler_removed(*back);
      } catch (const std::exception& e) {
        log(LogLevel::warn, "handler '{}' threw from handler_removed: {}", back->cold_->name, e.what());
      }
      removed_.push_back(std::move(back));
      schedule_free();
    }
    return handler;
  }
  try {
    c.handler_->handler_removed(c);
  } catch (const std::exception& e) {
    log(LogLevel::warn, "handler '{}' threw from handler_removed: {}", c.cold_->name, e.what());
  }
  auto it = std::find_if(contexts_.begin(), contexts_.end(), [&](auto& p) { return p.get() == &c; });
  // Freed from a loop task: the handler may be removing itself right now.
  removed_.push_back(std::move(*it));
  contexts_.erase(it);
  schedule_free();
  return handler;
}

void Pipeline::remove(const Handler& handler) {
  Context* c = context(handler);
  if (c == nullptr) throw std::invalid_argument("handler is not in this pipeline");
  remove(c->cold_->name);
}

std::shared_ptr<Handler> Pipeline::replace(std::string_view old_name, std::string new_name,
                                           std::shared_ptr<Handler> handler) {
  Context& old = find_or_throw(old_name);
  if (new_name != old_name) check_name_free(new_name);
  Context& prev = *old.prev_;
  std::string old_copy(old_name);
  std::shared_ptr<Handler> removed = remove(old_copy);
  try {
    link_after(prev, new_context(std::move(new_name), std::move(handler)));
  } catch (...) {
    link_after(prev, new_context(std::move(old_copy), removed));
    throw;
  }
  return removed;
}

Handler* Pipeline::get(std::string_view name) const noexcept {
  Context* c = find(name);
  return c != nullptr ? c->handler_ : nullptr;
}

Context* Pipeline::context(std::string_view name) const noexcept { return find(name); }

Context* Pipeline::context(const Handler& handler) const noexcept {
  for (Context* c = head_.next_; c != &tail_; c = c->next_) {
    if (c->handler_ == &handler) return c;
  }
  return nullptr;
}

void Pipeline::fire_read_watched(detail::StallWatch& watch, MessageRef message) {
  const TimePoint began = Clock::now();
  watch.enter();
  head_.fire_read_erased(message);
  const bool stalled =
      watch.leave(began, Clock::now(), "channel read", [this] { return fmt::format("{}", fmt::join(names(), ", ")); });
  if (stalled && !handler_reads_timed_) time_handler_reads();
}

void Pipeline::time_handler_reads() noexcept {
  handler_reads_timed_ = true;
  for (Context* c = head_.next_; c != &tail_; c = c->next_) c->read_gate_ |= Context::kReadTimed;
}

std::vector<std::string> Pipeline::names() const {
  std::vector<std::string> out;
  for (Context* c = head_.next_; c != &tail_; c = c->next_) out.push_back(c->cold_->name);
  return out;
}

void Pipeline::clear() {
  Depth depth(*this);
  if (head_.next_ != &tail_) check_thread("Pipeline::clear");
  while (head_.next_ != &tail_) remove_context(*head_.next_);
}

void Pipeline::fire_channel_active() {
  deliver([this] { head_.fire_channel_active(); });
}
void Pipeline::fire_channel_inactive() {
  deliver([this] { head_.fire_channel_inactive(); });
}
void Pipeline::fire_read_complete() {
  deliver([this] { head_.fire_read_complete(); });
}
void Pipeline::fire_user_event(const std::any& event) {
  // As deliver(), copying the event only when it has to wait.
  if (called_from_another_channel() && post_later([this, event] { head_.fire_user_event(event); })) [[unlikely]] return;
  EventDepth depth(*this);
  head_.fire_user_event(event);
}
void Pipeline::fire_writability_changed() {
  deliver([this] { head_.fire_writability_changed(); });
}
void Pipeline::fire_exception(std::exception_ptr error) {
  deliver([this, error = std::move(error)] { head_.fire_exception(error); });
}
void Pipeline::flush() {
  Depth depth(*this);
  tail_.flush();
}
void Pipeline::read() {
  Depth depth(*this);
  tail_.read();
}
void Pipeline::close(Promise<void> promise) {
  Depth depth(*this);
  tail_.close(std::move(promise));
}
void Pipeline::bind(const SocketAddress& local, Promise<void> promise) {
  Depth depth(*this);
  tail_.bind(local, std::move(promise));
}
void Pipeline::connect(const SocketAddress& remote, Promise<void> promise) {
  Depth depth(*this);
  tail_.connect(remote, std::move(promise));
}

std::uint32_t Pipeline::channel_write_refusals() const noexcept { return channel_.write_refusals(); }

void Pipeline::add_write_completion(Promise<void> done, std::uint32_t refusals_before) {
  channel_.add_write_completion(std::move(done), refusals_before);
}

}  // namespace weft
