#include "sandbox/directory_cap.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
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

}  // namespace chock::sandbox
