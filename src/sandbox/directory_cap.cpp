#include "sandbox/directory_cap.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

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

std::optional<DirectoryCount> read_directory_count(const std::string& record) {
  const int fd = ::open(record.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  char text[96];
  const ssize_t n = ::read(fd, text, sizeof text - 1);
  ::close(fd);
  if (n <= 0) return std::nullopt;
  text[n] = '\0';
  unsigned long long bytes = 0, used = 0;
  long long at = 0;
  int end = 0;
  if (std::sscanf(text, "%llu %llu %lld\n%n", &bytes, &used, &at, &end) != 3 || end != n) return std::nullopt;
  return DirectoryCount{bytes, used, at};
}

void keep_directory_count(const std::string& record, const DirectoryCount& count) {
  char text[96];
  const int n =
      std::snprintf(text, sizeof text, "%llu %llu %lld\n", static_cast<unsigned long long>(count.bytes),
                    static_cast<unsigned long long>(count.fs_used), static_cast<long long>(count.at));
  const std::string tmp = record + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return;
  const bool written = ::write(fd, text, static_cast<std::size_t>(n)) == n;
  ::close(fd);
  if (!written || ::rename(tmp.c_str(), record.c_str()) != 0) ::unlink(tmp.c_str());
}

}  // namespace chock::sandbox
