// --allow-dirty: the project's uncommitted work, copied into a new worktree
// as uncommitted work there too (modified, added and deleted files).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "util/fd.hpp"
#include "workspace/build.hpp"
#include "workspace/fs.hpp"
#include "workspace/git.hpp"

namespace chock::workspace::build {

namespace {

struct Counts {
  int modified = 0, added = 0, deleted = 0;
};

bool is_denied(const Session& s, const std::string& path) {
  return std::find(s.deny.begin(), s.deny.end(), path) != s.deny.end();
}

// Makes the parents of `rel` below the tree, refusing symbolic links on the way.
Expected<void> parents_beneath(const std::string& tree, const std::string& rel) {
  UniqueFd root(::open(tree.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!root) return sys_error("open", tree);
  auto dir = fs::open_dir_beneath(root.get(), fs::parent_of(rel), true);
  if (!dir) return std::move(dir).error();
  ::close(*dir);
  return {};
}

}  // namespace

Expected<void> import_dirty(const Session& s, const Project& project, Notes& notes) {
  auto env = git::repo_env(project.git_dir, project.root);
  auto status = git::capture({"status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames"}, env,
                             "read the project's uncommitted changes");
  if (!status) return std::move(status).error();
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
    std::string from = project.root + "/" + path;
    std::string to = s.tree() + "/" + path;
    struct stat st {};
    if (::lstat(from.c_str(), &st) != 0) {
      if (errno != ENOENT) {
        skip(path, sys_error("stat").message());
        continue;
      }
      if (fs::exists(to) && ::unlink(to.c_str()) != 0) {
        skip(path, sys_error("delete from the workspace").message());
        continue;
      }
      ++counts.deleted;
      continue;
    }
    if (S_ISDIR(st.st_mode)) {
      skip(path, fs::exists(from + "/.git")
                     ? "a submodule or nested git repository (its own work is not carried)"
                     : "a directory");
      continue;
    }
    if (!S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) {
      skip(path, "not a regular file or symbolic link");
      continue;
    }
    if (auto r = parents_beneath(s.tree(), path); !r) {
      skip(path, r.error().message());
      continue;
    }
    if (auto r = fs::copy_entry(from, to); !r) {
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
