// Adopt: an overlay session's work, read from its upper layer and copied
// beside the project (never over it): .chock-adopted/<id>/ and <id>.txt.
//
// How the upper layer is read (rootless overlayfs, `userxattr`):
//  - a character device 0/0, or an empty file with user.overlay.whiteout,
//    is a whiteout: the lower path was deleted;
//  - a directory with user.overlay.opaque=y hides everything of the lower
//    directory: each lower path not in the upper one was deleted;
//  - user.overlay.redirect (a renamed directory) and user.overlay.metacopy
//    (data still in the lower layer) are not followed: listed as skipped.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "chock/config.hpp"
#include "util/escape.hpp"
#include "util/fd.hpp"
#include "util/fs.hpp"
#include "util/size.hpp"
#include "util/syscalls.hpp"
#include "workspace/build.hpp"
#include "workspace/overlay_scan.hpp"

namespace chock::workspace {

namespace overlay_scan {

namespace {

bool has_xattr(const std::string& path, const char* name, const char* want = nullptr) {
  char buf[256];
  ssize_t n = ::lgetxattr(path.c_str(), name, buf, sizeof buf);
  if (n < 0) return false;
  return want == nullptr || std::string(buf, static_cast<std::size_t>(n)) == want;
}

std::vector<std::string> entries(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") out.push_back(n);
  }
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

// Every non-directory path below a lower directory, relative to the layer root.
void lower_files(const std::string& lower_root, const std::string& rel, std::vector<std::string>& out) {
  for (const auto& n : entries(fs::join(lower_root, rel))) {
    std::string sub = fs::join(rel, n);
    if (fs::is_dir(fs::join(lower_root, sub))) {
      lower_files(lower_root, sub, out);
    } else {
      out.push_back(sub);
    }
  }
}

bool is_whiteout(const std::string& path, const struct stat& st) {
  if (S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0)) return true;
  return S_ISREG(st.st_mode) && st.st_size == 0 && has_xattr(path, "user.overlay.whiteout");
}

void walk(const Session& s, const std::string& rel, Changes& c) {
  std::string upper_dir = s.upper() + (rel.empty() ? "" : "/" + rel);
  for (const auto& n : entries(upper_dir)) {
    std::string sub = rel.empty() ? n : fs::join(rel, n);
    std::string up = s.upper() + "/" + sub;
    std::string low = s.lower + "/" + sub;
    struct stat st {};
    if (::lstat(up.c_str(), &st) != 0) continue;
    if (rel.empty() && n == ".chock-adopted") {
      c.skipped.emplace_back(sub, "Chock's own adopt folder");
      continue;
    }
    // What a call writes in a carried directory (a cache in node_modules) is
    // the session's and never work: not counted, never adopted.
    if (build::is_carried(s, sub)) {
      c.skipped.emplace_back(sub, "a carried directory: what a call writes there stays in the session");
      continue;
    }
    if (is_whiteout(up, st)) {
      c.deleted.push_back(sub);
      continue;
    }
    if (S_ISDIR(st.st_mode)) {
      if (has_xattr(up, "user.overlay.redirect")) {
        c.skipped.emplace_back(sub, "a renamed directory (overlay redirect), not followed");
        continue;
      }
      if (has_xattr(up, "user.overlay.opaque", "y") && fs::is_dir(low)) {
        std::vector<std::string> gone;
        lower_files(s.lower, sub, gone);
        for (const auto& g : gone)
          if (!build::is_carried(s, g) && !fs::exists(s.upper() + "/" + g)) c.deleted.push_back(g);
      }
      walk(s, sub, c);
      continue;
    }
    if (!S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) {
      c.skipped.emplace_back(sub, "not a regular file or symbolic link");
      continue;
    }
    if (has_xattr(up, "user.overlay.metacopy")) {
      c.skipped.emplace_back(sub, "only its metadata changed (overlay metacopy)");
      continue;
    }
    bool denied = std::find(s.deny.begin(), s.deny.end(), sub) != s.deny.end();
    if (denied && S_ISREG(st.st_mode)) {
      auto text = fs::read_file_nofollow(up, 4096);
      if (text && *text == kDenyNotice) {
        c.skipped.emplace_back(sub, "denied: the notice Chock put in its place");
        continue;
      }
    }
    (fs::exists(low) ? c.changed : c.added).push_back(sub);
  }
}

}  // namespace

Changes scan(const Session& s) {
  Changes c;
  walk(s, "", c);
  std::sort(c.deleted.begin(), c.deleted.end());
  c.deleted.erase(std::unique(c.deleted.begin(), c.deleted.end()), c.deleted.end());
  return c;
}

}  // namespace overlay_scan

namespace {

// What copying `paths` from the upper layer takes on the project's file
// system: each file's data rounded up to whole blocks (its holes stay
// holes), a block and an inode for each name and each directory made.
struct Need {
  std::uint64_t bytes = 0;
  std::uint64_t inodes = 0;
};

Need need_of(int upper_fd, const std::vector<std::string>& paths, std::uint64_t block) {
  Need need{block, 1};  // the list file
  std::set<std::string> dirs;
  for (const auto& p : paths) {
    for (std::string d = fs::parent_of(p); !d.empty() && dirs.insert(d).second; d = fs::parent_of(d)) {
      need.bytes += block;
      ++need.inodes;
    }
    ++need.inodes;
    UniqueFd fd(sys::openat2(upper_fd, p.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC,
                             0, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS));
    auto data = fd ? fs::data_bytes(fd.get(), p) : Expected<std::uint64_t>(0);
    // A link (ELOOP) takes a block at most; what cannot be read is skipped by the copy.
    need.bytes += data ? std::max<std::uint64_t>((*data + block - 1) / block * block, block) : block;
  }
  return need;
}

// Before anything is written: an adopt that would take the project's file
// system under the floors a call's disk guard keeps there is refused,
// counting the adoption it replaces as removed.
Expected<void> check_room(const std::string& project, const std::string& destination, int upper_fd,
                          const std::vector<std::string>& paths) {
  struct statvfs v {};
  if (::statvfs(project.c_str(), &v) != 0) return sys_error("statvfs, for the room adopt needs", project);
  const std::uint64_t block = v.f_frsize != 0 ? v.f_frsize : 4096;
  const DiskGuard floors =
      DiskGuard::for_file_system(project, 0, static_cast<std::uint64_t>(v.f_blocks) * block, v.f_files);
  const Need need = need_of(upper_fd, paths, block);
  const std::uint64_t free_bytes =
      static_cast<std::uint64_t>(v.f_bavail) * block + fs::disk_usage(destination);
  const std::uint64_t free_inodes = static_cast<std::uint64_t>(v.f_favail) + fs::count_entries(destination);
  // A file system that counts no blocks (ramfs) cannot be judged, as one that counts no inodes.
  if (v.f_blocks != 0 && need.bytes + floors.floor_bytes > free_bytes)
    return Error{"adopt would write " + human_size(need.bytes) + " to the file system of " + project + " (" +
                     human_size(free_bytes) + " free), under its floor of " + human_size(floors.floor_bytes) +
                     ": nothing was written; make room there first",
                 ""};
  if (floors.floor_inodes > 0 && need.inodes + floors.floor_inodes > free_inodes)
    return Error{"adopt would make " + std::to_string(need.inodes) + " files in the file system of " +
                     project + " (" + std::to_string(free_inodes) + " inodes free), under its floor of " +
                     std::to_string(floors.floor_inodes) + ": nothing was written; make room there first",
                 ""};
  return {};
}

}  // namespace

Expected<AdoptReport> adopt(const std::string& id) {
  auto loaded = load(id);
  if (!loaded) return std::move(loaded).error();
  Session s = std::move(*loaded);
  if (s.kind != Kind::overlay)
    return Error{"session " + id + " is a git worktree: its commits come back with 'chock apply " + id + "'",
                 "", 0, Errc::bad_config};
  auto held = lock(s, true);  // waits for the session's calls
  if (!held) return std::move(held).error();
  auto c = overlay_scan::scan(s);
  AdoptReport r;
  r.destination = s.project + "/.chock-adopted/" + id;
  r.list_file = r.destination + ".txt";
  // What is adopted belongs to whoever owns the project, never to root for a
  // root caller of someone else's project, and never carries setuid, setgid
  // or sticky: a root caller must not hand a local user a root-owned 6755 file.
  UniqueFd project_fd(::open(s.project.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW));
  if (!project_fd) return sys_error("open", s.project);
  struct stat project_st {};
  if (::fstat(project_fd.get(), &project_st) != 0) return sys_error("stat", s.project);
  fs::Owner owner{project_st.st_uid, project_st.st_gid};
  fs::CopyPolicy policy{true, ::geteuid() == 0 ? &owner : nullptr};
  r.owner = ::geteuid() == 0 ? project_st.st_uid : ::geteuid();
  UniqueFd upper_fd(::open(s.upper().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW));
  if (!upper_fd) return sys_error("open", s.upper());
  std::vector<std::string> to_copy = c.changed;
  to_copy.insert(to_copy.end(), c.added.begin(), c.added.end());
  if (auto room = check_room(s.project, r.destination, upper_fd.get(), to_copy); !room)
    return std::move(room).error();
  // .chock-adopted itself must be a directory, not a link to elsewhere, before anything below it is removed.
  auto adopted_root = fs::open_dir_beneath(project_fd.get(), ".chock-adopted", true, policy.owner);
  if (!adopted_root) return std::move(adopted_root).error();
  ::close(*adopted_root);
  if (auto rm = fs::remove_tree(r.destination); !rm) return std::move(rm).error();
  auto dest = fs::open_dir_beneath(project_fd.get(), ".chock-adopted/" + id, true, policy.owner);
  if (!dest) return std::move(dest).error();
  UniqueFd dest_fd(*dest);
  std::string list =
      "# chock workspace adopt " + id +
      ": a line a path, fields separated by a tab (what, path, why); control characters in paths are escaped "
      "as \\t \\n \\r \\xNN \\uNNNN and a backslash as \\\\\n";
  std::vector<std::string> copied[2];
  for (int group = 0; group < 2; ++group) {
    for (const auto& p : group == 0 ? c.changed : c.added) {
      if (auto cp = fs::copy_beneath(upper_fd.get(), dest_fd.get(), p, policy); !cp) {
        c.skipped.emplace_back(p, cp.error().message());
        continue;
      }
      list += (group == 0 ? "changed\t" : "added\t") + unambiguous(p) + "\n";
      copied[group].push_back(p);
    }
  }
  for (const auto& p : c.deleted) list += "deleted\t" + unambiguous(p) + "\n";
  for (const auto& [p, why] : c.skipped)
    list.append("skipped\t").append(unambiguous(p)).append("\t").append(unambiguous(why)).append("\n");
  if (auto w = fs::write_file_atomic(r.list_file, list); !w) return std::move(w).error();
  if (policy.owner != nullptr && ::lchown(r.list_file.c_str(), owner.uid, owner.gid) != 0)
    return sys_error("chown", r.list_file);
  r.changed = std::move(copied[0]);
  r.added = std::move(copied[1]);
  r.deleted = std::move(c.deleted);
  r.skipped = std::move(c.skipped);
  s.adopted_run = s.last_run;
  if (auto w = save(s); !w) return std::move(w).error();
  return r;
}

}  // namespace chock::workspace
