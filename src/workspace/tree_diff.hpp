// What differs between two commits, read from the object store in this
// process (git_objects.hpp): what `git diff --no-renames --raw` of the two
// lists, found by walking only the trees whose ids differ. A derived base
// (base_derive.cpp) needs it on the way to every session at a new commit;
// a git process for it cost more than the walk.
#pragma once

#include <cstddef>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "workspace/git_objects.hpp"

namespace chock::workspace::tree_diff {

struct Changes {
  // The paths the new commit has other bytes, mode or type at, or newly
  // (files, links, submodules), and those it no longer has.
  std::vector<std::string> written, gone;
  // Directories of the new commit the walk went into: every one of them
  // that is a path gone or above one.
  std::set<std::string> new_dirs;
};

enum class Outcome {
  done,
  too_many,  // more than max_changes paths differ
  unread,    // an object the store does not give, or one not as git writes it: git is asked
};

struct Result {
  Outcome outcome = Outcome::unread;
  Changes changes;
};

// From the commit `from` to the commit `to` (raw ids).
Result between(git_objects::Store& store, std::string_view from, std::string_view to, std::size_t hash_size,
               std::size_t max_changes);

// Whether the repository at `common_dir` replaces objects (refs/replace/):
// git's diff reads through them, this walk does not.
bool replaces_objects(const std::string& common_dir);

}  // namespace chock::workspace::tree_diff
