// A work directory for each mount of a session's overlays. overlayfs empties
// and remakes <workdir>/work at every mount (an rmdir and an mkdir on the
// host's disk, in the mount's own time), and a call beside a running task
// would remake the one the task's mount still uses, under it. So each mount
// works in a directory of its own below the overlay's work root, and the
// next call removes the spent ones while its program starts, when nobody
// waits on it.
#include <dirent.h>
#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <string>
#include <vector>

#include "chock/workspace.hpp"
#include "workspace/build.hpp"
#include "workspace/fs.hpp"

namespace chock::workspace {

namespace {

constexpr std::string_view kCallPrefix = "c-";
constexpr std::string_view kTaskPrefix = "t-";
// The name overlayfs gives the directory it makes in a work root that a
// mount was given whole (sessions made before each mount had its own, and
// the idmap probe of a session's first open).
constexpr std::string_view kKernelWork = "work";

std::string parent_of(const std::string& path) {
  return path.substr(0, path.rfind('/'));
}
std::string name_of(const std::string& path) {
  return path.substr(path.rfind('/') + 1);
}

// What a mount leaves in its work directory: overlayfs's own work/ (mode 0,
// empty once the mount is gone). Two calls; a walk of the tree only for
// anything else (what a crash in the middle of a copy-up leaves).
void remove_spent(int root_fd, const std::string& root, const std::string& name) {
  (void)::unlinkat(root_fd, (name + "/work").c_str(), AT_REMOVEDIR);
  if (::unlinkat(root_fd, name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT)
    (void)fs::remove_tree(fs::join(root, name));
}

}  // namespace

Expected<std::string> build::own_work_dir(const std::string& root, Mounter mounter) {
  std::uint64_t nonce = 0;
  if (::getrandom(&nonce, sizeof nonce, 0) != static_cast<ssize_t>(sizeof nonce))
    return sys_error("getrandom, for a work directory's name");
  char name[24];
  std::snprintf(name, sizeof name, "%s%016llx", (mounter == Mounter::call ? kCallPrefix : kTaskPrefix).data(),
                static_cast<unsigned long long>(nonce));
  std::string dir = root + "/" + name;
  if (::mkdir(dir.c_str(), 0700) != 0) return sys_error("create the overlay's work directory", dir);
  return dir;
}

void clear_spent_work(const Config& config) {
  for (const Overlay& overlay : config.overlays) {
    const std::string root = parent_of(overlay.work);
    const std::string own = name_of(overlay.work);
    if (!own.starts_with(kCallPrefix) && !own.starts_with(kTaskPrefix)) continue;  // not one of ours
    DIR* d = ::opendir(root.c_str());
    if (d == nullptr) continue;
    std::vector<std::string> spent;
    while (dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      if (name != own && (name.starts_with(kCallPrefix) || name == kKernelWork)) spent.push_back(name);
    }
    for (const std::string& name : spent) {
      if (name == kKernelWork)
        (void)fs::remove_tree(fs::join(root, name));
      else
        remove_spent(::dirfd(d), root, name);
    }
    ::closedir(d);
  }
}

}  // namespace chock::workspace
