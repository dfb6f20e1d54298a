// Where sessions are kept: the data directory, ids, session.json, locks.
#pragma once

#include <sys/types.h>

#include <string>

#include "chock/workspace.hpp"

namespace chock::workspace::store {

// <data dir>/<name>; with `make`, made (`mode`, the data directory 0700) when missing.
Expected<std::string> data_subdir(const std::string& name, mode_t mode, bool make);
// <data dir>/workspaces, made (0700) when missing.
Expected<std::string> workspaces_dir();
// Makes a fresh, empty session directory with a new random id.
Expected<Session> make_session_dir(Kind kind, const std::string& project);
// Every session directory, by id (one whose session.json is gone or damaged too).
Expected<std::vector<std::string>> session_ids();
std::int64_t now();
// Renames a removed session's directory into <data dir>/trash/, for
// sweep_trash to delete: one rename, whatever its size; the session's held
// overlay, if any, goes with it and is let go by the sweeper. Where it cannot
// be renamed there (another file system), lets the overlay go and deletes it now.
Expected<void> discard(const std::string& dir);

}  // namespace chock::workspace::store
