#include "workspace/project.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <optional>
#include <utility>

#include "util/fs.hpp"
#include "workspace/git.hpp"
#include "workspace/session_refs.hpp"

namespace chock::workspace {

namespace {

std::string real_path(const std::string& p) {
  char buf[PATH_MAX];
  return ::realpath(p.c_str(), buf) != nullptr ? std::string(buf) : std::string();
}

std::string absolute_from(const std::string& base, const std::string& p) {
  return !p.empty() && p[0] == '/' ? p : base + "/" + p;
}

Expected<void> check_owner(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return sys_error("stat", path);
  if (st.st_uid != ::geteuid())
    return Error{"refusing a repository that belongs to uid " + std::to_string(st.st_uid) +
                     ", not to you (uid " + std::to_string(::geteuid()) +
                     "): git would run its configuration as you; run chock as its owner",
                 path, 0, Errc::bad_config};
  return {};
}

// The commit HEAD names, read from the files git keeps it in (HEAD, the
// branch's loose ref or its line in packed-refs), as `git rev-parse HEAD`
// would give it; nothing where anything is unusual (a reftable store, a
// symbolic ref, no commit yet, a huge packed-refs), and git is asked then.
std::optional<std::string> head_from_files(const Project& p) {
  struct stat st {};
  if (::lstat((p.common_dir + "/reftable").c_str(), &st) == 0) return std::nullopt;
  auto head = fs::read_file_nofollow(p.git_dir + "/HEAD", 4096);
  if (!head) return std::nullopt;
  const std::string line = git::chomp(*head);
  if (git::is_object_id(line)) return line;
  const std::string ref = line.rfind("ref: ", 0) == 0 ? line.substr(5) : std::string();
  if (!ref.starts_with("refs/heads/") || !session_refs::is_ref_name(ref)) return std::nullopt;
  auto loose = fs::read_file_nofollow(p.common_dir + "/" + ref, 4096);
  if (loose) {
    std::string id = git::chomp(*loose);
    return git::is_object_id(id) ? std::optional(std::move(id)) : std::nullopt;
  }
  if (loose.error().code != ENOENT) return std::nullopt;
  auto packed = fs::read_file_nofollow(p.common_dir + "/packed-refs", 16 << 20);
  if (!packed) return std::nullopt;
  const auto refs = session_refs::parse_packed(*packed);
  if (auto it = refs.find(ref); it != refs.end()) return it->second;
  return std::nullopt;
}

}  // namespace

Expected<Project> locate_project(const std::string& dir, bool owner_checked) {
  Project p;
  std::string start = real_path(dir);
  if (start.empty()) return Error{"project directory", dir, errno == 0 ? ENOENT : errno, Errc::bad_config};
  struct stat st {};
  if (::stat(start.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return Error{"project is not a directory", start, ENOTDIR, Errc::bad_config};
  std::string cur = start;
  for (;;) {
    std::string dotgit = cur + "/.git";
    struct stat g {};
    if (::lstat(dotgit.c_str(), &g) == 0 && (S_ISDIR(g.st_mode) || S_ISREG(g.st_mode))) {
      p.root = cur;
      p.git = true;
      if (S_ISDIR(g.st_mode)) {
        p.git_dir = dotgit;
      } else {
        auto text = fs::read_file_nofollow(dotgit, 4096);
        if (!text) return std::move(text).error();
        std::string line = git::chomp(*text);
        if (line.rfind("gitdir: ", 0) != 0) return Error{"not a gitdir file", dotgit, 0, Errc::bad_config};
        p.git_dir = real_path(absolute_from(cur, line.substr(8)));
        if (p.git_dir.empty()) return sys_error("gitdir of", dotgit);
      }
      break;
    }
    if (cur == "/") break;
    cur = fs::parent_of(cur);
    if (cur.empty()) cur = "/";
  }
  if (!p.git) {
    p.root = start;
    return p;
  }
  if (auto cd = fs::read_file_nofollow(p.git_dir + "/commondir", 4096); cd) {
    p.common_dir = real_path(absolute_from(p.git_dir, git::chomp(*cd)));
  } else {
    p.common_dir = p.git_dir;
  }
  if (p.common_dir.empty()) return Error{"find the repository's common dir", p.git_dir, ENOENT};
  if (owner_checked)
    if (auto r = check_owner(p.common_dir); !r) return std::move(r).error();
  return p;
}

Expected<Project> find_project(const std::string& dir) {
  auto found = locate_project(dir);
  if (!found || !found->git) return found;
  Project p = std::move(*found);
  if (auto id = head_from_files(p); id) {
    p.head = std::move(*id);
    return p;
  }
  auto head = git::run({"rev-parse", "-q", "--verify", "HEAD^{commit}"}, git::repo_env(p.git_dir));
  if (!head) return std::move(head).error();
  if (head->ok()) p.head = git::chomp(head->out);
  return p;
}

}  // namespace chock::workspace
