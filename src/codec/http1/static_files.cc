#include "weft/codec/http1/static_files.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <system_error>
#include <utility>

#include "weft/codec/http1/query.h"

namespace weft::http {

namespace {

HttpResponse not_found(const HttpRequest& request) {
  return HttpResponse(404).for_request(request).body_view("Not Found");
}

// The decoded path as segments joined by '/', relative; nullopt when it must not be opened: a
// malformed escape, a NUL, or a ".." segment.
std::optional<std::string> confined_relative_path(std::string_view path) {
  auto decoded = percent_decode(path);
  if (!decoded || decoded->find('\0') != std::string::npos) return std::nullopt;
  std::string out;
  std::string_view rest(*decoded);
  while (!rest.empty()) {
    const std::size_t slash = rest.find('/');
    const std::string_view segment = rest.substr(0, slash);
    rest.remove_prefix(slash == std::string_view::npos ? rest.size() : slash + 1);
    if (segment.empty() || segment == ".") continue;
    if (segment == "..") return std::nullopt;
    if (!out.empty()) out.push_back('/');
    out.append(segment);
  }
  return out;
}

}  // namespace

struct StaticFiles::Root {
  Root(int fd, std::string resolved, FileResponseOptions options)
      : fd(fd), resolved(std::move(resolved)), options(std::move(options)) {}
  Root(const Root&) = delete;
  Root& operator=(const Root&) = delete;
  ~Root() { ::close(fd); }

  int open_beneath(const std::string& relative) const;
  HttpResponse respond(const HttpRequest& request, std::string_view path) const;

  const int fd;
  const std::string resolved;  // for the fallback check
  const FileResponseOptions options;
};

StaticFiles::StaticFiles(const std::string& root, FileResponseOptions options) {
  const int fd = ::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throw std::system_error(errno, std::generic_category(), "StaticFiles: open " + root);
  char resolved[PATH_MAX];
  if (::realpath(root.c_str(), resolved) == nullptr) {
    const int error = errno;
    ::close(fd);
    throw std::system_error(error, std::generic_category(), "StaticFiles: realpath " + root);
  }
  root_ = std::make_shared<const Root>(fd, resolved, std::move(options));
}

// Opens `relative` beneath the root; -1 when it is absent or leads out of the root.
int StaticFiles::Root::open_beneath(const std::string& relative) const {
  const char* name = relative.empty() ? "." : relative.c_str();
  open_how how{};
  how.flags = O_RDONLY | O_CLOEXEC | O_NOCTTY;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
  const long opened_beneath = ::syscall(SYS_openat2, fd, name, &how, sizeof how);
  if (opened_beneath >= 0 || errno != ENOSYS) return static_cast<int>(opened_beneath);
  // A kernel before 5.6: resolve, then check that the file is under the root.
  const int opened = ::openat(fd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (opened < 0) return -1;
  char link[64];
  char path_of[PATH_MAX];
  std::snprintf(link, sizeof link, "/proc/self/fd/%d", opened);
  const ssize_t n = ::readlink(link, path_of, sizeof path_of - 1);
  if (n <= 0) {
    ::close(opened);
    return -1;
  }
  const std::string_view path(path_of, static_cast<std::size_t>(n));
  const bool inside =
      path == resolved || (path.starts_with(resolved) && (resolved == "/" || path[resolved.size()] == '/'));
  if (!inside) {
    ::close(opened);
    return -1;
  }
  return opened;
}

HttpResponse StaticFiles::Root::respond(const HttpRequest& request, std::string_view path) const {
  const auto relative = confined_relative_path(path);
  if (!relative) return not_found(request);
  int file = open_beneath(*relative);
  if (file < 0) return not_found(request);
  struct stat st {};
  if (::fstat(file, &st) == 0 && S_ISDIR(st.st_mode)) {
    ::close(file);
    file = open_beneath(relative->empty() ? std::string("index.html") : *relative + "/index.html");
    if (file < 0) return not_found(request);
    return FileResponse::from_descriptor(request, file, "index.html", options);
  }
  return FileResponse::from_descriptor(request, file, *relative, options);
}

HttpResponse StaticFiles::respond(const HttpRequest& request, std::string_view path) const {
  return root_->respond(request, path);
}

std::function<void(Context&, HttpRequest&)> StaticFiles::handler(std::string prefix) const {
  return [root = root_, prefix = std::move(prefix)](Context& ctx, HttpRequest& request) {
    const std::string_view path = request.path();
    if (!path.starts_with(prefix)) {
      ctx.write(not_found(request));
      return;
    }
    ctx.write(root->respond(request, path.substr(prefix.size())));
  };
}

}  // namespace weft::http
