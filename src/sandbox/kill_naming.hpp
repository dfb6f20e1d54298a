// Naming the limit that ended a program, from everything Chock saw: the wait
// status, the cgroup's events, the floor it set and the keeper's evidence.
// The rule of this file: never name a limit that did not stop the program.
// A kill Chock cannot attribute stays unnamed.
#pragma once

#include <optional>
#include <string>

#include "chock/result.hpp"
#include "sandbox/exit_watch.hpp"
#include "sandbox/rlimits.hpp"

namespace chock {

struct KillFacts {
  std::optional<int> exit_code;
  std::optional<int> signal;
  bool ended_by_chock = false;  // timed out or cancelled: Chock's own kill, not a limit
  const rlimits::Plan* plan = nullptr;
  std::uint64_t processes_allowed = 0;  // the program's own allowance (--pids or the default)
  exit_watch::Evidence evidence;        // zeroed when the keeper could not trace
  long clock_ticks = 100;               // sysconf(_SC_CLK_TCK)
};

// Sets report.killed_by and report.killed_by_limit (or leaves them empty),
// and report.core_dump_suppressed. `report` already holds the cgroup rows.
void name_kill(const KillFacts& facts, LimitsReport& report);

// "chock: the program was stopped by the limit on open files, which is 1024",
// or "" when no limit is named.
[[nodiscard]] std::string kill_message(const LimitsReport& report);

}  // namespace chock
