#include "session.h"

#include <algorithm>
#include <cstring>
#include <limits>

namespace weft::http2::detail {

namespace {

constexpr std::string_view kPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
constexpr std::int64_t kMaxWindow = 0x7fffffff;
constexpr std::uint32_t kMaxSettingsEntries = 32;
constexpr std::uint32_t kMaxContinuations = 8;       // per header block (as nghttp2)
constexpr std::size_t kMaxHeaderBlock = 256 * 1024;  // a header block spread over CONTINUATION frames
constexpr std::uint32_t kMaxQueuedAcks = 1000;       // acknowledgements and resets owed to a client that does not read

std::uint32_t load_u32(const std::uint8_t* p) noexcept {
  return std::uint32_t{p[0]} << 24 | std::uint32_t{p[1]} << 16 | std::uint32_t{p[2]} << 8 | p[3];
}

// Field checks eight bytes at a time (RFC 9113 8.2.1). A word's bytes, each tested at once: has_zero
// is non-zero when a byte is 0, below() when a byte is below n (n <= 128); both are exact.
constexpr std::uint64_t kOnes = 0x0101010101010101ull;
constexpr std::uint64_t kHighs = 0x8080808080808080ull;

constexpr std::uint64_t has_zero(std::uint64_t v) noexcept { return (v - kOnes) & ~v & kHighs; }
constexpr std::uint64_t below(std::uint64_t v, std::uint8_t n) noexcept { return (v - kOnes * n) & ~v & kHighs; }

std::uint64_t load_word(const char* p) noexcept {
  std::uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

// A name must not contain 0x00-0x20, 0x41-0x5a (uppercase), 0x7f-0xff.
bool bad_name_word(std::uint64_t v) noexcept {
  const std::uint64_t seven = v & ~kHighs;  // (no carry between bytes below)
  const std::uint64_t upper = (seven + kOnes * (0x80 - 0x41)) & ~(seven + kOnes * (0x80 - 0x5b)) & kHighs;
  return ((v & kHighs) | below(v, 0x21) | has_zero(v ^ (kOnes * 0x7f)) | upper) != 0;
}

bool bad_name_byte(unsigned char b) noexcept { return b <= 0x20 || (b >= 0x41 && b <= 0x5a) || b >= 0x7f; }

// A method (RFC 9110 9.1): token characters.
struct TokenChars {
  bool ok[256] = {};
  constexpr TokenChars() {
    for (int c = 'a'; c <= 'z'; ++c) ok[c] = true;
    for (int c = 'A'; c <= 'Z'; ++c) ok[c] = true;
    for (int c = '0'; c <= '9'; ++c) ok[c] = true;
    for (const char c : std::string_view("!#$%&'*+-.^_`|~")) ok[static_cast<unsigned char>(c)] = true;
  }
};
constexpr TokenChars kTokenChars;

bool valid_name(std::string_view name) noexcept {
  const char* p = name.data();
  std::size_t n = name.size();
  for (; n >= 8; p += 8, n -= 8) {
    if (bad_name_word(load_word(p))) return false;
  }
  for (; n > 0; ++p, --n) {
    if (bad_name_byte(static_cast<unsigned char>(*p))) return false;
  }
  return true;
}

// A value must not contain NUL, CR or LF, nor start or end with whitespace.
bool valid_value(std::string_view value) noexcept {
  if (value.empty()) return true;
  if (value.front() == ' ' || value.front() == '\t' || value.back() == ' ' || value.back() == '\t') return false;
  const char* p = value.data();
  std::size_t n = value.size();
  for (; n >= 8; p += 8, n -= 8) {
    const std::uint64_t v = load_word(p);
    if ((has_zero(v) | has_zero(v ^ (kOnes * '\r')) | has_zero(v ^ (kOnes * '\n'))) != 0) return false;
  }
  for (; n > 0; ++p, --n) {
    if (*p == '\0' || *p == '\r' || *p == '\n') return false;
  }
  return true;
}

template <std::size_t N>
bool equals(std::string_view s, const char (&literal)[N]) noexcept {
  return s.size() == N - 1 && __builtin_memcmp(s.data(), literal, N - 1) == 0;
}

bool valid_method(std::string_view method) noexcept {
  for (const char c : method) {
    if (!kTokenChars.ok[static_cast<unsigned char>(c)]) return false;
  }
  return true;
}

bool connection_specific(std::string_view name) noexcept {
  switch (name.size()) {
    case 7: return equals(name, "upgrade");
    case 10: return equals(name, "connection") || equals(name, "keep-alive");
    case 16: return equals(name, "proxy-connection");
    case 17: return equals(name, "transfer-encoding");
    default: return false;
  }
}

// The client's checks of a response's fields: the same rules as valid_name, valid_value and
// connection_specific, written on their own so that those stay called once, from the server's
// check_field, and inlined there (its hot path).
bool response_name_ok(std::string_view name) noexcept {
  for (const char c : name) {
    if (bad_name_byte(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

bool response_value_ok(std::string_view value) noexcept {
  if (value.empty()) return true;
  if (value.front() == ' ' || value.front() == '\t' || value.back() == ' ' || value.back() == '\t') return false;
  for (const char c : value) {
    if (c == '\0' || c == '\r' || c == '\n') return false;
  }
  return true;
}

bool response_connection_specific(std::string_view name) noexcept {
  return name == "upgrade" || name == "connection" || name == "keep-alive" || name == "proxy-connection" ||
         name == "transfer-encoding";
}

enum Pseudo : std::uint8_t {
  kMethod = 1,
  kScheme = 2,
  kPath = 4,
  kAuthority = 8,
  kAsteriskPath = 16,
  kOptions = 32,
  kStatus = 64,     // (a response's)
  kProtocol = 128,  // (an extended CONNECT's, RFC 8441 4)
};

}  // namespace

// ---- streams --------------------------------------------------------------------------------------

struct Session::Stream {
  std::int32_t id = 0;
  bool awaiting_head = false;  // client: no final head received yet (DATA would be malformed)
  bool head_request = false;   // client: a HEAD request (its response's content-length is not a body's)
  void* user_data = nullptr;
  std::int64_t send_window = 0;
  std::int64_t recv_window = 0;  // what the client may still send before a WINDOW_UPDATE
  std::size_t consumed = 0;      // received and consumed, not yet returned by WINDOW_UPDATE
  std::int64_t content_length = -1;
  std::uint64_t data_received = 0;
  bool end_received = false;     // half-closed (remote)
  bool end_sent = false;         // half-closed (local), once the END_STREAM frame left
  bool tunnel = false;           // each side ends on its own (keep_open_after_end): no RST_STREAM(NO_ERROR)
  bool manual = false;           // its window is returned by consume_stream (manual_window_for)
  std::uint32_t end_reset_code = ErrorCode::no_error;  // the RST_STREAM after the response (reset_after_end)
  bool final_head = false;       // a final response's HEADERS is queued
  bool resetting = false;        // RST_STREAM queued: nothing more is sent
  bool has_source = false;
  bool deferred = false;
  bool linked = false;           // in the data list
  DataSource source;
  Stream* next = nullptr;        // the data list

  void reset() noexcept { *this = Stream(); }
};

// Stream id -> stream: open addressing, linear probing. Client streams are odd and increasing, so
// id / 2 puts the streams open at once in consecutive slots, mostly each in its own home slot. The
// greatest distance of any entry from its home (max_probe) bounds every search, so a lookup of a
// closed stream and an erase cost one or two probes, not a walk along the run. The last stream
// found is remembered: a frame's callbacks ask for it often.
struct Session::StreamMap {
  struct Slot {
    std::int32_t id = 0;  // 0: empty
    Stream* stream = nullptr;
  };
  std::vector<Slot> slots = std::vector<Slot>(16);
  std::size_t count = 0;
  std::size_t max_probe = 0;
  mutable std::int32_t last_id = 0;
  mutable Stream* last = nullptr;

  std::size_t mask() const noexcept { return slots.size() - 1; }
  std::size_t home(std::int32_t id) const noexcept { return (static_cast<std::uint32_t>(id) >> 1) & mask(); }
  std::size_t distance(std::size_t from, std::size_t to) const noexcept { return (to - from) & mask(); }

  Stream* find(std::int32_t id) const noexcept {
    if (id == last_id) return last;
    std::size_t i = home(id);
    for (std::size_t k = 0; k <= max_probe; ++k, i = (i + 1) & mask()) {
      const Slot& s = slots[i];
      if (s.id == id) {
        last_id = id;
        last = s.stream;
        return s.stream;
      }
      if (s.id == 0) return nullptr;
    }
    return nullptr;
  }
  // `id` is not in the map.
  void insert(std::int32_t id, Stream* stream) {
    if ((count + 1) * 2 > slots.size()) grow();
    place(id, stream);
    ++count;
    last_id = id;
    last = stream;
  }
  void place(std::int32_t id, Stream* stream) noexcept {
    std::size_t i = home(id), k = 0;
    while (slots[i].id != 0) {
      i = (i + 1) & mask();
      ++k;
    }
    slots[i] = {id, stream};
    max_probe = std::max(max_probe, k);
  }
  void grow() {
    std::vector<Slot> old(slots.size() * 2);
    old.swap(slots);
    max_probe = 0;
    for (const Slot& s : old) {
      if (s.id != 0) place(s.id, s.stream);
    }
  }
  // Backward-shift deletion (no tombstones): an entry after the hole moves into it when its home
  // is not between the hole and itself; none further than max_probe from the hole can need to.
  void erase(std::int32_t id) noexcept {
    if (last_id == id) last_id = 0;
    std::size_t i = home(id), k = 0;
    while (slots[i].id != id) {
      if (slots[i].id == 0 || k++ == max_probe) return;
      i = (i + 1) & mask();
    }
    --count;
    for (std::size_t j = (i + 1) & mask(), step = 1; step <= max_probe && slots[j].id != 0;
         j = (j + 1) & mask(), ++step) {
      if (distance(home(slots[j].id), j) < distance(i, j)) continue;  // its home lies after the hole
      slots[i] = slots[j];
      i = j;
      step = 0;
    }
    slots[i] = {};
  }
};

// A frame queued to be written; its payload (or header block) lies in store_.
struct Session::Item {
  std::uint8_t type;
  std::uint8_t flags;
  bool opened;     // RST_STREAM: the stream was open when it was queued (dropped if it closed since)
  bool terminate;  // GOAWAY of terminate_session
  bool ack;        // counted in acks_queued_
  std::int32_t stream_id;
  std::uint32_t at;
  std::uint32_t length;
  std::uint32_t error_code;
};

Session::Session(SessionHooks& hooks, bool manual_window, Role role)
    : hooks_(hooks),
      manual_window_(manual_window),
      client_(role == Role::client),
      preface_pending_(client_),
      in_(client_ ? In::head : In::preface),  // (the server's side sends no magic)
      map_(std::make_unique<StreamMap>()) {}

Session::~Session() = default;

Session::Stream* Session::find(std::int32_t id) const noexcept { return id > 0 ? map_->find(id) : nullptr; }

void* Session::stream_user_data(std::int32_t id) const noexcept {
  const Stream* s = find(id);
  return s != nullptr ? s->user_data : nullptr;
}

void Session::set_stream_user_data(std::int32_t id, void* data) noexcept {
  if (Stream* s = find(id)) s->user_data = data;
}

Session::Stream* Session::open(std::int32_t id) {
  Stream* s;
  if (!free_.empty()) {
    s = free_.back();
    free_.pop_back();
  } else {
    pool_.push_back(std::make_unique<Stream>());
    s = pool_.back().get();
    free_.reserve(pool_.size());  // so that close() never allocates
  }
  s->id = id;
  s->recv_window = local_initial_window_;
  s->send_window = peer_initial_window_;
  map_->insert(id, s);
  ++open_streams_;
  recent_.opened(id);
  return s;
}

void Session::close(Stream& s, std::uint32_t error_code, StreamFate fate) {
  const std::int32_t id = s.id;
  recent_.ended(id, fate);
  unlink_data(s);
  hooks_.on_stream_close(id, error_code);  // (the stream is still found during the call)
  map_->erase(id);
  --open_streams_;
  s.reset();
  free_.push_back(&s);
}

void Session::unlink_data(Stream& s) noexcept {
  if (!s.linked) return;
  Stream* prev = nullptr;
  for (Stream* p = data_head_; p != nullptr; prev = p, p = p->next) {
    if (p != &s) continue;
    if (prev != nullptr) prev->next = p->next;
    else data_head_ = p->next;
    if (data_tail_ == p) data_tail_ = prev;
    break;
  }
  s.next = nullptr;
  s.linked = false;
  --data_count_;
}

void Session::link_data(Stream& s) noexcept {
  if (s.linked) return;
  s.next = nullptr;
  s.linked = true;
  if (data_tail_ != nullptr) data_tail_->next = &s;
  else data_head_ = &s;
  data_tail_ = &s;
  ++data_count_;
}

// ---- settings and submissions ------------------------------------------------------------------

bool Session::submit_settings(const SettingEntry* entries, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t v = entries[i].value;
    switch (entries[i].id) {
      case SettingId::enable_push:
      case SettingId::enable_connect_protocol:
        if (v > 1) return false;
        break;
      case SettingId::initial_window_size:
        if (v > kMaxWindow) return false;
        break;
      case SettingId::max_frame_size:
        if (v < 16384 || v > 16777215) return false;
        break;
      default:
        break;
    }
  }
  Item& item = queue(FrameType::settings, 0, 0);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint8_t id[2] = {static_cast<std::uint8_t>(entries[i].id >> 8),
                                static_cast<std::uint8_t>(entries[i].id)};
    store(id, 2);
    store_u32(entries[i].value);
    switch (entries[i].id) {
      case SettingId::initial_window_size: pending_initial_window_ = entries[i].value; break;
      case SettingId::max_frame_size: local_max_frame_size_ = entries[i].value; break;
      case SettingId::max_concurrent_streams: local_max_concurrent_ = entries[i].value; break;
      case SettingId::header_table_size: local_header_table_size_ = entries[i].value; break;
      case SettingId::enable_connect_protocol: local_connect_protocol_ = entries[i].value == 1; break;
      default: break;
    }
  }
  items_.back().length = static_cast<std::uint32_t>(6 * n);
  (void)item;
  ++unacked_settings_;
  return true;
}

Session::Item& Session::queue(std::uint8_t type, std::uint8_t flags, std::int32_t id) {
  if (!store_.has_storage()) store_ = hooks_.allocator().buffer(256);
  items_.push_back(Item{type, flags, false, false, false, id, static_cast<std::uint32_t>(store_.writer_index()), 0, 0});
  return items_.back();
}

void Session::store(const void* p, std::size_t n) {
  store_.ensure_writable(n);
  store_.write_bytes(p, n);
}

void Session::store_u32(std::uint32_t v) {
  store_.ensure_writable(4);
  store_.write_u32(v);
}

int Session::queue_headers(std::int32_t id, const HeaderField* nv, std::size_t n, std::uint8_t flags) {
  Item& item = queue(FrameType::headers, flags, id);
  const std::size_t at = item.at;
  encoder_.begin_block(store_);
  for (std::size_t i = 0; i < n; ++i) {
    encoder_.encode(store_, std::string_view(reinterpret_cast<const char*>(nv[i].name), nv[i].namelen),
                    std::string_view(reinterpret_cast<const char*>(nv[i].value), nv[i].valuelen),
                    (nv[i].flags & HeaderField::no_index) != 0);
  }
  items_.back().length = static_cast<std::uint32_t>(store_.writer_index() - at);
  return 0;
}

int Session::submit_response(std::int32_t id, const HeaderField* nv, std::size_t n, const DataSource* source) {
  Stream* s = find(id);
  if (s == nullptr || s->resetting || s->final_head) return Result::invalid_argument;
  s->final_head = true;
  const int rv = queue_headers(id, nv, n, source != nullptr ? 0 : FrameFlag::end_stream);
  if (rv != 0) return rv;
  if (source != nullptr) {
    s->source = *source;
    s->has_source = true;
    s->deferred = false;
    link_data(*s);
  }
  return 0;
}

int Session::submit_headers(std::int32_t id, const HeaderField* nv, std::size_t n) {
  Stream* s = find(id);
  if (s == nullptr || s->resetting || s->final_head) return Result::invalid_argument;
  return queue_headers(id, nv, n, 0);
}

int Session::submit_trailer(std::int32_t id, const HeaderField* nv, std::size_t n) {
  Stream* s = find(id);
  if (s == nullptr || s->resetting) return Result::invalid_argument;
  return queue_headers(id, nv, n, FrameFlag::end_stream);
}

int Session::submit_rst_stream(std::int32_t id, std::uint32_t error_code) {
  Stream* s = find(id);
  if (s != nullptr) {
    if (s->resetting) return 0;
    s->resetting = true;
    unlink_data(*s);
  } else if (client_ && !waiting_.empty()) {
    // A request still waiting for the concurrency limit: it never reaches the wire.
    for (auto it = waiting_.begin(); it != waiting_.end(); ++it) {
      if (it->id != id) continue;
      waiting_.erase(it);
      hooks_.on_stream_close(id, error_code);
      return 0;
    }
  }
  Item& item = queue(FrameType::rst_stream, 0, id);
  item.opened = s != nullptr;
  item.ack = true;
  item.error_code = error_code;
  item.length = 4;
  store_u32(error_code);
  ++acks_queued_;
  return 0;
}

int Session::submit_goaway(std::int32_t last_stream_id, std::uint32_t error_code, std::string_view debug) {
  if (term_sent_) return 0;
  Item& item = queue(FrameType::goaway, 0, 0);
  item.error_code = error_code;
  item.length = static_cast<std::uint32_t>(8 + debug.size());
  store_u32(static_cast<std::uint32_t>(last_stream_id));
  store_u32(error_code);
  if (!debug.empty()) store(debug.data(), debug.size());
  goaway_queued_ = true;
  goaway_last_id_ = std::min(goaway_last_id_, last_stream_id);
  return 0;
}

void Session::submit_ping(std::uint64_t opaque) {
  Item& item = queue(FrameType::ping, 0, 0);
  item.length = 8;
  store(&opaque, 8);
}

// ---- the client's requests ------------------------------------------------------------------------

std::int32_t Session::submit_request(const HeaderField* nv, std::size_t n, const DataSource* body) {
  if (!client_) return Result::wrong_role;
  if (goaway_received_ || goaway_queued_ || terminating_) return Result::no_new_streams;
  if (next_stream_id_ > kMaxWindow) return Result::stream_ids_exhausted;  // (2^31-1: the largest id)
  const auto id = static_cast<std::int32_t>(next_stream_id_);
  next_stream_id_ += 2;
  bool head = false;
  for (std::size_t i = 0; i < n; ++i) {
    const std::string_view name(reinterpret_cast<const char*>(nv[i].name), nv[i].namelen);
    if (equals(name, ":method"))
      head = std::string_view(reinterpret_cast<const char*>(nv[i].value), nv[i].valuelen) == "HEAD";
  }
  if (waiting_.empty() && open_streams_ < peer_max_concurrent_) {
    open_request(id, nv, n, body, head);
    return id;
  }
  // Waits: the fields are copied (the caller's are gone by the time it opens).
  Waiting& w = waiting_.emplace_back();
  w.id = id;
  w.head = head;
  w.has_body = body != nullptr;
  if (body != nullptr) w.body = *body;
  auto put_u32 = [&w](std::size_t v) {
    const auto u = static_cast<std::uint32_t>(v);
    const char bytes[4] = {static_cast<char>(u >> 24), static_cast<char>(u >> 16), static_cast<char>(u >> 8),
                           static_cast<char>(u)};
    w.fields.append(bytes, 4);
  };
  for (std::size_t i = 0; i < n; ++i) {
    w.fields.push_back(static_cast<char>(nv[i].flags));
    put_u32(nv[i].namelen);
    w.fields.append(reinterpret_cast<const char*>(nv[i].name), nv[i].namelen);
    put_u32(nv[i].valuelen);
    w.fields.append(reinterpret_cast<const char*>(nv[i].value), nv[i].valuelen);
  }
  return id;
}

void Session::open_request(std::int32_t id, const HeaderField* nv, std::size_t n, const DataSource* body, bool head) {
  Stream* s = open(id);
  last_recv_stream_id_ = id;  // (idle(): ids above it the client has not opened)
  s->awaiting_head = true;
  s->head_request = head;
  queue_headers(id, nv, n, body != nullptr ? 0 : FrameFlag::end_stream);
  if (body != nullptr) {
    s->source = *body;
    s->has_source = true;
    link_data(*s);
  }
}

void Session::open_waiting() {
  while (!waiting_.empty() && open_streams_ < peer_max_concurrent_ && !terminating_) {
    Waiting w = std::move(waiting_.front());
    waiting_.pop_front();
    waiting_nv_.clear();
    const auto* p = reinterpret_cast<const std::uint8_t*>(w.fields.data());
    const std::uint8_t* const end = p + w.fields.size();
    while (p < end) {
      HeaderField f{};
      f.flags = *p++;
      f.namelen = load_u32(p);
      f.name = const_cast<std::uint8_t*>(p + 4);
      p += 4 + f.namelen;
      f.valuelen = load_u32(p);
      f.value = const_cast<std::uint8_t*>(p + 4);
      p += 4 + f.valuelen;
      waiting_nv_.push_back(f);
    }
    open_request(w.id, waiting_nv_.data(), waiting_nv_.size(), w.has_body ? &w.body : nullptr, w.head);
  }
}

void Session::set_local_window_size(std::int32_t size) {
  if (size <= local_conn_window_) return;
  const std::int32_t delta = size - local_conn_window_;
  local_conn_window_ = size;
  conn_recv_window_ += delta;
  Item& item = queue(FrameType::window_update, 0, 0);
  item.length = 4;
  store_u32(static_cast<std::uint32_t>(delta));
}

void Session::terminate_session(std::uint32_t error_code, std::string_view debug) {
  if (terminating_) return;
  submit_goaway(last_proc_stream_id_, error_code, debug);
  items_.back().terminate = true;
  terminating_ = true;
  in_ = In::ignore_all;
}

int Session::resume_data(std::int32_t id) {
  Stream* s = find(id);
  if (s == nullptr || !s->has_source || s->resetting) return Result::invalid_argument;
  if (s->deferred) {
    s->deferred = false;
    link_data(*s);
  }
  return 0;
}

void Session::returned(std::size_t& consumed, std::int32_t id, std::int32_t window) {
  // A WINDOW_UPDATE once half the window is used (a window of 1 is returned byte by byte).
  const std::size_t threshold = std::max<std::size_t>(1, static_cast<std::size_t>(window) / 2);
  if (consumed < threshold) return;
  Item& item = queue(FrameType::window_update, 0, id);
  item.length = 4;
  store_u32(static_cast<std::uint32_t>(consumed));
  if (id == 0) {
    conn_recv_window_ += static_cast<std::int64_t>(consumed);
  } else if (Stream* s = find(id)) {
    s->recv_window += static_cast<std::int64_t>(consumed);
  }
  consumed = 0;
}

void Session::consume_connection(std::size_t n) {
  if (terminating_ || n == 0) return;
  conn_consumed_ += n;
  returned(conn_consumed_, 0, local_conn_window_);
}

void Session::consume_stream(std::int32_t id, std::size_t n) {
  if (terminating_ || n == 0) return;
  Stream* s = find(id);
  if (s == nullptr || s->end_received || s->resetting) return;  // nothing more will come
  s->consumed += n;
  returned(s->consumed, id, static_cast<std::int32_t>(local_initial_window_));
}

int Session::upgrade(const std::uint8_t* settings, std::size_t n, bool) {
  if (n % 6 != 0 || last_recv_stream_id_ != 0) return Result::invalid_argument;
  for (std::size_t i = 0; i < n; i += 6) {
    const auto id = static_cast<std::uint16_t>(settings[i] << 8 | settings[i + 1]);
    if (apply_peer_setting(id, load_u32(settings + i + 2)) != 0) return Result::invalid_argument;
  }
  Stream* s = open(1);
  s->end_received = true;
  last_recv_stream_id_ = last_proc_stream_id_ = 1;
  return 0;
}

bool Session::want_read() const noexcept {
  if (term_sent_) return false;
  if (open_streams_ > 0) return true;
  return !goaway_sent_ && !goaway_received_;
}

bool Session::want_write() const noexcept {
  if (term_sent_) return false;
  if (items_head_ < items_.size() || (data_head_ != nullptr && conn_send_window_ > 0)) return true;
  return client_ && (preface_pending_ || (!waiting_.empty() && open_streams_ < peer_max_concurrent_ && !terminating_));
}

// ---- input --------------------------------------------------------------------------------------

ssize_t Session::receive(const std::uint8_t* data, std::size_t n) {
  const ssize_t rv = read_frames(data, n);
  if (rv < 0) return rv;
  if (acks_queued_ > kMaxQueuedAcks) return Result::flooded;
  return static_cast<ssize_t>(n);
}

ssize_t Session::read_frames(const std::uint8_t* p, std::size_t n) {
  const std::uint8_t* const end = p + n;
  while (p < end) {
    const std::size_t avail = static_cast<std::size_t>(end - p);
    switch (in_) {
      case In::ignore_all:
        return 0;
      case In::preface: {
        const std::size_t take = std::min(avail, kPreface.size() - preface_have_);
        if (std::memcmp(p, kPreface.data() + preface_have_, take) != 0) return Result::bad_preface;
        preface_have_ += take;
        p += take;
        if (preface_have_ == kPreface.size()) in_ = In::head;
        break;
      }
      case In::head: {
        if (head_have_ == 0 && avail >= 9) {
          std::memcpy(head_, p, 9);
          head_have_ = 9;
          p += 9;
        } else {
          const std::size_t take = std::min(avail, 9 - head_have_);
          std::memcpy(head_ + head_have_, p, take);
          head_have_ += take;
          p += take;
          if (head_have_ < 9) break;
        }
        head_have_ = 0;
        if (const int rv = begin_frame(); rv < 0) return rv;
        break;
      }
      case In::payload: {
        const std::size_t take = std::min(avail, payload_left_);
        if (frame_buf_.empty() && take == payload_left_) {
          payload_left_ = 0;
          in_ = In::head;
          const int rv = on_payload(p, take);
          p += take;
          if (rv < 0) return rv;
        } else {
          frame_buf_.insert(frame_buf_.end(), p, p + take);
          p += take;
          payload_left_ -= take;
          if (payload_left_ == 0) {
            in_ = In::head;
            const int rv = on_payload(frame_buf_.data(), frame_buf_.size());
            frame_buf_.clear();
            if (rv < 0) return rv;
          }
        }
        break;
      }
      case In::data_padlen: {
        const std::size_t pad = *p++;
        if (pad >= frame_.length) {
          if (const int rv = connection_error(ErrorCode::protocol_error, "DATA padding too long"); rv < 0) return rv;
          break;
        }
        payload_left_ = frame_.length - 1 - pad;
        padding_left_ = pad;
        conn_consumed_ += 1 + pad;  // padding is returned at once, to the stream as well
        if (data_target_ != 0) {
          if (Stream* s = find(data_target_)) s->consumed += 1 + pad;
        }
        in_ = In::data;
        if (payload_left_ == 0 && padding_left_ == 0) {
          in_ = In::head;
          if (const int rv = end_data_frame(); rv < 0) return rv;
        }
        break;
      }
      case In::data: {
        if (payload_left_ > 0) {
          const std::size_t take = std::min(avail, payload_left_);
          payload_left_ -= take;
          Stream* s = data_target_ != 0 ? find(data_target_) : nullptr;
          if (s != nullptr && !s->resetting) {
            s->data_received += take;
            if (s->content_length >= 0 && s->data_received > static_cast<std::uint64_t>(s->content_length)) {
              data_target_ = 0;
              conn_consumed_ += take;
              if (const int rv = stream_error(s->id, ErrorCode::protocol_error, "DATA past content-length"); rv < 0) {
                return rv;
              }
            } else {
              if (!manual_window_ && !s->manual) {
                conn_consumed_ += take;
                s->consumed += take;
              }
              frame_.user_data = s->user_data;
              const int rv = hooks_.on_data_chunk(frame_, p, take);
              if (rv == Result::reset_stream) {
                data_target_ = 0;
                submit_rst_stream(s->id, ErrorCode::internal_error);
              } else if (rv != 0) {
                return rv;
              }
            }
          } else {
            conn_consumed_ += take;  // nobody reads it: the connection's window comes back at once
          }
          p += take;
          if (payload_left_ > 0) break;
        }
        if (padding_left_ > 0) {
          const std::size_t take = std::min(static_cast<std::size_t>(end - p), padding_left_);
          padding_left_ -= take;
          p += take;
          if (padding_left_ > 0) break;
        }
        in_ = In::head;
        if (const int rv = end_data_frame(); rv < 0) return rv;
        break;
      }
      case In::skip: {
        const std::size_t take = std::min(avail, payload_left_);
        payload_left_ -= take;
        p += take;
        if (payload_left_ == 0) in_ = In::head;
        break;
      }
    }
  }
  return 0;
}

int Session::begin_frame() {
  frame_ = FrameInfo{};
  frame_.length = std::uint32_t{head_[0]} << 16 | std::uint32_t{head_[1]} << 8 | head_[2];
  frame_.type = head_[3];
  frame_.flags = head_[4];
  frame_.stream_id = static_cast<std::int32_t>(load_u32(head_ + 5) & 0x7fffffffu);
  payload_left_ = frame_.length;
  padding_left_ = 0;
  const std::int32_t id = frame_.stream_id;
  if (frame_.length > local_max_frame_size_) return connection_error(ErrorCode::frame_size_error, "frame too large");
  if (first_frame_) {
    if (frame_.type != FrameType::settings || (frame_.flags & FrameFlag::ack) != 0) {
      return connection_error(ErrorCode::protocol_error, "the preface's first frame is not SETTINGS");
    }
    first_frame_ = false;
  }
  if (continuing_ != 0 && frame_.type != FrameType::continuation) {
    return connection_error(ErrorCode::protocol_error, "a header block was interrupted");
  }
  in_ = In::payload;
  switch (frame_.type) {
    case FrameType::data: {
      if (id == 0) return connection_error(ErrorCode::protocol_error, "DATA on stream 0");
      if (frame_.length > conn_recv_window_)
        return connection_error(ErrorCode::flow_control_error, "connection window");
      conn_recv_window_ -= frame_.length;
      data_target_ = 0;
      Stream* s = find(id);
      if (s == nullptr) {
        if (idle(id)) return connection_error(ErrorCode::protocol_error, "DATA on an idle stream");
        // A closed stream: answered as it closed (RFC 9113 5.1), or ignored; its bytes are given
        // back to the connection.
        if (const int rv = on_closed_stream(id); rv != 0 || terminating_) return rv;
      } else if (s->end_received) {
        // A stream error by RFC 9113 5.1; ended as a connection error (5.4.1 allows it), as nghttp2
        // does: one of MadeYouReset's ways to make the server reset streams.
        return connection_error(ErrorCode::stream_closed, "DATA after END_STREAM");
      } else if (frame_.length > s->recv_window) {
        if (const int rv = stream_error(id, ErrorCode::flow_control_error, "stream window"); rv < 0) return rv;
      } else if (s->awaiting_head) {
        // (Client: the server's streams never await a head.) RFC 9113 8.1: a response's DATA
        // follows its final head; before it the response is malformed.
        s->recv_window -= frame_.length;
        if (const int rv = stream_error(id, ErrorCode::protocol_error, "DATA before the response's head"); rv < 0) {
          return rv;
        }
      } else {
        s->recv_window -= frame_.length;
        if (!s->resetting) data_target_ = id;
      }
      if ((frame_.flags & FrameFlag::padded) != 0) {
        if (frame_.length < 1) return connection_error(ErrorCode::frame_size_error, "DATA padding");
        in_ = In::data_padlen;
      } else {
        in_ = In::data;
        if (frame_.length == 0) {
          in_ = In::head;
          return end_data_frame();
        }
      }
      return 0;
    }
    case FrameType::headers:
      if (id == 0) return connection_error(ErrorCode::protocol_error, "HEADERS on stream 0");
      break;
    case FrameType::priority:
      if (id == 0) return connection_error(ErrorCode::protocol_error, "PRIORITY on stream 0");
      if (frame_.length != 5) {
        in_ = In::skip;
        // (No RST_STREAM on an idle stream (6.4): a connection error there, as 5.4.1 allows.)
        if (find(id) == nullptr && idle(id)) return connection_error(ErrorCode::frame_size_error, "PRIORITY size");
        return stream_error(id, ErrorCode::frame_size_error, "PRIORITY size");
      }
      break;
    case FrameType::rst_stream:
      if (id == 0) return connection_error(ErrorCode::protocol_error, "RST_STREAM on stream 0");
      if (frame_.length != 4) return connection_error(ErrorCode::frame_size_error, "RST_STREAM size");
      break;
    case FrameType::settings:
      if (id != 0) return connection_error(ErrorCode::protocol_error, "SETTINGS on a stream");
      if ((frame_.flags & FrameFlag::ack) != 0 ? frame_.length != 0 : frame_.length % 6 != 0) {
        return connection_error(ErrorCode::frame_size_error, "SETTINGS size");
      }
      if (frame_.length / 6 > kMaxSettingsEntries) {
        hooks_.on_invalid_frame_recv(frame_, "too many SETTINGS entries");
        terminate_session(ErrorCode::enhance_your_calm);
        return 0;
      }
      break;
    case FrameType::push_promise:
      // (The client's SETTINGS_ENABLE_PUSH is 0: RFC 9113 8.4.)
      return connection_error(ErrorCode::protocol_error,
                              client_ ? "PUSH_PROMISE with push disabled" : "PUSH_PROMISE from a client");
    case FrameType::ping:
      if (id != 0) return connection_error(ErrorCode::protocol_error, "PING on a stream");
      if (frame_.length != 8) return connection_error(ErrorCode::frame_size_error, "PING size");
      break;
    case FrameType::goaway:
      if (id != 0) return connection_error(ErrorCode::protocol_error, "GOAWAY on a stream");
      if (frame_.length < 8) return connection_error(ErrorCode::frame_size_error, "GOAWAY size");
      break;
    case FrameType::window_update:
      if (frame_.length != 4) return connection_error(ErrorCode::frame_size_error, "WINDOW_UPDATE size");
      break;
    case FrameType::continuation:
      if (continuing_ == 0 || id != continuing_) return connection_error(ErrorCode::protocol_error, "CONTINUATION");
      break;
    default:
      in_ = In::skip;  // unknown frame types are ignored (RFC 9113 4.1)
      break;
  }
  if (in_ == In::payload && payload_left_ == 0) {
    in_ = In::head;
    return on_payload(nullptr, 0);
  }
  if (in_ == In::skip && payload_left_ == 0) in_ = In::head;
  return 0;
}

int Session::on_payload(const std::uint8_t* p, std::size_t n) {
  switch (frame_.type) {
    case FrameType::headers: return on_headers(p, n);
    case FrameType::continuation: return on_continuation(p, n);
    case FrameType::priority:
      // Priorities are not used (RFC 9113 5.3.2 allows it), but a stream may not depend on itself (5.3.1).
      if (static_cast<std::int32_t>(load_u32(p) & 0x7fffffffu) != frame_.stream_id) return 0;
      // (On an idle stream, RST_STREAM may not be sent (6.4): a connection error, as 5.4.1 allows.)
      if (find(frame_.stream_id) == nullptr && idle(frame_.stream_id)) {
        return connection_error(ErrorCode::protocol_error, "idle stream depends on itself");
      }
      return stream_error(frame_.stream_id, ErrorCode::protocol_error, "stream depends on itself");
    case FrameType::rst_stream: return on_rst_stream(p);
    case FrameType::settings: return on_settings(p, n);
    case FrameType::ping: return on_ping(p);
    case FrameType::goaway: return on_goaway(p, n);
    case FrameType::window_update: return on_window_update(p);
    default: return 0;
  }
}

int Session::end_data_frame() {
  const std::int32_t id = frame_.stream_id;
  Stream* s = data_target_ != 0 ? find(data_target_) : nullptr;
  data_target_ = 0;
  if (s != nullptr) {
    const bool end_stream = (frame_.flags & FrameFlag::end_stream) != 0;
    if (end_stream) {
      s->end_received = true;
      if (s->content_length >= 0 && s->data_received != static_cast<std::uint64_t>(s->content_length)) {
        return stream_error(id, ErrorCode::protocol_error, "DATA shorter than content-length");
      }
    }
    frame_.user_data = s->user_data;
    if (const int rv = hooks_.on_frame_recv(frame_); rv != 0) return rv;
    if (!manual_window_) {
      if (Stream* again = find(id); again != nullptr && !again->end_received && !again->manual) {
        returned(again->consumed, id, static_cast<std::int32_t>(local_initial_window_));
      }
    }
    if (end_stream) {
      if (Stream* again = find(id); again != nullptr && again->end_sent)
        close(*again, ErrorCode::no_error, StreamFate::ended);
    }
  }
  returned(conn_consumed_, 0, local_conn_window_);
  return 0;
}

int Session::on_headers(const std::uint8_t* p, std::size_t n) {
  const std::int32_t id = frame_.stream_id;
  std::size_t pad = 0;
  if ((frame_.flags & FrameFlag::padded) != 0) {
    if (n < 1) return connection_error(ErrorCode::frame_size_error, "HEADERS padding");
    pad = *p++;
    --n;
  }
  bool self_dependent = false;
  if ((frame_.flags & FrameFlag::priority) != 0) {
    if (n < 5) return connection_error(ErrorCode::frame_size_error, "HEADERS priority");
    self_dependent = static_cast<std::int32_t>(load_u32(p) & 0x7fffffffu) == id;
    p += 5;
    n -= 5;
  }
  if (pad > n) return connection_error(ErrorCode::protocol_error, "HEADERS padding too long");
  n -= pad;
  if ((id & 1) == 0) return connection_error(ErrorCode::protocol_error, "HEADERS on an even stream");
  if (client_) return on_response_headers(id, p, n);

  decoding_id_ = 0;
  block_rst_ = 0;
  decoding_frame_ = frame_;
  decoding_frame_.request = false;
  if (Stream* s = find(id)) {
    // Trailers: they must end the stream, which must still be open for the client. A stream being
    // reset (malformed, refused) has them decoded for HPACK's state only: its request never reaches
    // the application.
    if (s->resetting) {
    } else if (s->end_received) {
      decoding_id_ = id;
      block_rst_ = ErrorCode::stream_closed;
    } else {
      decoding_id_ = id;
      if ((frame_.flags & FrameFlag::end_stream) == 0) block_rst_ = ErrorCode::protocol_error;
    }
  } else if (id > last_recv_stream_id_) {
    last_recv_stream_id_ = id;
    if ((goaway_queued_ || terminating_) && id > goaway_last_id_) {
      recent_.opened(id, StreamFate::reset_by_us);  // after GOAWAY: not processed (decoded for HPACK only)
    } else if (open_streams_ >= local_max_concurrent_ || self_dependent) {
      recent_.opened(id, StreamFate::reset_by_us);
      refused_id_ = id;
      block_rst_ = self_dependent ? ErrorCode::protocol_error : ErrorCode::refused_stream;
    } else {
      open(id);
      decoding_frame_.request = true;
      last_proc_stream_id_ = id;
      const int rv = hooks_.on_begin_headers(id);
      if (rv == Result::reset_stream) {
        block_rst_ = ErrorCode::internal_error;
      } else if (rv != 0) {
        return rv;
      }
      decoding_id_ = id;
    }
  } else if (const int rv = on_closed_stream(id); rv != 0 || terminating_) {
    return rv;
  }
  // (A HEADERS frame on a stream closed already is decoded for HPACK's sake, then dropped.)
  if ((frame_.flags & FrameFlag::end_headers) == 0) {
    continuing_ = id;
    continuations_ = 0;
    block_.assign(p, p + n);
    return 0;
  }
  return on_header_block(p, n);
}

// Client: a HEADERS frame from the server on a stream the client opened: an interim or final head,
// or trailers. On any other stream it is a connection error (idle: the server opens no streams and
// answers none the client did not open) or answered as the stream closed (RFC 9113 5.1).
int Session::on_response_headers(std::int32_t id, const std::uint8_t* p, std::size_t n) {
  decoding_id_ = 0;
  block_rst_ = 0;
  decoding_frame_ = frame_;
  decoding_frame_.request = false;
  if (Stream* s = find(id)) {
    if (s->resetting) {
      // (Decoded for HPACK's state only.)
    } else if (s->end_received) {
      decoding_id_ = id;
      block_rst_ = ErrorCode::stream_closed;
    } else {
      decoding_id_ = id;
      if (!s->awaiting_head) {
        decoding_frame_.head = HeadKind::trailers;  // they must end the stream (RFC 9113 8.1)
        if ((frame_.flags & FrameFlag::end_stream) == 0) block_rst_ = ErrorCode::protocol_error;
      }
      const int rv = hooks_.on_begin_headers(id);
      if (rv == Result::reset_stream) {
        block_rst_ = ErrorCode::internal_error;
      } else if (rv != 0) {
        return rv;
      }
    }
  } else if (idle(id)) {
    return connection_error(ErrorCode::protocol_error, "HEADERS on a stream the client did not open");
  } else if (const int rv = on_closed_stream(id); rv != 0 || terminating_) {
    return rv;
  }
  if ((frame_.flags & FrameFlag::end_headers) == 0) {
    continuing_ = id;
    continuations_ = 0;
    block_.assign(p, p + n);
    return 0;
  }
  return on_header_block(p, n);
}

int Session::on_continuation(const std::uint8_t* p, std::size_t n) {
  if (++continuations_ > kMaxContinuations || block_.size() + n > kMaxHeaderBlock) {
    return Result::too_many_continuations;
  }
  block_.insert(block_.end(), p, p + n);
  if ((frame_.flags & FrameFlag::end_headers) == 0) return 0;
  continuing_ = 0;
  const int rv = on_header_block(block_.data(), block_.size());
  block_.clear();
  return rv;
}

int Session::on_header_block(const std::uint8_t* block, std::size_t n) {
  Stream* s = decoding_id_ != 0 && block_rst_ == 0 ? find(decoding_id_) : nullptr;
  decoding_ = s;
  decoding_frame_.user_data = s != nullptr ? s->user_data : nullptr;
  regular_seen_ = false;
  pseudo_seen_ = 0;
  connect_ = false;
  field_error_ = nullptr;
  const int rv = decoder_.decode(block, n, client_ ? &Session::response_field : &Session::header_field, this);
  decoding_ = nullptr;
  if (rv == hpack::kCompressionError) return connection_error(ErrorCode::compression_error, "HPACK");
  if (rv != 0) return rv;
  const std::int32_t id = decoding_frame_.stream_id;
  if (block_rst_ != 0) {
    const std::uint32_t code = block_rst_;
    block_rst_ = 0;
    if (code == ErrorCode::refused_stream ||
        (code == ErrorCode::protocol_error && refused_id_ == id && find(id) == nullptr)) {
      refused_id_ = 0;
      submit_rst_stream(id, code);
      if (code == ErrorCode::protocol_error)
        return hooks_.on_invalid_frame_recv(decoding_frame_, "self-dependent stream");
      return 0;
    }
    if (code == ErrorCode::internal_error) {
      submit_rst_stream(id, code);
      return 0;
    }
    return stream_error(id, code,
                        code == ErrorCode::stream_closed ? "HEADERS after END_STREAM" : "trailers without END_STREAM");
  }
  if (s == nullptr || find(id) != s) return 0;
  if (field_error_ != nullptr) return stream_error(id, ErrorCode::protocol_error, field_error_);
  if (decoding_frame_.request) {
    // An extended CONNECT (RFC 8441 4) has all four; a plain CONNECT only :authority (RFC 9113 8.5).
    if ((pseudo_seen_ & kProtocol) != 0 && !connect_) {
      return stream_error(id, ErrorCode::protocol_error, ":protocol on a request other than CONNECT");
    }
    constexpr std::uint8_t kAll = kMethod | kScheme | kPath | kAuthority;
    const bool complete = (pseudo_seen_ & kProtocol) != 0 ? (pseudo_seen_ & kAll) == kAll
                          : connect_ ? (pseudo_seen_ & kAuthority) != 0 && (pseudo_seen_ & (kScheme | kPath)) == 0
                                     : (pseudo_seen_ & (kMethod | kScheme | kPath)) == (kMethod | kScheme | kPath);
    if (!complete) return stream_error(id, ErrorCode::protocol_error, "request pseudo-headers missing");
    if ((pseudo_seen_ & (kAsteriskPath | kOptions)) == kAsteriskPath) {
      return stream_error(id, ErrorCode::protocol_error, ":path * without OPTIONS");
    }
  } else if (client_) {
    if (s->resetting) return 0;  // the codec reset it while its fields came (a limit)
    if (const int rv = end_response_block(*s); rv != 0) return rv < 0 ? rv : 0;
  }
  const bool end_stream = (decoding_frame_.flags & FrameFlag::end_stream) != 0;
  if (end_stream) {
    s->end_received = true;
    // A request's body ends here: it must be as long as its content-length said (RFC 9113 8.1.1),
    // whether the end came with the head or with trailers.
    if (s->content_length >= 0 && s->data_received != static_cast<std::uint64_t>(s->content_length)) {
      return stream_error(id, ErrorCode::protocol_error, "content-length not matched by DATA");
    }
  }
  if (const int r = hooks_.on_frame_recv(decoding_frame_); r != 0) return r;
  if (end_stream) {
    if (Stream* again = find(id); again != nullptr && again->end_sent)
      close(*again, ErrorCode::no_error, StreamFate::ended);
  }
  return 0;
}

// Client: a response block is whole (its fields were checked one by one). An interim head is
// reported and awaits the next; a final head lets DATA come. 1 when the block is done with (the
// stream reset, or an interim head reported), else 0: the end of the stream is checked by the caller.
int Session::end_response_block(Stream& s) {
  const std::int32_t id = s.id;
  const bool end_stream = (decoding_frame_.flags & FrameFlag::end_stream) != 0;
  switch (decoding_frame_.head) {
    case HeadKind::none: {
      const int rv = stream_error(id, ErrorCode::protocol_error, "a response without :status");
      return rv != 0 ? rv : 1;
    }
    case HeadKind::interim: {
      if (end_stream) {
        const int rv = stream_error(id, ErrorCode::protocol_error, "an interim response with END_STREAM");
        return rv != 0 ? rv : 1;
      }
      const int rv = hooks_.on_frame_recv(decoding_frame_);
      return rv != 0 ? rv : 1;
    }
    case HeadKind::response:
      s.awaiting_head = false;
      // A HEAD request's or a 304's content-length describes a body that is not sent (RFC 9110 8.6).
      if (s.head_request || response_status_ == 304) s.content_length = -1;
      return 0;
    case HeadKind::trailers: return 0;
  }
  return 0;
}

// Client: RFC 9113 8.1.1, 8.2, 8.3.2: what a response's field may be. Sets field_error_.
int Session::check_response_field(Stream& s, std::string_view name, std::string_view value) {
  if (s.resetting) {  // the codec reset the stream (its header list bound): the rest is dropped
    decoding_ = nullptr;
    return 1;
  }
  if (name.empty()) {
    field_error_ = "empty field name";
    return 1;
  }
  if (name[0] == ':') {
    if (regular_seen_ || decoding_frame_.head == HeadKind::trailers) {
      field_error_ = "pseudo-header out of place";
      return 1;
    }
    if (!equals(name, ":status")) {
      field_error_ = "a pseudo-header other than :status in a response";
      return 1;
    }
    if ((pseudo_seen_ & kStatus) != 0) {
      field_error_ = "repeated :status";
      return 1;
    }
    if (value.size() != 3 || value[0] < '1' || value[0] > '9' || value[1] < '0' || value[1] > '9' || value[2] < '0' ||
        value[2] > '9') {
      field_error_ = "invalid :status";
      return 1;
    }
    const int status = (value[0] - '0') * 100 + (value[1] - '0') * 10 + (value[2] - '0');
    if (status == 101) {  // (RFC 9113 8.6: no Upgrade in HTTP/2)
      field_error_ = ":status 101";
      return 1;
    }
    pseudo_seen_ |= kStatus;
    response_status_ = status;
    decoding_frame_.head = status < 200 ? HeadKind::interim : HeadKind::response;
  } else {
    if (decoding_frame_.head == HeadKind::none) {
      field_error_ = "a field before :status";
      return 1;
    }
    regular_seen_ = true;
    if (!response_name_ok(name)) {
      field_error_ = "invalid field name";
      return 1;
    }
    if (response_connection_specific(name) || (equals(name, "te") && !equals(value, "trailers"))) {
      field_error_ = "connection-specific field";
      return 1;
    }
    if (decoding_frame_.head == HeadKind::response && equals(name, "content-length")) {
      std::int64_t length = 0;
      if (value.empty() || value.size() > 18) {
        field_error_ = "invalid content-length";
        return 1;
      }
      for (const char c : value) {
        if (c < '0' || c > '9') {
          field_error_ = "invalid content-length";
          return 1;
        }
        length = length * 10 + (c - '0');
      }
      if (s.content_length >= 0 && s.content_length != length) {
        field_error_ = "conflicting content-length";
        return 1;
      }
      s.content_length = length;
    }
  }
  if (!response_value_ok(value)) {
    field_error_ = "invalid field value";
    return 1;
  }
  return 0;
}

// Client: header_field for a response's block.
int Session::response_field(void* context, std::string_view name, std::string_view value) {
  Session& self = *static_cast<Session*>(context);
  Stream* s = self.decoding_;
  if (s == nullptr || self.field_error_ != nullptr) return 0;  // decoded for HPACK's state only
  if (self.check_response_field(*s, name, value) != 0) return 0;
  const int rv = self.hooks_.on_header(self.decoding_frame_, name, value);
  if (rv == Result::reset_stream) {
    self.block_rst_ = ErrorCode::internal_error;
    self.decoding_ = nullptr;
    return 0;
  }
  return rv;
}

int Session::header_field(void* context, std::string_view name, std::string_view value) {
  Session& self = *static_cast<Session*>(context);
  Stream* s = self.decoding_;
  if (s == nullptr || self.field_error_ != nullptr) return 0;  // decoded for HPACK's state only
  if (const int rv = self.check_field(name, value); rv != 0) return 0;
  const int rv = self.hooks_.on_header(self.decoding_frame_, name, value);
  if (rv == Result::reset_stream) {
    self.block_rst_ = ErrorCode::internal_error;
    self.decoding_ = nullptr;
    return 0;
  }
  return rv;
}

// RFC 9113 8.2 and 8.3: what a request's (or trailers') field may be. Sets field_error_. The checks
// of the bytes alone are skipped for a table entry that passed them when it was inserted (a client
// indexes most fields, and sends them again on every request); the checks of a field's place and
// meaning run every time.
int Session::check_field(std::string_view name, std::string_view value) {
  const bool vouched = decoder_.field_vouched();
  if (name.empty()) {
    field_error_ = "empty field name";
    return 1;
  }
  if (name[0] == ':') {
    std::uint8_t bit = 0;
    if (!decoding_frame_.request || regular_seen_) {
      field_error_ = "pseudo-header out of place";
      return 1;
    }
    switch (name.size()) {
      case 5:
        // origin-form, or asterisk-form for OPTIONS (RFC 9113 8.3.1); not absolute-form.
        if (equals(name, ":path") && !value.empty() && (value[0] == '/' || equals(value, "*"))) {
          bit = kPath;
          if (value[0] == '*') pseudo_seen_ |= kAsteriskPath;
        }
        break;
      case 7:
        if (equals(name, ":method") && !value.empty() && valid_method(value)) {
          bit = kMethod;
          connect_ = equals(value, "CONNECT");
          if (equals(value, "OPTIONS")) pseudo_seen_ |= kOptions;
        } else if (equals(name, ":scheme") && !value.empty()) {
          bit = kScheme;
        }
        break;
      case 9:
        // RFC 8441 4: only where SETTINGS_ENABLE_CONNECT_PROTOCOL=1 was sent (else unknown: 8.3).
        if (equals(name, ":protocol") && local_connect_protocol_ && !value.empty()) bit = kProtocol;
        break;
      case 10:
        if (equals(name, ":authority")) bit = kAuthority;
        break;
      default:
        break;
    }
    if (bit == 0 || (pseudo_seen_ & bit) != 0) {
      field_error_ = "unknown, empty or repeated pseudo-header";
      return 1;
    }
    pseudo_seen_ |= bit;
  } else {
    regular_seen_ = true;
    if (!vouched && !valid_name(name)) {
      field_error_ = "invalid field name";
      return 1;
    }
    if (!vouched && (connection_specific(name) || (equals(name, "te") && !equals(value, "trailers")))) {
      field_error_ = "connection-specific field";
      return 1;
    }
    if (equals(name, "content-length") && decoding_frame_.request) {
      std::int64_t length = 0;
      if (value.empty() || value.size() > 18) {
        field_error_ = "invalid content-length";
        return 1;
      }
      for (const char c : value) {
        if (c < '0' || c > '9') {
          field_error_ = "invalid content-length";
          return 1;
        }
        length = length * 10 + (c - '0');
      }
      if (decoding_->content_length >= 0 && decoding_->content_length != length) {
        field_error_ = "conflicting content-length";
        return 1;
      }
      decoding_->content_length = length;
    }
  }
  if (vouched) return 0;
  if (!valid_value(value)) {
    field_error_ = "invalid field value";
    return 1;
  }
  decoder_.vouch();
  return 0;
}

int Session::on_settings(const std::uint8_t* p, std::size_t n) {
  if ((frame_.flags & FrameFlag::ack) != 0) {
    if (unacked_settings_ > 0) {
      --unacked_settings_;
      // Our SETTINGS are in effect now: the streams' receive windows follow the new initial size.
      const std::int64_t delta = std::int64_t{pending_initial_window_} - local_initial_window_;
      local_initial_window_ = pending_initial_window_;
      // What was consumed under the old size may be owed back now: a client that sent more than the
      // new size before the ACK has a negative window and waits for this WINDOW_UPDATE.
      if (delta != 0) {
        for (const auto& s : pool_) {
          if (s->id == 0) continue;
          s->recv_window += delta;
          if (!s->end_received && !s->resetting) returned(s->consumed, s->id, static_cast<std::int32_t>(local_initial_window_));
        }
      }
      decoder_.set_max_table_size(local_header_table_size_);
    }
    return hooks_.on_frame_recv(frame_);
  }
  for (std::size_t i = 0; i < n; i += 6) {
    const auto id = static_cast<std::uint16_t>(p[i] << 8 | p[i + 1]);
    const int rv = apply_peer_setting(id, load_u32(p + i + 2));
    if (rv == ErrorCode::flow_control_error) return connection_error(ErrorCode::flow_control_error, "SETTINGS window");
    if (rv != 0) return connection_error(ErrorCode::protocol_error, "SETTINGS value");
  }
  Item& ack = queue(FrameType::settings, FrameFlag::ack, 0);
  ack.ack = true;
  ++acks_queued_;
  return hooks_.on_frame_recv(frame_);
}

int Session::apply_peer_setting(std::uint16_t id, std::uint32_t value) {
  switch (id) {
    case SettingId::header_table_size: encoder_.set_peer_max_table_size(value); return 0;
    case SettingId::enable_push:
      // (A server may only say 0: RFC 9113 6.5.2.)
      return value > 1 || (client_ && value != 0) ? ErrorCode::protocol_error : 0;
    case SettingId::enable_connect_protocol:
      // RFC 8441 3: 0 or 1, and a 1 once sent may not be taken back.
      if (value > 1 || (peer_connect_protocol_ && value == 0)) return ErrorCode::protocol_error;
      peer_connect_protocol_ = value == 1;
      return 0;
    case SettingId::max_concurrent_streams:
      peer_max_concurrent_ = value;  // (the client opens no more; the server opens none)
      return 0;
    case SettingId::initial_window_size: {
      if (value > kMaxWindow) return ErrorCode::flow_control_error;
      const std::int64_t delta = std::int64_t{value} - peer_initial_window_;
      for (const auto& s : pool_) {
        if (s->id == 0) continue;
        if (s->send_window + delta > kMaxWindow) return ErrorCode::flow_control_error;
        s->send_window += delta;
      }
      peer_initial_window_ = value;
      return 0;
    }
    case SettingId::max_frame_size:
      if (value < 16384 || value > 16777215) return ErrorCode::protocol_error;
      peer_max_frame_size_ = value;
      return 0;
    default: return 0;  // MAX_HEADER_LIST_SIZE (advisory, RFC 9113 6.5.2), unknown ones
  }
}

int Session::on_ping(const std::uint8_t* p) {
  std::memcpy(&frame_.ping_data, p, 8);
  if ((frame_.flags & FrameFlag::ack) == 0) {
    Item& ack = queue(FrameType::ping, FrameFlag::ack, 0);
    ack.ack = true;
    ack.length = 8;
    store(p, 8);
    ++acks_queued_;
  }
  return hooks_.on_frame_recv(frame_);
}

int Session::on_rst_stream(const std::uint8_t* p) {
  const std::int32_t id = frame_.stream_id;
  frame_.error_code = load_u32(p);
  Stream* s = find(id);
  if (s == nullptr && idle(id)) {
    return connection_error(ErrorCode::protocol_error, "RST_STREAM on an idle stream");
  }
  if (s != nullptr) frame_.user_data = s->user_data;
  if (const int rv = hooks_.on_frame_recv(frame_); rv != 0) return rv;
  if (Stream* again = find(id)) close(*again, frame_.error_code, StreamFate::reset_by_peer);
  return 0;
}

int Session::on_window_update(const std::uint8_t* p) {
  const std::int32_t id = frame_.stream_id;
  const std::int64_t increment = load_u32(p) & 0x7fffffffu;
  frame_.window_increment = static_cast<std::int32_t>(increment);
  if (id == 0) {
    if (increment == 0) return connection_error(ErrorCode::protocol_error, "WINDOW_UPDATE of 0");
    if (conn_send_window_ + increment > kMaxWindow) {
      return connection_error(ErrorCode::flow_control_error, "connection window past 2^31-1");
    }
    conn_send_window_ += increment;
    return hooks_.on_frame_recv(frame_);
  }
  Stream* s = find(id);
  if (s == nullptr) {
    if (idle(id)) return connection_error(ErrorCode::protocol_error, "WINDOW_UPDATE on an idle stream");
    return hooks_.on_frame_recv(frame_);  // a closed stream: ignored (and counted by the budget)
  }
  // (A stream error by RFC 9113 6.9; a connection error here, as for DATA after END_STREAM.)
  if (increment == 0) return connection_error(ErrorCode::protocol_error, "WINDOW_UPDATE of 0");
  if (s->send_window + increment > kMaxWindow) return stream_error(id, ErrorCode::flow_control_error, "stream window");
  s->send_window += increment;
  return hooks_.on_frame_recv(frame_);
}

int Session::on_goaway(const std::uint8_t* p, std::size_t) {
  goaway_received_ = true;
  frame_.last_stream_id = static_cast<std::int32_t>(load_u32(p) & 0x7fffffffu);
  frame_.error_code = load_u32(p + 4);
  if (const int rv = hooks_.on_frame_recv(frame_); rv != 0) return rv;
  if (client_) refuse_after_goaway(frame_.last_stream_id);
  return 0;
}

// Client: the streams above the GOAWAY's last id were not processed (RFC 9113 6.8): they close with
// REFUSED_STREAM, and the requests still waiting to open with them.
void Session::refuse_after_goaway(std::int32_t last_stream_id) {
  std::vector<std::int32_t> ids;
  for (const auto& s : pool_) {
    if (s->id > last_stream_id) ids.push_back(s->id);
  }
  std::sort(ids.begin(), ids.end());
  for (const std::int32_t id : ids) {
    if (Stream* s = find(id)) close(*s, ErrorCode::refused_stream, StreamFate::reset_by_us);
  }
  while (!waiting_.empty()) {
    const std::int32_t id = waiting_.front().id;
    waiting_.pop_front();
    hooks_.on_stream_close(id, ErrorCode::refused_stream);
  }
}

int Session::on_closed_stream(std::int32_t id) {
  const std::optional<StreamFate> fate = recent_.fate(id);
  if (!fate) return 0;  // too old to know how it ended: ignored
  switch (*fate) {
    case StreamFate::reset_by_peer:
      recent_.ended(id, StreamFate::reset_by_us);  // one STREAM_CLOSED per stream; the rest are ignored
      return stream_error(id, ErrorCode::stream_closed, "a frame after the client's RST_STREAM");
    case StreamFate::ended: return connection_error(ErrorCode::stream_closed, "a frame on a stream closed both ways");
    case StreamFate::never_opened:
      return connection_error(ErrorCode::protocol_error, "a stream id below one already used");
    case StreamFate::open:
    case StreamFate::reset_by_us:
      break;
  }
  return 0;  // we reset it: the client may have sent this before our RST_STREAM reached it
}

int Session::connection_error(std::uint32_t code, const char* what) {
  const int rv = hooks_.on_invalid_frame_recv(frame_, what);
  terminate_session(code);
  return rv == Result::end_session ? rv : 0;
}

int Session::stream_error(std::int32_t id, std::uint32_t code, const char* what) {
  submit_rst_stream(id, code);
  const int rv = hooks_.on_invalid_frame_recv(frame_, what);
  return rv == Result::end_session ? rv : 0;
}

// ---- output -------------------------------------------------------------------------------------

void Session::write_frame_header(ByteBuf& out, std::uint32_t length, std::uint8_t type, std::uint8_t flags,
                                 std::int32_t id) {
  std::uint8_t* w = out.write_ptr();
  w[0] = static_cast<std::uint8_t>(length >> 16);
  w[1] = static_cast<std::uint8_t>(length >> 8);
  w[2] = static_cast<std::uint8_t>(length);
  w[3] = type;
  w[4] = flags;
  const auto u = static_cast<std::uint32_t>(id);
  w[5] = static_cast<std::uint8_t>(u >> 24);
  w[6] = static_cast<std::uint8_t>(u >> 16);
  w[7] = static_cast<std::uint8_t>(u >> 8);
  w[8] = static_cast<std::uint8_t>(u);
  out.advance_writer(9);
}

// (The server's loop is the one it always was; the client's also opens waiting requests as
// streams close.)
template <bool kClient>
[[gnu::always_inline]] inline int Session::send_frames() {
  for (;;) {
    bool progress = false;
    if constexpr (kClient) {
      if (!waiting_.empty()) open_waiting();
    }
    while (items_head_ < items_.size()) {
      if (!hooks_.writable()) return 0;
      const Item item = items_[items_head_++];
      if (const int rv = send_item(item); rv != 0) return rv;
      progress = true;
      if (term_sent_) {
        items_.clear();
        items_head_ = 0;
        return 0;
      }
    }
    if (items_head_ > 0) {
      items_.clear();
      items_head_ = 0;
      store_.clear();
    }
    // DATA, one frame per stream in turn; a stream served goes to the back of the list.
    for (std::size_t turns = data_count_; turns > 0 && data_head_ != nullptr && conn_send_window_ > 0; --turns) {
      if (!hooks_.writable()) return 0;
      Stream* const s = data_head_;
      const std::int32_t id = s->id;
      unlink_data(*s);
      if (s->send_window > 0) {
        if (const int rv = send_data_frame(*s); rv < 0) return rv;
        progress = true;
      }
      // (A stream closed by its last frame was reset: its id is 0 now.)
      if (s->id == id && s->has_source && !s->deferred && !s->resetting) link_data(*s);
      if (items_head_ < items_.size()) break;  // trailers (or a reset) queued: they go next
    }
    if (!progress) return 0;
  }
}

int Session::send() {
  if (term_sent_) return 0;
  if (client_) {
    if (preface_pending_) {  // the connection preface's magic, before the client's SETTINGS
      preface_pending_ = false;
      ByteBuf& out = hooks_.output(kPreface.size());
      out.write_bytes(kPreface.data(), kPreface.size());
      hooks_.wrote();
    }
    return send_frames<true>();
  }
  return send_frames<false>();
}

int Session::send_data_frame(Stream& s) {
  const std::int64_t window = std::min<std::int64_t>(conn_send_window_, s.send_window);
  const std::size_t max = static_cast<std::size_t>(std::min<std::int64_t>(window, peer_max_frame_size_));
  std::uint32_t flags = 0;
  const ssize_t n = s.source.read(s.id, max, &flags, s.source.ptr);
  if (n == Result::deferred || (n == 0 && (flags & DataFlag::eof) == 0)) {
    s.deferred = true;
    return 0;
  }
  if (n == Result::reset_stream) {
    s.has_source = false;
    submit_rst_stream(s.id, ErrorCode::internal_error);
    return 0;
  }
  if (n < 0) return static_cast<int>(n);
  const bool eof = (flags & DataFlag::eof) != 0;
  const bool end_stream = eof && (flags & DataFlag::no_end_stream) == 0;
  FrameInfo info;
  info.type = FrameType::data;
  info.flags = end_stream ? FrameFlag::end_stream : 0;
  info.stream_id = s.id;
  info.length = static_cast<std::uint32_t>(n);
  std::uint8_t header[9];
  header[0] = static_cast<std::uint8_t>(n >> 16);
  header[1] = static_cast<std::uint8_t>(n >> 8);
  header[2] = static_cast<std::uint8_t>(n);
  header[3] = FrameType::data;
  header[4] = info.flags;
  const auto u = static_cast<std::uint32_t>(s.id);
  header[5] = static_cast<std::uint8_t>(u >> 24);
  header[6] = static_cast<std::uint8_t>(u >> 16);
  header[7] = static_cast<std::uint8_t>(u >> 8);
  header[8] = static_cast<std::uint8_t>(u);
  conn_send_window_ -= n;
  s.send_window -= n;
  if (eof) s.has_source = false;
  if (const int rv = hooks_.send_data(info, header, static_cast<std::size_t>(n), s.source.ptr); rv != 0) return rv;
  if (end_stream) sent_end_stream(s);
  return 0;
}

// The response is whole. A request still arriving is not wanted any more: RST_STREAM(NO_ERROR) asks
// the client to stop sending it (RFC 9113 8.1; gRPC relies on it after early trailers). The client's
// request being whole, its response goes on.
void Session::sent_end_stream(Stream& s) {
  s.end_sent = true;
  if (s.end_received) {
    close(s, ErrorCode::no_error, StreamFate::ended);
  } else if (!client_ && !s.tunnel) {
    submit_rst_stream(s.id, s.end_reset_code);
  }
}

void Session::reset_after_end(std::int32_t id, std::uint32_t error_code) noexcept {
  if (Stream* s = find(id)) s->end_reset_code = error_code;
}

void Session::manual_window_for(std::int32_t id) noexcept {
  if (Stream* s = find(id)) s->manual = true;
}

void Session::keep_open_after_end(std::int32_t id) noexcept {
  if (Stream* s = find(id)) s->tunnel = true;
}

int Session::send_item(const Item& item) {
  const std::uint8_t* payload = store_.read_ptr() + item.at;
  FrameInfo info;
  info.type = item.type;
  info.flags = item.flags;
  info.stream_id = item.stream_id;
  info.length = item.length;
  info.error_code = item.error_code;
  if (item.ack) --acks_queued_;
  switch (item.type) {
    case FrameType::headers: {
      // Header blocks larger than the client's frame size continue in CONTINUATION frames.
      std::size_t left = item.length;
      std::uint8_t type = FrameType::headers;
      std::uint8_t flags = item.flags;
      do {
        const std::size_t piece = std::min<std::size_t>(left, peer_max_frame_size_);
        left -= piece;
        ByteBuf& out = hooks_.output(9 + piece);
        write_frame_header(out, static_cast<std::uint32_t>(piece), type,
                           static_cast<std::uint8_t>(flags | (left == 0 ? FrameFlag::end_headers : 0)), item.stream_id);
        out.write_bytes(payload, piece);
        payload += piece;
        type = FrameType::continuation;
        flags = 0;
      } while (left > 0);
      hooks_.wrote();
      if (client_) hooks_.on_frame_send(info);  // a request's head left: its stream is open on the wire
      if ((item.flags & FrameFlag::end_stream) != 0) {
        if (Stream* s = find(item.stream_id)) sent_end_stream(*s);
      }
      return 0;
    }
    case FrameType::rst_stream: {
      Stream* s = find(item.stream_id);
      if (item.opened && s == nullptr) return 0;  // closed meanwhile (by the client's own reset)
      ByteBuf& out = hooks_.output(13);
      write_frame_header(out, 4, FrameType::rst_stream, 0, item.stream_id);
      out.write_bytes(payload, 4);
      hooks_.wrote();
      hooks_.on_frame_send(info);
      if (Stream* again = find(item.stream_id)) close(*again, item.error_code, StreamFate::reset_by_us);
      return 0;
    }
    case FrameType::goaway:
      goaway_sent_ = true;
      if (item.terminate) term_sent_ = true;
      [[fallthrough]];
    default: {
      ByteBuf& out = hooks_.output(9 + item.length);
      write_frame_header(out, item.length, item.type, item.flags, item.stream_id);
      if (item.length > 0) out.write_bytes(payload, item.length);
      hooks_.wrote();
      hooks_.on_frame_send(info);
      return 0;
    }
  }
}

}  // namespace weft::http2::detail
