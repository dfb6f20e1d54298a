// A base for a new commit made from a base Chock already has: every file
// hard-linked (one link(2) each, no bytes copied), the donor's index copied,
// then `git read-tree -m -u` from the donor's commit to the new one, which
// writes only the files that differ (git replaces a file by unlinking it and
// creating a new one, so the donor's inodes are never written through a
// link). The files it did not touch keep their inode numbers and times, so
// the copied index still describes them; a hard link moves their change time
// (ctime), which is why the bases' git and the sessions' git do not trust
// ctime (core.trustctime false: size, mtime and inode still tell a change).
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "util/fd.hpp"
#include "workspace/bases.hpp"
#include "workspace/fs.hpp"
#include "workspace/git.hpp"

namespace chock::workspace::bases {

namespace {

constexpr int kMaxDepth = 256;

// Links every entry below `from` into `to` (made), directories made with the
// same mode and given to `owner` when set.
Expected<void> link_tree(int from, int to, const std::string& path, const fs::Owner* owner, int depth) {
  if (depth > kMaxDepth) return Error{"link the base: too deep", path, ELOOP};
  const int listing = ::dup(from);
  if (listing < 0) return sys_error("dup", path);
  DIR* dir = ::fdopendir(listing);
  if (dir == nullptr) {
    ::close(listing);
    return sys_error("opendir", path);
  }
  Expected<void> result;
  while (dirent* e = ::readdir(dir)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    std::string sub = path;
    sub += '/';
    sub += name;
    struct stat st {};
    if (::fstatat(from, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
      result = sys_error("stat", sub);
      break;
    }
    if (!S_ISDIR(st.st_mode)) {
      // linkat without AT_SYMLINK_FOLLOW links a symbolic link itself.
      if (::linkat(from, e->d_name, to, e->d_name, 0) != 0) {
        result = sys_error("link", sub);
        break;
      }
      continue;
    }
    if (::mkdirat(to, e->d_name, st.st_mode & 07777) != 0) {
      result = sys_error("mkdir", sub);
      break;
    }
    UniqueFd sub_from(::openat(from, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    UniqueFd sub_to(::openat(to, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!sub_from || !sub_to) {
      result = sys_error("open", sub);
      break;
    }
    if (owner != nullptr && ::fchown(sub_to.get(), owner->uid, owner->gid) != 0) {
      result = sys_error("chown", sub);
      break;
    }
    result = link_tree(sub_from.get(), sub_to.get(), sub, owner, depth + 1);
    if (!result) break;
  }
  ::closedir(dir);
  return result;
}

}  // namespace

Expected<bool> derive_base(const std::string& dir, const std::string& donor, const std::string& donor_commit,
                           const build::Project& project, uid_t owner, std::size_t max_changes) {
  git::Env plain = git::repo_env(project.common_dir);
  // The paths that differ: what read-tree will write, and what a root caller gives to the run uid.
  auto changed = git::run({"diff", "--no-renames", "--name-only", "-z", donor_commit, project.head}, plain);
  if (!changed) return std::move(changed).error();
  if (!changed->ok()) return false;  // the donor's commit is not in this repository
  const auto paths = git::split(changed->out, '\0');
  if (paths.size() > max_changes) return false;  // a fresh checkout writes less

  const std::string tree = dir + "/tree";
  const bool root_caller = ::geteuid() == 0 && owner != 0;
  const fs::Owner given{owner, build::group_of(owner)};
  if (::mkdir(tree.c_str(), 0755) != 0) return sys_error("mkdir", tree);
  if (root_caller && ::chown(tree.c_str(), given.uid, given.gid) != 0) return sys_error("chown", tree);
  {
    UniqueFd from(::open((donor + "/tree").c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    UniqueFd to(::open(tree.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!from || !to) return sys_error("open", donor + "/tree");
    if (auto r = link_tree(from.get(), to.get(), tree, root_caller ? &given : nullptr, 0); !r)
      return std::move(r).error();
  }
  if (auto r = fs::copy_entry(donor + "/index", dir + "/index"); !r) return std::move(r).error();
  auto env = git::repo_env(project.common_dir, tree, dir + "/index", {});
  const std::vector<std::string> move{
      "-c", "core.trustctime=false", "read-tree", "-m", "-u", donor_commit, project.head};
  // A root caller's run uid writes the files itself (bases.cpp make_base);
  // root does, then chowns them, only where it cannot be given those credentials.
  bool chown_after = root_caller;
  if (root_caller) {
    if (::chown(dir.c_str(), given.uid, given.gid) != 0) return sys_error("chown", dir);
    env.as = as_run_uid(given.uid, given.gid);
    auto moved = env.as ? git::run(move, env) : Expected<git::Output>(Error{"no filter", dir, ENOSYS});
    env.as.reset();
    if (moved && !moved->ok()) return false;  // a fresh checkout, from a clean tree
    chown_after = !moved;
  }
  if (chown_after || !root_caller)
    if (auto r = git::capture(move, env, "move the base to the new commit"); !r) return std::move(r).error();
  if (chown_after) {
    // What git wrote is root's: each changed path, and the directories it made, go to the run uid.
    for (const auto& p : paths) {
      for (std::size_t slash = p.find('/'); slash != std::string::npos; slash = p.find('/', slash + 1)) {
        struct stat st {};
        const std::string parent = tree + "/" + p.substr(0, slash);
        if (::lstat(parent.c_str(), &st) == 0 && st.st_uid != given.uid &&
            ::lchown(parent.c_str(), given.uid, given.gid) != 0)
          return sys_error("chown", parent);
      }
      std::string file = tree;
      file += '/';
      file += p;
      if (::lchown(file.c_str(), given.uid, given.gid) != 0 && errno != ENOENT)
        return sys_error("chown", file);
    }
    auto refreshed = git::run({"-c", "core.trustctime=false", "update-index", "-q", "--refresh"}, env);
    if (!refreshed) return std::move(refreshed).error();
    if (refreshed->status > 1)
      return Error{"refresh the base's index: " + refreshed->first_error_line(), dir, 0};
  }
  if (root_caller && ::chown(dir.c_str(), ::geteuid(), ::getegid()) != 0) return sys_error("chown", dir);
  return true;
}

}  // namespace chock::workspace::bases
