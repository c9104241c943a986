#pragma once
// nghttp2's allocator for the server codec: its small, short-lived objects (stream state, frame
// queue items, header copies, HPACK buffers) come from per-thread free lists instead of malloc.

#include <nghttp2/nghttp2.h>

namespace weft::http2::detail {

// The allocator to pass to nghttp2_session_server_new3: blocks up to 512 bytes are kept on free
// lists of the calling thread (at most 1024 per size, the rest go back to malloc); larger ones are
// malloc's. A block may be freed on another thread than the one that made it (it joins that
// thread's list). Thread-safe (each thread has its own lists).
nghttp2_mem* session_memory() noexcept;

}  // namespace weft::http2::detail
