// Reading a git session from the host after the sandbox has had it: only
// its HEAD (parsed here) and its objects (checked first), never its config.
#pragma once

#include <string>
#include <vector>

#include "chock/workspace.hpp"
#include "workspace/git.hpp"

namespace chock::workspace::session_git {

// The session's HEAD as a commit id, resolved without git reading the admin dir.
Expected<std::string> head(const Session& s);
// Refuses an object store holding a symbolic link or a foreign alternate.
Expected<void> check_objects(const Session& s);
// git pointed at the real repository, with the session's objects readable.
git::Env env(const Session& s);
// The commit the session's work starts from: the last one applied, else the base.
std::string from(const Session& s);
// Commits in from..head, oldest first, as "<short> <subject>".
Expected<std::vector<std::string>> commits(const Session& s, const std::string& head);
// Copies the objects of from..head into the real repository and points
// refs/chock/<id> at head.
Expected<void> park(const Session& s, const std::string& head);
std::string parked_ref(const Session& s);

}  // namespace chock::workspace::session_git
