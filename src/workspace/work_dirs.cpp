// A work directory of its own for each mount made beside the session's own
// (a task's, a call's while others run). overlayfs empties and remakes
// <workdir>/work at every mount; the session's own mounts are made one at a
// time (the mounts lock), but a mount beside them sharing their work
// directory would remake it under theirs: the task's next copy-up found it
// gone. One made beside stays until the session goes.
#include <dirent.h>
#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "chock/workspace.hpp"
#include "util/fs.hpp"
#include "workspace/build.hpp"

namespace chock::workspace {

namespace {

constexpr std::string_view kSpentPrefix = "spent.";

// The work directories a call's mounts are given: the session's, each
// carried directory's, and its admin dir's.
std::vector<std::string> work_roots(const Session& s) {
  std::vector<std::string> roots{s.work()};
  // An overlay session's carried directories are named only: no layers of their own.
  if (s.kind == Kind::git)
    for (std::size_t i = 0; i < s.carry.size(); ++i) roots.push_back(build::carry_work(s, i));
  if (s.index_below) roots.push_back(build::admin_work(s));
  return roots;
}

}  // namespace

void set_aside_work(const Session& s, const std::vector<std::string>& held_work) {
  for (const auto& root : work_roots(s)) {
    if (std::find(held_work.begin(), held_work.end(), root) != held_work.end()) continue;
    std::uint64_t nonce = 0;
    if (::getrandom(&nonce, sizeof nonce, 0) != static_cast<ssize_t>(sizeof nonce)) return;
    char name[32];
    std::snprintf(name, sizeof name, "%s%016llx", kSpentPrefix.data(),
                  static_cast<unsigned long long>(nonce));
    // In the same directory: no `..` to rewrite, so its mode 0 is no matter.
    (void)::renameat2(AT_FDCWD, (root + "/work").c_str(), AT_FDCWD, (root + "/" + name).c_str(),
                      RENAME_NOREPLACE);
  }
}

void remove_set_aside_work(const Session& s) {
  for (const auto& root : work_roots(s)) {
    DIR* d = ::opendir(root.c_str());
    if (d == nullptr) continue;
    std::vector<std::string> spent;
    while (const dirent* e = ::readdir(d))
      if (std::string_view(e->d_name).starts_with(kSpentPrefix)) spent.push_back(root + "/" + e->d_name);
    ::closedir(d);
    // Empty, as a clean unmount leaves it (its mode 0 is no matter to rmdir).
    for (const auto& dir : spent)
      if (::rmdir(dir.c_str()) != 0 && errno == ENOTEMPTY) (void)fs::remove_tree(dir);
  }
}

Expected<std::string> build::own_work_dir(const std::string& root) {
  std::uint64_t nonce = 0;
  if (::getrandom(&nonce, sizeof nonce, 0) != static_cast<ssize_t>(sizeof nonce))
    return sys_error("getrandom, for a work directory's name");
  char name[24];
  std::snprintf(name, sizeof name, "t-%016llx", static_cast<unsigned long long>(nonce));
  std::string dir = root + "/" + name;
  if (::mkdir(dir.c_str(), 0700) != 0) return sys_error("create the overlay's work directory", dir);
  return dir;
}

Expected<void> work_beside(Overlay& overlay) {
  auto own = build::own_work_dir(overlay.work);
  if (!own) return std::move(own).error();
  overlay.work = std::move(*own);
  // Beside the session's own mount: never the one its holder keeps.
  overlay.hold_dir.clear();
  overlay.hold_lock.clear();
  overlay.hold_idle = std::chrono::milliseconds(0);
  overlay.hold_watch_lower = false;
  overlay.held = -1;
  return {};
}

}  // namespace chock::workspace
