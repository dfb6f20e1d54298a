// The project a call is for: found upwards from a directory, as git finds
// its repository. The workspace's face to the floors above it (doctor, the
// command line): the rest of workspace/ is its own (docs/architecture.md).
#pragma once

#include <string>

#include "chock/error.hpp"

namespace chock::workspace {

struct Project {
  std::string root;  // absolute real path; a git project: its top level
  bool git = false;
  std::string git_dir;     // the project's own git dir (a linked worktree's admin dir, or .git)
  std::string common_dir;  // the repository's common dir
  // The commit checked out; empty when the repository has none. Read from
  // git's files, not asked of git: a base is checked out from `head^{commit}`,
  // so one that names no commit makes none.
  std::string head;
};

// Looks for a .git upwards from `dir`. Refuses a repository the caller does
// not own: host-side git would run its configuration.
Expected<Project> find_project(const std::string& dir);
// The same without asking git for HEAD (`head` stays empty): no git process.
// `check_owner` false: a repository of another uid is located, not refused
// (for doctor, which reports it and runs no git there).
Expected<Project> locate_project(const std::string& dir, bool check_owner = true);

}  // namespace chock::workspace
