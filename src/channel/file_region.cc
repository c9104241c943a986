#include "weft/channel/file_region.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace weft {

FileHandle::~FileHandle() { ::close(fd_); }

FileRegion FileRegion::open(const std::string& path, std::uint64_t offset, std::uint64_t length) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw std::system_error(errno, std::generic_category(), "open " + path);
  return FileRegion(std::make_shared<const FileHandle>(fd), offset, length);
}

}  // namespace weft
