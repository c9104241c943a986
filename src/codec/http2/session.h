#pragma once
// weft's own HTTP/2 connection state (RFC 9113), for both sides (Role): the frame parser, the
// stream state machine, flow control both ways, SETTINGS, PING, GOAWAY and RST_STREAM, and HPACK
// (hpack.h). It replaced libnghttp2, which spent two thirds of the server codec's instructions per
// request; one engine with one set of checks and limits serves the server and the client codec. A codec feeds it bytes
// (receive), is called back per frame and field (SessionHooks), queues heads, bodies and control frames (submit_*) and
// lets it write them (send); bodies come from data sources the session asks as the windows allow. Its vocabulary (frame
// types, flags, error codes, results, header fields, data sources) is frame.h's.
//
// What it checks (each violation answered as RFC 9113 says: a stream error resets the stream, a
// connection error ends the session with GOAWAY): the client preface (server) or the server's
// first SETTINGS (client), frame sizes, stream ids and states, CONTINUATION sequences, HPACK
// (COMPRESSION_ERROR), the header fields received (lowercase names, pseudo-headers,
// connection-specific fields, content-length against the DATA received): a request's (server), a
// response's interim and final heads and trailers (client, RFC 9113 8.1), flow-control windows,
// SETTINGS values. Floods it bounds itself, on both sides: CONTINUATION frames per header block,
// SETTINGS entries per frame, acknowledgements and resets queued for a peer that does not read. The
// glitch budget and the header list bound are the codec's (its callbacks see every frame and field).
//
// The server role is the hot path: what the client role adds to it is a predictable branch on the
// role where the two differ (a HEADERS frame received, a field checked, a GOAWAY, send()).
//
// One per connection; loop thread only. Nothing is allocated per request in steady state: streams
// and their map are reused, frames are written straight into the codec's output buffer.

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "frame.h"
#include "hpack.h"
#include "recent_streams.h"
#include "weft/buffer/byte_buf.h"
#include "weft/buffer/byte_buf_allocator.h"

namespace weft::http2::detail {

// Which side of the connection a Session plays.
enum class Role : std::uint8_t { server, client };

// What a header block received by the client carries (FrameInfo::head).
enum class HeadKind : std::uint8_t {
  none,      // not a response's block (the server's side; or not known yet: :status comes first)
  interim,   // a 1xx head (any number of them come before the final head)
  response,  // the final head
  trailers,  // after the final head (it ends the stream)
};

// A frame as the callbacks see it.
struct FrameInfo {
  std::uint8_t type = 0;
  std::uint8_t flags = 0;
  std::int32_t stream_id = 0;
  std::uint32_t length = 0;         // the payload's length
  bool request = false;             // HEADERS that open a stream (else trailers or a response)
  HeadKind head = HeadKind::none;   // client: the received HEADERS' kind (set once :status is read)
  std::uint32_t error_code = 0;     // RST_STREAM, GOAWAY
  std::int32_t window_increment = 0;  // WINDOW_UPDATE
  std::int32_t last_stream_id = 0;    // GOAWAY received: the last stream the peer says it processed
  std::uint64_t ping_data = 0;        // PING received: its 8 bytes (as Session::submit_ping took them)
  std::uint32_t padlen = 0;           // DATA sent: padding (always 0: the session never pads)
  void* user_data = nullptr;        // received HEADERS and DATA: the stream's (set_stream_user_data)
};

// What the session calls (the codec). The int-returning hooks return 0, or Result::reset_stream
// (the stream is reset with INTERNAL_ERROR), or Result::end_session (receive / send stop and
// return it).
class SessionHooks {
 public:
  virtual ~SessionHooks() = default;
  virtual int on_begin_headers(std::int32_t stream_id) = 0;
  virtual int on_header(const FrameInfo& frame, std::string_view name, std::string_view value) = 0;
  virtual int on_data_chunk(const FrameInfo& frame, const std::uint8_t* data, std::size_t len) = 0;
  virtual int on_frame_recv(const FrameInfo& frame) = 0;
  virtual int on_invalid_frame_recv(const FrameInfo& frame, const char* what) = 0;
  virtual void on_frame_send(const FrameInfo& frame) = 0;
  virtual void on_stream_close(std::int32_t stream_id, std::uint32_t error_code) = 0;
  // Whether frames may be written now (the channel is writable).
  virtual bool writable() = 0;
  // The buffer frames are written to, with at least n bytes writable.
  virtual ByteBuf& output(std::size_t n) = 0;
  // After a frame was written to output(): the codec moves large output on.
  virtual void wrote() = 0;
  // A DATA frame: the 9-byte header `frame_header`, then `length` payload bytes from `source`.
  virtual int send_data(const FrameInfo& frame, const std::uint8_t* frame_header, std::size_t length,
                        void* source) = 0;
  virtual ByteBufAllocator& allocator() = 0;
};

// A SETTINGS entry (id, value).
struct SettingEntry {
  std::uint16_t id;
  std::uint32_t value;
};

class Session {
 public:
  // manual_window: the connection's and streams' windows are returned by consume_*() (the stream
  // API); otherwise as DATA arrives. role: which side this end plays (the client sends the preface
  // and opens the streams).
  Session(SessionHooks& hooks, bool manual_window, Role role = Role::server);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Queues this side's SETTINGS (the connection preface; the client's goes after its 24-byte magic,
  // which send() writes first). Returns false for a value out of range.
  bool submit_settings(const SettingEntry* entries, std::size_t n);
  // Reads bytes; returns n, or a negative Result (the session is then to be ended:
  // Result::flooded / Result::too_many_continuations for floods, Result::end_session).
  ssize_t receive(const std::uint8_t* data, std::size_t n);
  // Writes what is queued (control frames, header blocks, DATA as the windows allow) while the
  // hooks say writable. 0, or Result::end_session.
  int send();
  bool want_read() const noexcept;
  bool want_write() const noexcept;

  void* stream_user_data(std::int32_t id) const noexcept;
  void set_stream_user_data(std::int32_t id, void* data) noexcept;

  // Client: opens a request on the next odd stream id (1, 3, 5...) and returns that id, or a
  // negative Result (Result::no_new_streams after a GOAWAY either way,
  // Result::stream_ids_exhausted once the ids are used up). HEADERS carry END_STREAM when
  // `body` is null; else DATA follows from it. The id is assigned at once; while the server's
  // SETTINGS_MAX_CONCURRENT_STREAMS streams are open the request waits here (its fields copied) and
  // its HEADERS leave, in order, as streams close. A waiting request reset by submit_rst_stream or
  // dropped by a GOAWAY ends with on_stream_close without reaching the wire.
  std::int32_t submit_request(const HeaderField* nv, std::size_t n, const DataSource* body);
  // Client: the server's SETTINGS_MAX_CONCURRENT_STREAMS (100 until its SETTINGS say).
  std::uint32_t peer_max_concurrent_streams() const noexcept { return peer_max_concurrent_; }
  // Client: whether the server's SETTINGS said SETTINGS_ENABLE_CONNECT_PROTOCOL=1 (RFC 8441 3):
  // extended CONNECT (a :protocol pseudo-header) may be sent.
  bool peer_connect_protocol() const noexcept { return peer_connect_protocol_; }
  // Client: requests that wait for the server's concurrency limit.
  std::size_t waiting_requests() const noexcept { return waiting_.size(); }
  // The connection's receive window, raised to `size` (a WINDOW_UPDATE on stream 0 now); smaller
  // sizes are ignored. The connection's window is returned once half of it is consumed.
  void set_local_window_size(std::int32_t size);
  // Whether the session ended itself (a connection error: GOAWAY queued, nothing more read).
  bool terminated() const noexcept { return terminating_; }

  // A final response's head; DATA follows from `source` unless it is null (then END_STREAM).
  int submit_response(std::int32_t id, const HeaderField* nv, std::size_t n, const DataSource* source);
  // An interim (1xx) head: HEADERS without END_STREAM.
  int submit_headers(std::int32_t id, const HeaderField* nv, std::size_t n);
  // Trailers after the body (from a data source's read, which sets DataFlag::no_end_stream).
  int submit_trailer(std::int32_t id, const HeaderField* nv, std::size_t n);
  int submit_rst_stream(std::int32_t id, std::uint32_t error_code);
  int submit_goaway(std::int32_t last_stream_id, std::uint32_t error_code, std::string_view debug = {});
  // GOAWAY(error_code, debug data) after which nothing is read or written.
  void terminate_session(std::uint32_t error_code, std::string_view debug = {});
  // A PING this side sends (keepalive); its ACK reaches on_frame_recv.
  void submit_ping(std::uint64_t opaque);
  std::int32_t last_proc_stream_id() const noexcept { return last_proc_stream_id_; }
  // A deferred data source has more: it is asked again at the next send().
  int resume_data(std::int32_t id);
  // Server: the stream's request goes on after the response ends (an accepted extended CONNECT,
  // RFC 8441: a tunnel whose sides end on their own), so the response's END_STREAM does not ask the
  // client to stop with RST_STREAM(NO_ERROR) (sent_end_stream).
  void keep_open_after_end(std::int32_t id) noexcept;
  // Server: the RST_STREAM that the response's END_STREAM sends while the request still arrives
  // (sent_end_stream) carries `error_code` rather than NO_ERROR (a request body timed out: CANCEL).
  void reset_after_end(std::int32_t id, std::uint32_t error_code) noexcept;
  // Without manual_window: stream `id`'s DATA (the stream's window and the connection's) is
  // returned by consume_*() as with manual_window, not at once.
  void manual_window_for(std::int32_t id) noexcept;
  // manual_window: bytes the application has consumed.
  void consume_connection(std::size_t n);
  void consume_stream(std::int32_t id, std::size_t n);
  void consume(std::int32_t id, std::size_t n) {
    consume_connection(n);
    consume_stream(id, n);
  }
  // h2c upgrade (RFC 7540 3.2): the client's HTTP2-Settings payload; stream 1 opens half-closed
  // (remote). 0, or Result::invalid_argument.
  int upgrade(const std::uint8_t* settings, std::size_t n, bool head_request);

 private:
  struct Stream;
  struct StreamMap;
  struct Item;
  // A request waiting for the server's concurrency limit: its fields (flags byte, name length,
  // name, value length, value; lengths as 4 bytes) and its body's source.
  struct Waiting {
    std::int32_t id = 0;
    bool head = false;  // :method HEAD (its response's content-length is not checked)
    bool has_body = false;
    DataSource body;
    std::string fields;
  };
  enum class In : std::uint8_t { preface, head, payload, data_padlen, data, skip, ignore_all };

  // input
  ssize_t read_frames(const std::uint8_t* p, std::size_t n);
  int begin_frame();
  int on_payload(const std::uint8_t* p, std::size_t n);
  int end_data_frame();
  int on_headers(const std::uint8_t* p, std::size_t n);
  int on_continuation(const std::uint8_t* p, std::size_t n);
  int on_header_block(const std::uint8_t* block, std::size_t n);
  int on_settings(const std::uint8_t* p, std::size_t n);
  int on_ping(const std::uint8_t* p);
  int on_rst_stream(const std::uint8_t* p);
  int on_window_update(const std::uint8_t* p);
  int on_goaway(const std::uint8_t* p, std::size_t n);
  int apply_peer_setting(std::uint16_t id, std::uint32_t value);
  static int header_field(void* context, std::string_view name, std::string_view value);
  static int response_field(void* context, std::string_view name, std::string_view value);
  int check_field(std::string_view name, std::string_view value);
  // Client role: a HEADERS frame on `id` (a response's head or trailers), and a field of it.
  int on_response_headers(std::int32_t id, const std::uint8_t* p, std::size_t n);
  int check_response_field(Stream& s, std::string_view name, std::string_view value);
  int end_response_block(Stream& s);
  void refuse_after_goaway(std::int32_t last_stream_id);
  int connection_error(std::uint32_t code, const char* what);
  int stream_error(std::int32_t id, std::uint32_t code, const char* what);
  int invalid(std::uint32_t code, const char* what, bool connection);
  int received_data(Stream* s, std::size_t n);
  void returned(std::size_t& consumed, std::int32_t id, std::int32_t window);

  // output
  Item& queue(std::uint8_t type, std::uint8_t flags, std::int32_t id);
  void store(const void* p, std::size_t n);
  void store_u32(std::uint32_t v);
  int encode_block(const HeaderField* nv, std::size_t n);
  int queue_headers(std::int32_t id, const HeaderField* nv, std::size_t n, std::uint8_t flags);
  template <bool kClient>
  int send_frames();
  int send_item(const Item& item);
  // Client: opens requests that waited while the server's concurrency limit allows.
  void open_waiting();
  void open_request(std::int32_t id, const HeaderField* nv, std::size_t n, const DataSource* body, bool head);
  int send_data_frame(Stream& s);
  void write_frame_header(ByteBuf& out, std::uint32_t length, std::uint8_t type, std::uint8_t flags,
                          std::int32_t id);
  void sent_end_stream(Stream& s);

  // streams
  Stream* find(std::int32_t id) const noexcept;
  // A stream not found is idle (never opened) when the client has not used its id yet, or when the
  // id is even: the server opens no streams (no push). Otherwise it is closed. (Both roles: the
  // client's last_recv_stream_id_ is the last id it opened itself.)
  bool idle(std::int32_t id) const noexcept { return (id & 1) == 0 || id > last_recv_stream_id_; }
  Stream* open(std::int32_t id);
  void close(Stream& s, std::uint32_t error_code, StreamFate fate);
  // A frame on a stream neither open nor idle: 0 to go on (ignored or reset), or a connection error.
  int on_closed_stream(std::int32_t id);
  void unlink_data(Stream& s) noexcept;
  void link_data(Stream& s) noexcept;

  SessionHooks& hooks_;
  const bool manual_window_;
  const bool client_;             // Role::client
  bool preface_pending_ = false;  // client: the 24-byte magic is still to be written
  In in_ = In::preface;
  std::uint8_t head_[9];
  std::size_t head_have_ = 0;
  std::size_t preface_have_ = 0;
  FrameInfo frame_;             // the frame being read
  std::size_t payload_left_ = 0;  // of the frame (DATA: its data, without padding)
  std::size_t padding_left_ = 0;
  std::vector<std::uint8_t> frame_buf_;  // a control frame's payload that came in pieces
  std::vector<std::uint8_t> block_;      // a header block that spans CONTINUATION frames
  std::int32_t continuing_ = 0;          // the stream whose header block goes on (CONTINUATION)
  std::uint8_t continuing_flags_ = 0;
  bool continuing_request_ = false;
  std::uint32_t continuations_ = 0;
  bool first_frame_ = true;              // the client's preface must begin with SETTINGS

  // the header block being decoded
  Stream* decoding_ = nullptr;     // null: decoded for HPACK's state only, then dropped
  FrameInfo decoding_frame_;
  bool regular_seen_ = false;
  std::uint8_t pseudo_seen_ = 0;  // bits: method, scheme, path, authority, path "*", OPTIONS, status
  bool connect_ = false;
  // SETTINGS_ENABLE_CONNECT_PROTOCOL=1 was sent (RFC 8441 3): a request may carry :protocol.
  bool local_connect_protocol_ = false;
  int response_status_ = 0;            // client: the block's :status
  const char* field_error_ = nullptr;  // why the block's fields make the request malformed
  std::int32_t decoding_id_ = 0;   // the stream the block is for (0: decoded for HPACK's state only)
  std::uint32_t block_rst_ = 0;    // the reset the stream gets once its block is decoded
  std::int32_t refused_id_ = 0;    // a new stream refused (never opened)
  std::int32_t data_target_ = 0;   // the stream the DATA being read goes to (0: dropped)

  hpack::Decoder decoder_;
  hpack::Encoder encoder_;

  // settings
  std::uint32_t local_initial_window_ = 65535;   // ours, in effect once acknowledged
  std::uint32_t pending_initial_window_ = 65535;  // ours, sent, not yet acknowledged
  std::uint32_t local_max_frame_size_ = 16384;
  std::uint32_t local_max_concurrent_ = 100;
  std::uint32_t local_header_table_size_ = 4096;
  std::uint32_t unacked_settings_ = 0;
  std::uint32_t peer_initial_window_ = 65535;
  std::uint32_t peer_max_frame_size_ = 16384;
  bool peer_connect_protocol_ = false;       // SETTINGS_ENABLE_CONNECT_PROTOCOL=1 received (never withdrawn)
  std::uint32_t peer_max_concurrent_ = 100;  // until the peer's SETTINGS say (client: the limit it opens under)

  // flow control
  std::int64_t conn_send_window_ = 65535;
  std::int64_t conn_recv_window_ = 65535;
  std::int32_t local_conn_window_ = 65535;  // the connection's receive window when all is returned
  std::size_t conn_consumed_ = 0;

  // streams
  std::unique_ptr<StreamMap> map_;
  std::vector<std::unique_ptr<Stream>> pool_;
  std::vector<Stream*> free_;
  std::size_t open_streams_ = 0;
  std::int32_t last_recv_stream_id_ = 0;
  RecentStreams recent_;         // how the client's last streams ended (RFC 9113 5.1)
  std::int32_t last_proc_stream_id_ = 0;
  Stream* data_head_ = nullptr;  // streams whose body waits to be sent (round robin)
  Stream* data_tail_ = nullptr;
  std::size_t data_count_ = 0;
  // client: the next stream id, and requests waiting for the server's concurrency limit
  std::int64_t next_stream_id_ = 1;
  std::deque<Waiting> waiting_;
  std::vector<HeaderField> waiting_nv_;  // a waiting request's fields, rebuilt when it opens

  // output queue: frames in order; their payloads in store_
  std::vector<Item> items_;
  std::size_t items_head_ = 0;
  ByteBuf store_;
  std::uint32_t acks_queued_ = 0;  // SETTINGS/PING acknowledgements and resets not yet written

  // GOAWAY
  bool goaway_queued_ = false;
  bool goaway_sent_ = false;
  bool goaway_received_ = false;
  bool terminating_ = false;    // terminate_session: nothing is read
  bool term_sent_ = false;      // ... and its GOAWAY left: nothing more either way
  std::int32_t goaway_last_id_ = 0x7fffffff;  // streams above it are not processed
};

}  // namespace weft::http2::detail
