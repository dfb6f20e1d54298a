#include "util/io.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <utility>

#include "util/fd.hpp"

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

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) ::munmap(data_, size_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(data_, size_);
}

Expected<MappedFile> MappedFile::open(const std::string& path, std::size_t max_bytes, bool populate) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  if (!fd) return sys_error("open", path);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return sys_error("stat", path);
  if (!S_ISREG(st.st_mode)) return Error{"open: not a regular file", path, EINVAL};
  if (static_cast<std::uint64_t>(st.st_size) > max_bytes)
    return Error{"map: larger than expected", path, EFBIG};
  MappedFile out;
  if (st.st_size == 0) return out;
  // Populated now (unless told not): one walk of the page cache, not a fault for each page read.
  void* data = ::mmap(nullptr, static_cast<std::size_t>(st.st_size), PROT_READ,
                      MAP_PRIVATE | (populate ? MAP_POPULATE : 0), fd.get(), 0);
  if (data == MAP_FAILED) return sys_error("map", path);
  out.data_ = data;
  out.size_ = static_cast<std::size_t>(st.st_size);
  return out;
}

}  // namespace chock
