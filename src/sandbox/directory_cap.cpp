#include "sandbox/directory_cap.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "util/fd.hpp"

namespace chock::sandbox {

std::uint64_t directory_bytes(const std::string& path) {
  struct stat top {};
  const int root = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (root < 0 || ::fstat(root, &top) != 0) {
    if (root >= 0) ::close(root);
    return 0;
  }
  std::uint64_t total = static_cast<std::uint64_t>(top.st_blocks) * 512;
  std::vector<int> pending{root};  // directories opened, still to read
  while (!pending.empty()) {
    const int fd = pending.back();
    pending.pop_back();
    DIR* dir = ::fdopendir(fd);
    if (dir == nullptr) {
      ::close(fd);
      continue;
    }
    while (dirent* e = ::readdir(dir)) {
      if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
      struct stat st {};
      if (::fstatat(::dirfd(dir), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
      total += static_cast<std::uint64_t>(st.st_blocks) * 512;
      if (!S_ISDIR(st.st_mode) || st.st_dev != top.st_dev) continue;
      const int sub = ::openat(::dirfd(dir), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (sub >= 0) pending.push_back(sub);
    }
    ::closedir(dir);
  }
  return total;
}

namespace {

// One line of fixed width, rewritten in place (a new file renamed over it
// at each call made ext4 free, and here discard, a block each time): the
// three numbers and a check of them, so a line two calls wrote over each
// other reads as no count.
constexpr int kRecordBytes = 4 * 21;

unsigned long long check_of(unsigned long long bytes, unsigned long long used, long long at) {
  return (bytes * 0x9E3779B97F4A7C15ULL) ^ (used * 0xC2B2AE3D27D4EB4FULL) ^
         static_cast<unsigned long long>(at);
}

}  // namespace

std::optional<DirectoryCount> read_directory_count(const std::string& record) {
  const UniqueFd fd(::open(record.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return std::nullopt;
  char text[kRecordBytes + 1];
  const ssize_t n = ::pread(fd.get(), text, kRecordBytes + 1, 0);
  if (n != kRecordBytes) return std::nullopt;
  text[n] = '\0';
  unsigned long long bytes = 0, used = 0, check = 0;
  long long at = 0;
  int end = 0;
  if (std::sscanf(text, "%20llu %20llu %20lld %20llu\n%n", &bytes, &used, &at, &check, &end) != 4 ||
      end != n || check != check_of(bytes, used, at))
    return std::nullopt;
  return DirectoryCount{bytes, used, at};
}

void keep_directory_count(const std::string& record, const DirectoryCount& count) {
  const auto bytes = static_cast<unsigned long long>(count.bytes);
  const auto used = static_cast<unsigned long long>(count.fs_used);
  const auto at = static_cast<long long>(count.at);
  char text[kRecordBytes + 1];
  if (std::snprintf(text, sizeof text, "%20llu %20llu %20lld %20llu\n", bytes, used, at,
                    check_of(bytes, used, at)) != kRecordBytes)
    return;
  const UniqueFd fd(::open(record.c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (fd) (void)!::pwrite(fd.get(), text, kRecordBytes, 0);
}

}  // namespace chock::sandbox
