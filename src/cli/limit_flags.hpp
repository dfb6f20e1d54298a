// The limit flags of `chock sandbox`: --memory --data --pids --nofile --fsize --cpu
// --cgroup. Parsed as text so a bad value gets a line naming the flag.
#pragma once

#include <string>

#include "chock/config.hpp"
#include "chock/error.hpp"
#include "cli/flags.hpp"
#include "util/fd.hpp"

namespace chock::cli {

struct LimitFlags {
  std::string memory, data, pids, nofile, fsize, cpu, cgroup;
};

// Registers the flags on a subcommand; values land in `flags` when it parses.
void add_limit_flags(Command sub, LimitFlags& flags);

// Fills config.limits and, for --cgroup, config.containment with a descriptor
// that `cgroup_dir` keeps open for the life of the call.
[[nodiscard]] Expected<void> apply_limit_flags(const LimitFlags& flags, Config& config, UniqueFd& cgroup_dir);

}  // namespace chock::cli
