#pragma once
/// @file
/// StaticFiles: serves the files under one directory from request paths, with FileResponse's
/// ranges, validators and content types, and no way out of the directory:
/// - the path is percent-decoded once; a malformed escape, a NUL (raw or %00) or a ".." segment
///   (raw or encoded) answers 404 -- the file is never opened;
/// - empty and "." segments are skipped, so "//etc/passwd" names "etc/passwd" under the root;
/// - the file is opened beneath the root (openat2 RESOLVE_BENEATH where the kernel has it, else the
///   resolved path is checked to be under the root): a symlink that leads out of the root answers
///   404; one that stays inside is followed;
/// - a directory answers its "index.html" when it has one, else 404.
///
///   weft::http::StaticFiles files("/srv/www");
///   router->fallback(files.handler("/"));              // every path no route matches
///   // or, from a coroutine or a route of its own:
///   ctx.write(files.respond(request, "/css/site.css"));
///
/// Thread-safe once made (it keeps the root's descriptor and reads only). Copies share the root's
/// descriptor; it closes when the last copy and the last handler() made from one are gone.

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "weft/channel/context.h"
#include "weft/codec/http1/file_response.h"
#include "weft/codec/http1/http_message.h"

namespace weft::http {

/// Serves a directory's files (see the file's description). Thread-safe once made.
class StaticFiles {
 public:
  /// Serves the files under `root`. Throws std::system_error when it is not a readable directory.
  explicit StaticFiles(const std::string& root, FileResponseOptions options = {});

  /// The answer to `request` for `path` (a request path, still percent-encoded, relative to the
  /// root whether or not it starts with '/'). Thread-safe.
  HttpResponse respond(const HttpRequest& request, std::string_view path) const;
  /// A route function that answers with respond(request, the request's path less `prefix`); a path
  /// that does not start with `prefix` answers 404. It keeps the directory open, so it may outlive
  /// this StaticFiles. Thread-safe.
  std::function<void(Context&, HttpRequest&)> handler(std::string prefix) const;

 private:
  struct Root;  // the directory's descriptor, resolved path and options, shared with the handlers
  std::shared_ptr<const Root> root_;
};

}  // namespace weft::http
