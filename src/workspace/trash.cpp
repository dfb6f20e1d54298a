// Removal in constant time: a removed session's directory is renamed into
// <data dir>/trash/ (one rename, whatever its size) and deleted after, by a
// sweeper the person does not wait for. Only what the rules for unapplied
// work already let go reaches the trash, so nothing there is work.
#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/random.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <string>
#include <vector>

#include "sandbox/overlay_holder.hpp"
#include "util/fd.hpp"
#include "util/fs.hpp"
#include "workspace/store.hpp"

namespace chock::workspace {

namespace {

constexpr const char* kSweepLock = ".sweep.lock";
// A sweeper that finds more arriving while it works goes round again, a bounded number of times.
constexpr int kMaxPasses = 64;

// <data dir>/trash; made only by a removal, never by the sweeper (which may
// come after the whole data directory was deleted, and must not bring it back).
Expected<std::string> trash_dir(bool make) {
  auto made_dir = store::data_subdir("trash", 0700, make);
  if (!made_dir || !make) return made_dir;
  const std::string& dir = *made_dir;
  const std::string lock = dir + "/" + kSweepLock;
  UniqueFd made(::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!made) return sys_error("create", lock);
  return dir;
}

// What is in the trash now, but its lock.
std::vector<std::string> trash_entries(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name != "." && name != ".." && name != kSweepLock) out.push_back(name);
  }
  ::closedir(d);
  return out;
}

}  // namespace

namespace store {

Expected<void> discard(const std::string& dir) {
  auto trash = trash_dir(true);
  if (!trash) return std::move(trash).error();
  std::uint64_t nonce = 0;
  if (::getrandom(&nonce, sizeof nonce, 0) != static_cast<ssize_t>(sizeof nonce))
    nonce = static_cast<std::uint64_t>(::getpid());
  char suffix[24];
  std::snprintf(suffix, sizeof suffix, ".%016llx", static_cast<unsigned long long>(nonce));
  const std::string to = *trash + "/" + dir.substr(dir.rfind('/') + 1) + suffix;
  // A held overlay (overlay_holder.hpp) moves with the directory and is let
  // go by the sweeper: its going syncs the file system, which can take long.
  if (::renameat2(AT_FDCWD, dir.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) == 0) return {};
  // Not on the trash's file system (a workspaces directory mounted apart): deleted now.
  if (errno == EXDEV) {
    sandbox::release_held_overlay(dir);  // its overlays go before their layers do
    return fs::remove_tree(dir);
  }
  return sys_error("move to the trash", dir);
}

}  // namespace store

Expected<std::size_t> sweep_trash() {
  auto trash = trash_dir(false);
  if (!trash) return std::move(trash).error();
  const std::string lock_path = *trash + "/" + kSweepLock;
  // Opened, never made: a sweeper that comes after the data directory was deleted leaves nothing.
  UniqueFd lock(::open(lock_path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW));
  if (!lock && errno == ENOENT) return std::size_t{0};  // no trash: nothing was removed here
  if (!lock) return sys_error("open", lock_path);
  // One sweeper at a time; a second waits, then finds what arrived meanwhile.
  while (::flock(lock.get(), LOCK_EX) != 0)
    if (errno != EINTR) return sys_error("lock", lock_path);
  std::size_t removed = 0;
  for (int pass = 0; pass < kMaxPasses; ++pass) {
    auto entries = trash_entries(*trash);
    if (entries.empty()) break;
    for (const auto& name : entries) {
      sandbox::release_held_overlay(*trash + "/" + name);  // a removed session's overlays go first
      if (auto r = fs::remove_tree(*trash + "/" + name); !r) return std::move(r).error();
      ++removed;
    }
  }
  return removed;
}

}  // namespace chock::workspace
