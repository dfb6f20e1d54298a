// Denied files: the notice stands where the file was, and the file's bytes
// are never copied into the workspace.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <utility>

#include "sandbox/overlay_holder.hpp"
#include "util/fd.hpp"
#include "util/fs.hpp"
#include "util/passwd.hpp"
#include "workspace/build.hpp"
#include "workspace/git.hpp"

namespace chock::workspace::build {

namespace {

// Where the notice goes: the git tree; an overlay's upper layer (it hides the
// lower file); a root caller's copy (the lower layer itself).
std::string cover_root(const Session& s) {
  if (s.kind == Kind::git) return writable_tree(s);
  return s.lower != s.project ? s.lower : s.upper();
}

Expected<void> write_notice(int root_fd, const std::string& rel, uid_t owner) {
  auto dir = fs::open_dir_beneath(root_fd, fs::parent_of(rel), true);
  if (!dir) return std::move(dir).error();
  UniqueFd parent(*dir);
  std::string name = fs::base_of(rel);
  if (::unlinkat(parent.get(), name.c_str(), 0) != 0 && errno != ENOENT)
    return Error{"cover denied file", rel, errno == EISDIR ? EISDIR : errno};
  UniqueFd fd(
      ::openat(parent.get(), name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
  if (!fd) return sys_error("cover denied file", rel);
  std::size_t len = std::strlen(kDenyNotice);
  if (::write(fd.get(), kDenyNotice, len) != static_cast<ssize_t>(len)) return sys_error("write notice", rel);
  if (::geteuid() == 0 && owner != 0 && ::fchown(fd.get(), owner, group_of(owner)) != 0)
    return sys_error("chown notice", rel);
  return {};
}

// Whether the notice is there already, as written (most calls find it so).
bool notice_in_place(int root_fd, const std::string& rel, uid_t owner) {
  auto dir = fs::open_dir_beneath(root_fd, fs::parent_of(rel), false);
  if (!dir) return false;
  const UniqueFd parent(*dir);
  const UniqueFd fd(::openat(parent.get(), fs::base_of(rel).c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  struct stat st {};
  const std::size_t len = std::strlen(kDenyNotice);
  if (!fd || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) ||
      static_cast<std::size_t>(st.st_size) != len || (::geteuid() == 0 && owner != 0 && st.st_uid != owner))
    return false;
  char bytes[256];
  return len <= sizeof bytes && ::pread(fd.get(), bytes, len, 0) == static_cast<ssize_t>(len) &&
         std::memcmp(bytes, kDenyNotice, len) == 0;
}

// ", which has BIN.env" where the directory has the name in another case:
// on a file system that ignores case the path would have named it.
std::string spelt_otherwise(const std::string& root, const std::string& rel) {
  const std::string dir = fs::join(root, fs::parent_of(rel));
  const std::string base = fs::base_of(rel);
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return {};
  std::string found;
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name.size() == base.size() && name != base &&
        std::equal(name.begin(), name.end(), base.begin(), [](char a, char b) {
          return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
        })) {
      found = name;
      break;
    }
  }
  ::closedir(d);
  return found.empty() ? std::string() : ", which has " + found + " beside it";
}

}  // namespace

Expected<void> check_deny_targets(const Project& project, const std::vector<std::string>& paths,
                                  const std::vector<std::string>& may_be_missing) {
  std::string missing;  // told after the history: a file git has is the graver reason
  for (const auto& p : paths) {
    struct stat st {};
    const bool there = ::lstat(fs::join(project.root, p).c_str(), &st) == 0;
    if (there && S_ISDIR(st.st_mode))
      return Error{"--deny " + p + ": is a directory in the project; name files", "", 0, Errc::bad_config};
    if (!there && missing.empty() &&
        std::find(may_be_missing.begin(), may_be_missing.end(), p) == may_be_missing.end())
      missing = p;
  }
  auto missing_error = [&]() -> Expected<void> {
    if (missing.empty()) return {};
    return Error{"--deny " + missing + ": no such file in the project (" + project.root + ")" +
                     spelt_otherwise(project.root, missing) +
                     "; a misspelt path would leave the real file readable: name a file that is there",
                 "", 0, Errc::bad_config};
  };
  if (!project.git || project.head.empty() || paths.empty()) return missing_error();
  // One walk for every path: the newest commit that has any of them.
  std::vector<std::string> args{"--literal-pathspecs", "log",         "--all", "-1",
                                "--format=%h",         "--name-only", "--"};
  args.insert(args.end(), paths.begin(), paths.end());
  auto found = git::capture(args, git::repo_env(project.common_dir), "look for denied files in the history");
  if (!found) return std::move(found).error();
  // "<commit>", "", then the denied paths that commit has.
  auto lines = git::split(*found, '\n');
  if (lines.empty()) return missing_error();
  const std::string& named = lines.size() > 2 ? lines[2] : paths.front();
  return Error{"--deny " + named + ": git has this file in commit " + lines.front() +
                   ", and the sandbox reads the repository's objects, so its bytes would be in it; deny only "
                   "files git has never tracked (keep it out of git, e.g. in .gitignore)",
               "", 0, Errc::bad_config};
}

namespace {

// Where a denied path's notice goes: the workspace's writable tree, or, for
// a file inside a carried directory, that directory's upper layer, over the
// real file (the path the policy denies wins). The root and the path below it.
std::pair<std::string, std::string> cover_place(const Session& s, const std::string& p) {
  std::string root = cover_root(s);
  std::string rel = p;
  // An overlay session's carried directories have no layers of their own.
  for (std::size_t i = 0; s.kind == Kind::git && i < s.carry.size(); ++i) {
    if (p.starts_with(s.carry[i] + "/")) {
      root = carry_upper(s, i);
      rel = p.substr(s.carry[i].size() + 1);
    }
  }
  return {root, rel};
}

}  // namespace

bool denied_in_place(const Session& s, const std::vector<std::string>& paths) {
  for (const auto& p : paths) {
    const auto [root, rel] = cover_place(s, p);
    if (!fs::exists(s.project + "/" + p) && !fs::exists(fs::join(root, rel))) continue;
    UniqueFd root_fd(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!root_fd || !notice_in_place(root_fd.get(), rel, s.owner)) return false;
  }
  return true;
}

Expected<void> cover_denied(const Session& s, const std::vector<std::string>& paths, Notes& notes) {
  if (paths.empty()) return {};
  for (const auto& p : paths) {
    const auto [root, rel] = cover_place(s, p);
    bool in_project = fs::exists(s.project + "/" + p);
    bool in_workspace = fs::exists(fs::join(root, rel));
    if (!in_project && !in_workspace) {
      notes.push_back("--deny " + p + ": no such file in the project; nothing to cover");
      continue;
    }
    UniqueFd root_fd(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!root_fd) return sys_error("open", root);
    if (notice_in_place(root_fd.get(), rel, s.owner)) continue;
    // Not beneath a mounted overlay: it would not promise to see the change.
    sandbox::release_held_overlay(s.dir);
    if (auto r = write_notice(root_fd.get(), rel, s.owner); !r) return r;
  }
  return {};
}

}  // namespace chock::workspace::build
