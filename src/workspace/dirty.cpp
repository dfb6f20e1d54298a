// --allow-dirty: the project's uncommitted work, copied into a new worktree
// as uncommitted work there too (modified, added and deleted files).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "util/fd.hpp"
#include "util/fs.hpp"
#include "workspace/build.hpp"
#include "workspace/git.hpp"

namespace chock::workspace::build {

namespace {

struct Counts {
  int modified = 0, added = 0, deleted = 0;
};

bool is_denied(const Session& s, const std::string& path) {
  return std::find(s.deny.begin(), s.deny.end(), path) != s.deny.end();
}

}  // namespace

Expected<void> import_dirty(const Session& s, const Project& project, Notes& notes) {
  auto env = git::repo_env(project.git_dir, project.root);
  auto status = git::capture({"status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames"}, env,
                             "read the project's uncommitted changes");
  if (!status) return std::move(status).error();
  UniqueFd project_fd(::open(project.root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!project_fd) return sys_error("open", project.root);
  UniqueFd tree_fd(::open(s.tree().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW));
  if (!tree_fd) return sys_error("open", s.tree());
  Counts counts;
  auto skip = [&](const std::string& path, const std::string& why) {
    notes.push_back("--allow-dirty skipped " + path + ": " + why);
  };
  for (const auto& entry : git::split(*status, '\0')) {
    if (entry.size() < 4) continue;
    char x = entry[0], y = entry[1];
    std::string path = entry.substr(3);
    if (is_denied(s, path)) {
      skip(path, "denied (the notice stands in its place)");
      continue;
    }
    if (x == 'U' || y == 'U' || (x == 'A' && y == 'A') || (x == 'D' && y == 'D')) {
      skip(path, "unmerged (a merge conflict is in progress)");
      continue;
    }
    // Both sides resolved beneath their root with no symbolic link: the
    // worktree holds whatever links the commits hold (docs -> /etc).
    struct stat st {};
    if (::fstatat(project_fd.get(), path.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno != ENOENT) {
        skip(path, sys_error("stat").message());
        continue;
      }
      if (auto r = fs::unlink_beneath(tree_fd.get(), path); !r) {
        skip(path, "delete from the workspace: " + r.error().message());
        continue;
      }
      ++counts.deleted;
      continue;
    }
    if (S_ISDIR(st.st_mode)) {
      skip(path, fs::exists(project.root + "/" + path + "/.git")
                     ? "a submodule or nested git repository (its own work is not carried)"
                     : "a directory");
      continue;
    }
    if (!S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) {
      skip(path, "not a regular file or symbolic link");
      continue;
    }
    if (auto r = fs::copy_beneath(project_fd.get(), tree_fd.get(), path, {}); !r) {
      skip(path, r.error().message());
      continue;
    }
    (x == '?' || x == 'A' ? counts.added : counts.modified) += 1;
  }
  notes.push_back("--allow-dirty carried in " + std::to_string(counts.modified) + " modified, " +
                  std::to_string(counts.added) + " added and " + std::to_string(counts.deleted) +
                  " deleted files (ignored files are never carried)");
  return {};
}

}  // namespace chock::workspace::build
