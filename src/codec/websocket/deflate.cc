#include "weft/codec/websocket/deflate.h"

#include <zlib.h>

#include <algorithm>
#include <cassert>
#include <limits>
#include <new>
#include <stdexcept>
#include <vector>

namespace weft::ws {

namespace {

constexpr std::string_view kName = "permessage-deflate";

char ascii_lower(char c) noexcept { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

bool name_equals(std::string_view a, std::string_view b) noexcept {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (ascii_lower(a[i]) != ascii_lower(b[i])) return false;
  }
  return true;
}

// RFC 7230's tchar.
bool is_tchar(char c) noexcept {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool is_token(std::string_view s) noexcept { return !s.empty() && std::all_of(s.begin(), s.end(), is_tchar); }

struct Param {
  std::string_view name;
  std::optional<std::string> value;
};

struct Offer {
  std::string_view name;
  std::vector<Param> params;
  bool malformed = false;
};

// RFC 6455 section 9.1's extension-list, one element at a time:
//   extension = token *( OWS ";" OWS token [ OWS "=" OWS ( token | quoted-string ) ] )
// An element that breaks the grammar is kept as malformed (declined), up to the next comma outside
// quotes, so that the elements after it are still read.
class OfferReader {
 public:
  explicit OfferReader(std::string_view list) noexcept : s_(list) {}

  // The next element; false at the end.
  bool next(Offer& offer) {
    offer = Offer{};
    for (;;) {
      skip_ows();
      if (at_end()) return false;
      if (s_[i_] != ',') break;
      ++i_;  // an empty element (RFC 7230 7: "1#" allows them)
    }
    offer.name = token();
    if (offer.name.empty()) return malformed(offer);
    for (;;) {
      skip_ows();
      if (at_end() || s_[i_] == ',') return true;
      if (s_[i_] != ';') return malformed(offer);
      ++i_;
      skip_ows();
      Param param;
      param.name = token();
      if (param.name.empty()) return malformed(offer);
      skip_ows();
      if (!at_end() && s_[i_] == '=') {
        ++i_;
        skip_ows();
        if (!at_end() && s_[i_] == '"') {
          std::string value;
          if (!quoted(value) || !is_token(value)) return malformed(offer);  // RFC 6455 9.1: a token once unquoted
          param.value = std::move(value);
        } else {
          const std::string_view value = token();
          if (value.empty()) return malformed(offer);
          param.value = std::string(value);
        }
      }
      offer.params.push_back(std::move(param));
    }
  }

 private:
  bool at_end() const noexcept { return i_ >= s_.size(); }
  void skip_ows() noexcept {
    while (!at_end() && (s_[i_] == ' ' || s_[i_] == '\t')) ++i_;
  }
  std::string_view token() noexcept {
    const std::size_t from = i_;
    while (!at_end() && is_tchar(s_[i_])) ++i_;
    return s_.substr(from, i_ - from);
  }
  // A quoted-string at i_ (on its '"'), unescaped into `out`; false if it does not end.
  bool quoted(std::string& out) {
    ++i_;
    while (!at_end()) {
      const char c = s_[i_++];
      if (c == '"') return true;
      if (c == '\\') {
        if (at_end()) return false;
        out += s_[i_++];
      } else {
        out += c;
      }
    }
    return false;
  }
  // Skips the rest of a malformed element, quotes respected.
  bool malformed(Offer& offer) noexcept {
    offer.malformed = true;
    bool in_quotes = false;
    while (!at_end()) {
      const char c = s_[i_];
      if (in_quotes && c == '\\') {
        i_ += 2;
        continue;
      }
      if (c == '"') in_quotes = !in_quotes;
      if (c == ',' && !in_quotes) break;
      ++i_;
    }
    return true;
  }

  std::string_view s_;
  std::size_t i_ = 0;
};

// A window size parameter's value: 8..15 in decimal without leading zeroes (RFC 7692 7.1.2).
std::optional<int> window_bits(std::string_view v) noexcept {
  if (v.size() == 1 && v[0] >= '8' && v[0] <= '9') return v[0] - '0';
  if (v.size() == 2 && v[0] == '1' && v[1] >= '0' && v[1] <= '5') return 10 + (v[1] - '0');
  return std::nullopt;
}

// The agreement for one permessage-deflate offer, or nullopt to decline it.
std::optional<DeflateAgreement> accept(const Offer& offer, const DeflateOptions& options) {
  if (offer.malformed) return std::nullopt;
  bool server_nct = false, client_nct = false, client_bits_named = false;
  std::optional<int> server_bits, client_bits;
  bool seen[4] = {};
  for (const Param& p : offer.params) {
    int which = -1;
    if (name_equals(p.name, "server_no_context_takeover")) which = 0;
    if (name_equals(p.name, "client_no_context_takeover")) which = 1;
    if (name_equals(p.name, "server_max_window_bits")) which = 2;
    if (name_equals(p.name, "client_max_window_bits")) which = 3;
    if (which < 0 || seen[which]) return std::nullopt;  // unknown or repeated (RFC 7692 5.1)
    seen[which] = true;
    switch (which) {
      case 0:
      case 1:
        if (p.value) return std::nullopt;  // these have no value
        (which == 0 ? server_nct : client_nct) = true;
        break;
      case 2:
        if (!p.value || !(server_bits = window_bits(*p.value))) return std::nullopt;
        break;
      default:
        client_bits_named = true;
        if (p.value && !(client_bits = window_bits(*p.value))) return std::nullopt;
        break;
    }
  }
  DeflateAgreement a;
  DeflateParameters& params = a.parameters;
  params.server_no_context_takeover = server_nct || options.server_no_context_takeover;
  params.client_no_context_takeover = client_nct || options.client_no_context_takeover;
  params.server_max_window_bits = std::min(server_bits.value_or(15), options.server_max_window_bits);
  if (!client_bits_named && options.client_max_window_bits < 15) return std::nullopt;  // 7.1.2.2: not ours to set
  params.client_max_window_bits = std::min(client_bits.value_or(15), options.client_max_window_bits);
  a.response = kName;
  if (params.server_no_context_takeover) a.response += "; server_no_context_takeover";
  if (params.client_no_context_takeover) a.response += "; client_no_context_takeover";
  // An offer's server_max_window_bits is accepted by answering it (7.1.2.1); below 15 the server says so.
  if (server_bits || params.server_max_window_bits < 15) {
    a.response += "; server_max_window_bits=" + std::to_string(params.server_max_window_bits);
  }
  // Only where the client named it (7.1.2.2).
  if (client_bits_named && (client_bits || params.client_max_window_bits < 15)) {
    a.response += "; client_max_window_bits=" + std::to_string(params.client_max_window_bits);
  }
  return a;
}

// The size of the window to ask zlib for: its deflate has no 256-byte window (deflateInit2 refuses
// 8 for raw streams). With 9, zlib never refers further back than 512 - 262 = 250 bytes, so its
// output is still valid for an inflater with a window of 8 bits (as RFC 7692 section 7.1.2.1 allows).
int deflate_bits(int bits) noexcept { return std::max(bits, 9); }

}  // namespace

void DeflateOptions::validate() const {
  auto check = [](bool ok, const char* what) {
    if (!ok) throw std::invalid_argument(std::string("ws::DeflateOptions: ") + what);
  };
  check(server_max_window_bits >= 8 && server_max_window_bits <= 15, "server_max_window_bits must be 8..15");
  check(client_max_window_bits >= 8 && client_max_window_bits <= 15, "client_max_window_bits must be 8..15");
  check(level >= 0 && level <= 9, "level must be 0..9");
  check(memory_level >= 1 && memory_level <= 9, "memory_level must be 1..9");
}

std::optional<DeflateAgreement> negotiate_deflate(const std::vector<std::string_view>& header_values,
                                                  const DeflateOptions& options) {
  if (!options.enabled) return std::nullopt;
  for (std::string_view value : header_values) {
    OfferReader reader(value);
    Offer offer;
    while (reader.next(offer)) {
      if (!name_equals(offer.name, kName)) continue;  // another extension: not one weft speaks
      if (auto agreed = accept(offer, options)) return agreed;
    }
  }
  return std::nullopt;
}

std::string deflate_offer(const DeflateOptions& options) {
  std::string offer(kName);
  if (options.server_no_context_takeover) offer += "; server_no_context_takeover";
  if (options.client_no_context_takeover) offer += "; client_no_context_takeover";
  if (options.server_max_window_bits < 15) {
    offer += "; server_max_window_bits=" + std::to_string(options.server_max_window_bits);
  }
  offer += "; client_max_window_bits";
  if (options.client_max_window_bits < 15) offer += "=" + std::to_string(options.client_max_window_bits);
  return offer;
}

std::optional<DeflateParameters> check_deflate_answer(std::string_view value, const DeflateOptions& options,
                                                      std::string& why) {
  OfferReader reader(value);
  Offer answer;
  if (!reader.next(answer)) {
    why = "an empty Sec-WebSocket-Extensions";
    return std::nullopt;
  }
  if (answer.malformed) {
    why = "a malformed Sec-WebSocket-Extensions";
    return std::nullopt;
  }
  if (!name_equals(answer.name, kName)) {
    why = "an extension not offered: " + std::string(answer.name);
    return std::nullopt;
  }
  DeflateParameters agreed;
  bool seen[4] = {};
  for (const Param& p : answer.params) {
    int which = -1;
    if (name_equals(p.name, "server_no_context_takeover")) which = 0;
    if (name_equals(p.name, "client_no_context_takeover")) which = 1;
    if (name_equals(p.name, "server_max_window_bits")) which = 2;
    if (name_equals(p.name, "client_max_window_bits")) which = 3;
    if (which < 0) {
      why = "an unknown permessage-deflate parameter: " + std::string(p.name);
      return std::nullopt;
    }
    if (seen[which]) {
      why = "a repeated permessage-deflate parameter: " + std::string(p.name);
      return std::nullopt;
    }
    seen[which] = true;
    std::optional<int> bits;
    if (which >= 2 && !(p.value && (bits = window_bits(*p.value)))) {
      why = "a malformed " + std::string(p.name);
      return std::nullopt;
    }
    switch (which) {
      case 0:
      case 1:
        if (p.value) {
          why = std::string(p.name) + " with a value";
          return std::nullopt;
        }
        (which == 0 ? agreed.server_no_context_takeover : agreed.client_no_context_takeover) = true;
        break;
      case 2:
        // RFC 7692 7.1.2.1: the server may name its window unasked; never larger than asked.
        if (*bits > options.server_max_window_bits) {
          why = "server_max_window_bits larger than offered";
          return std::nullopt;
        }
        agreed.server_max_window_bits = *bits;
        break;
      default:
        // 7.1.2.2: offered (always, deflate_offer), and never larger than offered.
        if (*bits > options.client_max_window_bits) {
          why = "client_max_window_bits larger than offered";
          return std::nullopt;
        }
        agreed.client_max_window_bits = *bits;
        break;
    }
  }
  if (reader.next(answer)) {
    why = "more than the one extension offered";
    return std::nullopt;
  }
  if (options.server_no_context_takeover && !agreed.server_no_context_takeover) {
    why = "server_no_context_takeover was asked for and not agreed";
    return std::nullopt;
  }
  if (options.server_max_window_bits < 15 && !seen[2]) {
    why = "server_max_window_bits was asked for and not agreed";
    return std::nullopt;
  }
  agreed.client_no_context_takeover = agreed.client_no_context_takeover || options.client_no_context_takeover;
  agreed.client_max_window_bits = std::min(agreed.client_max_window_bits, options.client_max_window_bits);
  return agreed;
}

// ---- a connection's streams

struct PerMessageDeflate::Streams {
  z_stream inflater{};
  z_stream deflater{};
  bool inflater_ready = false;
  bool deflater_ready = false;

  Streams() = default;
  Streams(const Streams&) = delete;
  Streams& operator=(const Streams&) = delete;
  ~Streams() {
    if (inflater_ready) inflateEnd(&inflater);
    if (deflater_ready) deflateEnd(&deflater);
  }
};

PerMessageDeflate::Config PerMessageDeflate::server_config(const DeflateParameters& agreed,
                                                           const DeflateOptions& options) noexcept {
  Config c;
  c.inflate_window_bits = agreed.client_max_window_bits;
  c.inflate_no_context_takeover = agreed.client_no_context_takeover;
  c.deflate_window_bits = agreed.server_max_window_bits;
  c.deflate_no_context_takeover = agreed.server_no_context_takeover;
  c.level = options.level;
  c.memory_level = options.memory_level;
  c.min_message_size = options.min_message_size;
  return c;
}

PerMessageDeflate::Config PerMessageDeflate::client_config(const DeflateParameters& agreed,
                                                           const DeflateOptions& options) noexcept {
  Config c;
  c.inflate_window_bits = agreed.server_max_window_bits;
  c.inflate_no_context_takeover = agreed.server_no_context_takeover;
  c.deflate_window_bits = agreed.client_max_window_bits;
  c.deflate_no_context_takeover = agreed.client_no_context_takeover;
  c.level = options.level;
  c.memory_level = options.memory_level;
  c.min_message_size = options.min_message_size;
  return c;
}

PerMessageDeflate::PerMessageDeflate(Config config) noexcept : config_(config) {}
PerMessageDeflate::~PerMessageDeflate() = default;
PerMessageDeflate::PerMessageDeflate(PerMessageDeflate&&) noexcept = default;
PerMessageDeflate& PerMessageDeflate::operator=(PerMessageDeflate&&) noexcept = default;

bool PerMessageDeflate::has_inflater() const noexcept { return streams_ && streams_->inflater_ready; }
bool PerMessageDeflate::has_deflater() const noexcept { return streams_ && streams_->deflater_ready; }

void PerMessageDeflate::begin_message() {
  stream_ended_ = false;
  if (config_.inflate_no_context_takeover && has_inflater()) inflateReset(&streams_->inflater);
}

PerMessageDeflate::InflateStatus PerMessageDeflate::inflate(std::string_view compressed, ByteBuf& out,
                                                            std::size_t max_size, ByteBufAllocator& allocator) {
  return run_inflate(reinterpret_cast<const std::uint8_t*>(compressed.data()), compressed.size(), out, max_size,
                     allocator);
}

PerMessageDeflate::InflateStatus PerMessageDeflate::end_message(ByteBuf& out, std::size_t max_size,
                                                                ByteBufAllocator& allocator) {
  static constexpr std::uint8_t kTail[4] = {0x00, 0x00, 0xff, 0xff};
  return run_inflate(kTail, sizeof(kTail), out, max_size, allocator);
}

PerMessageDeflate::InflateStatus PerMessageDeflate::run_inflate(const std::uint8_t* in, std::size_t n, ByteBuf& out,
                                                                std::size_t max_size, ByteBufAllocator& allocator) {
  if (!out.has_storage()) {
    out = allocator.buffer(std::min(max_size, std::max<std::size_t>(n * 4, 256)), std::max<std::size_t>(max_size, 1));
  }
  // A final block came (RFC 7692 7.2.3.4): the rest of the message (the tail) is not data.
  if (stream_ended_) return InflateStatus::ok;
  if (!streams_) streams_ = std::make_unique<Streams>();
  z_stream& s = streams_->inflater;
  if (!streams_->inflater_ready) {
    if (inflateInit2(&s, -config_.inflate_window_bits) != Z_OK) throw std::bad_alloc();
    streams_->inflater_ready = true;
  }
  while (n != 0) {
    // zlib takes at most 4 GiB a call.
    const auto chunk = static_cast<uInt>(std::min<std::size_t>(n, std::numeric_limits<uInt>::max()));
    s.next_in = const_cast<Bytef*>(in);  // zlib's API is not const; it only reads
    s.avail_in = chunk;
    for (;;) {
      std::uint8_t probe = 0;
      const bool at_bound = out.readable_bytes() >= max_size;
      if (!at_bound && !out.is_writable()) {
        const std::size_t have = out.readable_bytes();
        out.ensure_writable(std::min(max_size - have, std::max<std::size_t>(have, 256)));
      }
      // At the bound, one byte of room: a byte inflated there is one too many (and is not kept).
      const std::size_t room = at_bound ? 1
                                        : std::min({out.writable_bytes(), max_size - out.readable_bytes(),
                                                    std::size_t{std::numeric_limits<uInt>::max()}});
      s.next_out = at_bound ? &probe : out.write_ptr();
      s.avail_out = static_cast<uInt>(room);
      const int rc = ::inflate(&s, Z_SYNC_FLUSH);
      const std::size_t produced = room - s.avail_out;
      if (at_bound && produced != 0) return InflateStatus::too_big;
      if (!at_bound) out.advance_writer(produced);
      if (rc == Z_STREAM_END) {
        // The peer ended its stream: the next message starts a new one, on the same window unless
        // the peer takes no context over.
        stream_ended_ = true;
        if (config_.inflate_no_context_takeover) {
          inflateReset(&s);
        } else {
          std::vector<Bytef> window(std::size_t{1} << config_.inflate_window_bits);
          auto size = static_cast<uInt>(window.size());
          if (inflateGetDictionary(&s, window.data(), &size) != Z_OK) return InflateStatus::bad_data;
          inflateReset(&s);
          if (inflateSetDictionary(&s, window.data(), size) != Z_OK) return InflateStatus::bad_data;
        }
        return InflateStatus::ok;
      }
      if (rc != Z_OK && rc != Z_BUF_ERROR) return InflateStatus::bad_data;
      // Output room left over: zlib has taken all the input it could.
      if (s.avail_out != 0) break;
    }
    if (s.avail_in != 0) return InflateStatus::bad_data;  // not taken although there was room
    in += chunk;
    n -= chunk;
  }
  return InflateStatus::ok;
}

ByteBuf PerMessageDeflate::deflate(std::string_view payload, std::size_t headroom, ByteBufAllocator& allocator) {
  const std::size_t n = payload.size();
  if (n == 0 || n > std::numeric_limits<uInt>::max() - 8) return {};
  if (!streams_) streams_ = std::make_unique<Streams>();
  z_stream& s = streams_->deflater;
  if (!streams_->deflater_ready) {
    if (deflateInit2(&s, config_.level, Z_DEFLATED, -deflate_bits(config_.deflate_window_bits), config_.memory_level,
                     Z_DEFAULT_STRATEGY) != Z_OK) {
      throw std::bad_alloc();
    }
    streams_->deflater_ready = true;
  }
  // Room for the message less one byte, plus the tail: what fits, without the tail, is shorter.
  const std::size_t room = n + 3;
  ByteBuf out = allocator.buffer(headroom + room);
  out.advance_writer(headroom);
  out.skip_bytes(headroom);
  s.next_in = const_cast<Bytef*>(reinterpret_cast<const Bytef*>(payload.data()));
  s.avail_in = static_cast<uInt>(n);
  s.next_out = out.write_ptr();
  s.avail_out = static_cast<uInt>(room);
  const int rc = ::deflate(&s, Z_SYNC_FLUSH);
  const std::size_t produced = room - s.avail_out;
  // Z_SYNC_FLUSH ends on an empty stored block, 00 00 ff ff (RFC 7692 7.2.1): left out.
  if (rc != Z_OK || s.avail_in != 0 || s.avail_out == 0 || produced < 4) {
    deflateReset(&s);  // the peer never sees this: nothing may refer to it
    return {};
  }
  assert(out.get_u32(out.reader_index() + produced - 4) == 0x0000ffffU);
  out.advance_writer(produced - 4);
  if (config_.deflate_no_context_takeover) deflateReset(&s);
  return out;
}

}  // namespace weft::ws
