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

// Into the string itself: a 64 KiB buffer on the stack cost sixteen page
// faults (the stack probe touches each of its pages), 1 to 10 us each on the
// project's guests, for the few hundred bytes most files here hold.
Expected<std::string> read_all(int fd, const std::string& path, std::size_t max_bytes) {
  std::string out;
  std::size_t used = 0;
  for (;;) {
    if (used == out.size()) out.resize(out.empty() ? 4096 : out.size() * 2);
    const ssize_t n = ::read(fd, out.data() + used, out.size() - used);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return sys_error("read", path);
    if (n == 0) break;
    used += static_cast<std::size_t>(n);
    if (used > max_bytes) return Error{"read: larger than expected", path, EFBIG};
  }
  out.resize(used);
  return out;
}

}  // namespace chock
