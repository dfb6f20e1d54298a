#include "sandbox/tree_watch.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <string>
#include <vector>

namespace chock::sandbox {

namespace {

// What changes a tree; reads and opens do not.
constexpr std::uint32_t kChanges = IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_CREATE | IN_DELETE |
                                   IN_DELETE_SELF | IN_MOVED_FROM | IN_MOVED_TO | IN_MOVE_SELF | IN_ONLYDIR;

std::int64_t ctime_ns(const struct stat& st) {
  return static_cast<std::int64_t>(st.st_ctim.tv_sec) * 1'000'000'000 + st.st_ctim.tv_nsec;
}

}  // namespace

TreeWatch watch_tree(int root, std::int64_t since_ns, std::size_t max_dirs) {
  using Not = TreeWatch::Not;
  const auto not_watched = [](Not why) { return TreeWatch{UniqueFd(), why}; };
  UniqueFd watch(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
  if (!watch) return not_watched(Not::refused);
  struct stat root_st {};
  if (::fstat(root, &root_st) != 0 || !S_ISDIR(root_st.st_mode)) return not_watched(Not::changed);
  // Paths below the root, not descriptors: a wide tree would run out of them.
  std::vector<std::string> pending{"."};
  std::size_t dirs = 0;
  while (!pending.empty()) {
    const std::string rel = std::move(pending.back());
    pending.pop_back();
    if (++dirs > max_dirs) return not_watched(Not::too_large);
    const int fd = ::openat(root, rel.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return not_watched(Not::changed);  // gone or replaced since its parent was read
    DIR* dir = ::fdopendir(fd);
    if (dir == nullptr) {
      ::close(fd);
      return not_watched(Not::refused);
    }
    // The watch first, then the directory's own time and its entries': a
    // change after this is an event, one before it a ctime at or after since_ns.
    char path[48];
    std::snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    if (::inotify_add_watch(watch.get(), path, kChanges) < 0) {
      ::closedir(dir);
      return not_watched(Not::refused);
    }
    struct stat st {};
    bool unchanged = ::fstat(fd, &st) == 0 && st.st_dev == root_st.st_dev && ctime_ns(st) < since_ns;
    while (unchanged) {
      errno = 0;
      const dirent* e = ::readdir(dir);
      if (e == nullptr) {
        unchanged = errno == 0;
        break;
      }
      const std::string name = e->d_name;
      if (name == "." || name == "..") continue;
      if (::fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || ctime_ns(st) >= since_ns) {
        unchanged = false;
        break;
      }
      // Another file system below: overlayfs shows the directory it covers, empty.
      if (S_ISDIR(st.st_mode) && st.st_dev == root_st.st_dev)
        pending.push_back(std::string(rel).append("/").append(name));
    }
    ::closedir(dir);
    if (!unchanged) return not_watched(Not::changed);
  }
  return TreeWatch{std::move(watch), Not::refused};
}

}  // namespace chock::sandbox
