#pragma once
/// @file
/// FileResponse: the answer to a GET or HEAD for one file, with what clients and caches expect of a
/// static file server (RFC 9110):
/// - the body is a FileRegion, sent in bounded chunks as the channel is writable (HTTP/1.1) or as
///   the stream's window allows (HTTP/2), over cleartext and TLS alike;
/// - `ETag` ("mtime-size", as nginx makes it) and `Last-Modified`; `If-None-Match` (weak comparison,
///   `*`) and, without it, `If-Modified-Since` answer 304 with no body;
/// - one byte range (`Range: bytes=a-b`, `a-`, `-n`) answers 206 with `Content-Range`; one that does
///   not overlap the file answers 416 with `Content-Range: bytes */size`; several ranges, another
///   unit or a malformed header get the whole file (200), as RFC 9110 14.2 allows; `If-Range` that
///   does not match the current ETag or date also gets the whole file;
/// - `Content-Type` by the path's extension (content_type_for), `Accept-Ranges: bytes`;
/// - HEAD gets the headers of the GET answer (the codecs drop the body); any other method 405.
///
///   router->get("/report.pdf", [](weft::Context& ctx, weft::http::HttpRequest& request) {
///     ctx.write(weft::http::FileResponse::make(request, "/srv/report.pdf"));
///   });
///
/// The path is trusted: it is opened as given. To serve a directory from request paths, use
/// StaticFiles (static_files.h), which confines them to its root. Thread-safe (pure functions).

#include <string>
#include <string_view>

#include "weft/codec/http1/http_message.h"

namespace weft::http {

/// What FileResponse adds besides the defaults.
struct FileResponseOptions {
  /// Content-Type; empty: by the path's extension (content_type_for).
  std::string content_type;
  /// A Cache-Control value to send (e.g. "max-age=3600"); empty: none.
  std::string cache_control;
};

/// Builds file answers (see the file's description).
class FileResponse {
 public:
  /// The answer to `request` with the file at `path`: 200, 206, 304, 416, 405 (not GET or HEAD), or
  /// 404 when it does not exist, is not a regular file or cannot be read. Thread-safe. Named for
  /// `request` (for_request), so a coroutine may write it later.
  static HttpResponse make(const HttpRequest& request, const std::string& path,
                           const FileResponseOptions& options = {});
  /// The same for a file already open (read-only); takes ownership of `fd` (it is closed in every
  /// case). `name` only chooses the content type. Thread-safe.
  static HttpResponse from_descriptor(const HttpRequest& request, int fd, std::string_view name,
                                      const FileResponseOptions& options = {});
};

/// The media type for `path`'s extension (case-insensitive): text types with "; charset=utf-8";
/// "application/octet-stream" for an unknown one. Thread-safe.
std::string_view content_type_for(std::string_view path) noexcept;

}  // namespace weft::http
