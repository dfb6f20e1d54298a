#include "util/io.hpp"

#include <unistd.h>

#include <cerrno>

namespace chock {

Expected<void> write_all(int fd, std::string_view bytes, const std::string& path) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return sys_error("write", path);
    if (n == 0) return Error{"write", path, EIO};  // never loop on a descriptor that takes nothing
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return {};
}

}  // namespace chock
