// What of the caller's PATH the call does not have. The call gets the
// caller's PATH, but only the toolchain, the project and the binds are in its
// tree: an entry such as ~/.cargo/bin or a pyenv shim directory is absent
// inside, and a command found there outside may be another program inside
// (or none). Chock says so rather than let the wrong python3 run silently.
#pragma once

#include <string>
#include <vector>

#include "chock/config.hpp"

namespace chock::session {

struct PathReport {
  std::vector<std::string> absent;  // PATH entries that exist outside and not inside
  std::string command_line;         // set when the command resolves outside to an absent entry
};

// `path` is the call's PATH; `config` says what is inside (its binds and
// overlays, besides the toolchain every call has).
PathReport check_path(const std::string& path, const Config& config);

}  // namespace chock::session
