// Other names of a denied file. A hard link is the same inode under another
// path, so covering the denied path alone would leave its bytes readable
// under the link (other.env beside secret.env, a copy in node_modules/).
// Each other name in the project becomes a denied path of the session; one
// Chock cannot cover (git tracks it: its bytes are in the objects the call
// reads) refuses the session, naming both.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <map>
#include <utility>

#include "util/fd.hpp"
#include "util/fs.hpp"
#include "workspace/build.hpp"
#include "workspace/git.hpp"

namespace chock::workspace::build {

namespace {

using Inode = std::pair<dev_t, ino_t>;

// A directory deeper than this is not searched, and says so: an unsearched
// corner could hold a link.
constexpr int kMaxDepth = 256;

struct Linked {
  std::string denied;  // the denied path whose inode this is
  std::uint64_t links = 0;
};

// The denied paths of the project that are regular files with more than one name.
std::map<Inode, Linked> linked_denied(const std::string& root, const std::vector<std::string>& deny) {
  std::map<Inode, Linked> out;
  for (const auto& d : deny) {
    struct stat st {};
    if (::lstat(fs::join(root, d).c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink < 2) continue;
    out.try_emplace(Inode{st.st_dev, st.st_ino}, Linked{d, st.st_nlink});
  }
  return out;
}

struct Search {
  const std::map<Inode, Linked>& wanted;
  std::vector<std::pair<std::string, std::string>> found;  // (other name, denied path)
  std::string too_deep;                                    // a directory past kMaxDepth
  std::string unreadable;  // a directory or entry that could not be read: a name could hide there

  // Every entry beneath `dir` (open), never following a link. .git and
  // other file systems are searched too: the call may see them (an overlay
  // shows .git, a carried directory may be a mount), and a match is by
  // device and inode, so nothing but a real other name is found.
  void walk(int dir, const std::string& rel, int depth) {
    DIR* d = ::fdopendir(dir);
    if (d == nullptr) {
      ::close(dir);
      if (unreadable.empty()) unreadable = rel.empty() ? "." : rel;
      return;
    }
    for (errno = 0; dirent* e = ::readdir(d); errno = 0) {
      const std::string name = e->d_name;
      if (name == "." || name == "..") continue;
      const std::string path = rel.empty() ? name : fs::join(rel, name);
      struct stat st {};
      if (::fstatat(::dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno != ENOENT && unreadable.empty()) unreadable = path;  // ENOENT: gone meanwhile
        continue;
      }
      if (S_ISREG(st.st_mode) && st.st_nlink > 1) {
        auto it = wanted.find(Inode{st.st_dev, st.st_ino});
        if (it != wanted.end() && it->second.denied != path) found.emplace_back(path, it->second.denied);
      } else if (S_ISDIR(st.st_mode)) {
        if (depth >= kMaxDepth) {
          if (too_deep.empty()) too_deep = path;
          continue;
        }
        const int sub = ::openat(::dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sub >= 0) {
          walk(sub, path, depth + 1);
        } else if (errno != ENOENT && unreadable.empty()) {
          unreadable = path;
        }
      }
    }
    if (errno != 0 && unreadable.empty()) unreadable = rel.empty() ? "." : rel;
    ::closedir(d);
  }
};

// The other names git tracks: their bytes are in the objects a call reads.
Expected<std::vector<std::string>> tracked_of(const Project& project, const std::vector<std::string>& paths) {
  std::vector<std::string> args{"--literal-pathspecs", "ls-files", "-z", "--"};
  args.insert(args.end(), paths.begin(), paths.end());
  auto listed = git::capture(args, git::repo_env(project.git_dir, project.root), "ask git what it tracks");
  if (!listed) return std::move(listed).error();
  return git::split(*listed, '\0');
}

std::string another_name(const std::string& denied, const std::string& other) {
  return "--deny " + denied + ": " + other + " is another name of it (a hard link)";
}

Error refusal(const std::string& denied, const std::string& other, const std::string& why) {
  return Error{another_name(denied, other) + " " + why, "", 0, Errc::bad_config};
}

}  // namespace

bool deny_links_known(const Session& s) {
  const auto linked = linked_denied(s.project, s.deny);
  for (const auto& [inode, l] : linked) {
    std::uint64_t known = 0;
    for (const auto& d : s.deny) {
      struct stat st {};
      if (::lstat(fs::join(s.project, d).c_str(), &st) == 0 && Inode{st.st_dev, st.st_ino} == inode) ++known;
    }
    // A name outside the project is never known: searched again at each
    // open that has the session alone, which finds nothing new.
    if (known < l.links) return false;
  }
  return true;
}

Expected<void> deny_other_names(Session& s, const Project& project, Notes& notes) {
  const auto linked = linked_denied(project.root, s.deny);
  if (linked.empty()) return {};
  Search search{linked, {}, {}, {}};
  const int top = ::open(project.root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (top < 0) return sys_error("open", project.root);
  search.walk(top, "", 0);
  if (!search.unreadable.empty())
    return Error{"--deny " + linked.begin()->second.denied +
                     ": the file has other names (hard links), and Chock cannot read " + search.unreadable +
                     " in the project to look for them there; make it readable or remove the links",
                 "", 0, Errc::bad_config};
  if (!search.too_deep.empty())
    return Error{
        "--deny " + linked.begin()->second.denied +
            ": the file has other names (hard links), and the project is too deep to search for them "
            "all (" +
            search.too_deep + " is " + std::to_string(kMaxDepth) + " directories down)",
        "", 0, Errc::bad_config};
  std::vector<std::pair<std::string, std::string>> added;
  for (const auto& [other, denied] : search.found) {
    if (std::find(s.deny.begin(), s.deny.end(), other) != s.deny.end()) continue;
    if (auto valid = validate_deny_path(other); !valid)
      return refusal(denied, other,
                     "that Chock cannot cover (" + valid.error().message() + "); remove the link");
    added.emplace_back(other, denied);
  }
  if (added.empty()) return {};
  if (s.kind == Kind::git) {
    std::vector<std::string> names;
    names.reserve(added.size());
    for (const auto& a : added) names.push_back(a.first);
    // An existing session's project may have been located by its root alone.
    auto located = project.git_dir.empty() ? locate_project(project.root) : Expected<Project>(project);
    if (!located) return std::move(located).error();
    auto tracked = tracked_of(*located, names);
    if (!tracked) return std::move(tracked).error();
    for (const auto& [other, denied] : added)
      if (std::find(tracked->begin(), tracked->end(), other) != tracked->end())
        return refusal(denied, other,
                       "and git tracks it, so its bytes are in the objects the call reads; remove the link");
    // Or a commit any ref reaches has it: what it held then is in those objects.
    std::vector<std::string> args{"--literal-pathspecs", "log",         "--all", "-1",
                                  "--format=%h",         "--name-only", "--"};
    args.insert(args.end(), names.begin(), names.end());
    auto found = git::capture(args, git::repo_env(located->common_dir),
                              "look for a denied file's other names in the history");
    if (!found) return std::move(found).error();
    const auto lines = git::split(*found, '\n');
    if (!lines.empty())
      for (const auto& [other, denied] : added)
        if (std::find(lines.begin() + 1, lines.end(), other) != lines.end())
          return refusal(denied, other,
                         "and git has it in commit " + lines.front() +
                             ", so a version of it is in the objects the call reads; remove the link");
  }
  for (const auto& [other, denied] : added) {
    s.deny.push_back(other);
    notes.push_back(another_name(denied, other) + ", covered too");
  }
  return {};
}

}  // namespace chock::workspace::build
