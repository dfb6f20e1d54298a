// What the reliability suite counts before and after a load, and how it
// starts and kills `chock` at a moment of its choosing.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "process.hpp"

namespace chock::test::reliability {

inline bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

inline std::size_t lines_in(const std::string& text) {
  std::size_t n = 0;
  for (char c : text) n += c == '\n' ? 1 : 0;
  return n;
}

// The short profile runs in CI; CHOCK_RELIABILITY_PROFILE=long runs the
// counts the README reports. `short_count` and `long_count` of one figure.
std::size_t profile_count(std::size_t short_count, std::size_t long_count);
bool long_profile();

// What a run of Chock could leave behind, as far as this process can see.
struct Footprint {
  std::size_t own_fds = 0;         // this process's open descriptors
  std::size_t children = 0;        // processes whose parent is this process
  std::size_t zombies = 0;         // of those, the ones not yet reaped
  std::size_t mounts_below = 0;    // host mounts below any of the watched paths
  std::size_t tmp_entries = 0;     // entries in the runs' TMPDIR
  std::size_t shm_entries = 0;     // entries in /dev/shm owned by this uid
  std::size_t data_entries = 0;    // files and directories in the data directory, outside `except`
  std::size_t cgroup_entries = 0;  // directories in this process's own cgroup v2 directory
};

struct Watched {
  std::vector<std::string> mount_roots;  // a mount below one of these is Chock's
  std::string tmp_dir;                   // the runs' TMPDIR
  std::string data_dir;                  // the runs' XDG_DATA_HOME
  // Directories of the data directory not counted: the session's own, and
  // git-cache/ (one listing of a repository's config, replaced when it
  // changes, never one a call).
  std::vector<std::string> except;
};

Footprint footprint(const Watched& watched);
std::string describe(const Footprint& f);

// `chock ARGS...` started now; `kill_after` from now it is sent SIGKILL
// (when it is still running) and reaped. Returns whether it was killed.
struct Killed {
  bool killed = false;
  int status = -1;  // exit code, 128+N for signal N
  std::string out;  // what the call wrote to stdout (kill_before only), even when chock was killed
};
Killed run_and_kill(const std::vector<std::string>& args, const RunOptions& options,
                    std::chrono::microseconds kill_after);

// A step of `chock`'s own work, found by tracing one unkilled run with
// strace: the `occurrence`-th call of `syscall` by the chock process (not its
// children). `what` names it: the call as strace shows it, or for a process
// chock spawns, that process's command line.
struct Step {
  std::string syscall;
  std::size_t occurrence = 0;
  std::string what;
};
// Why strace cannot trace and kill here ("" when it can).
std::string strace_unusable();
// The steps of `chock ARGS...` that change something (files, locks, mounts,
// a spawned process, bytes written to a descriptor other than stdio), in the
// order it takes them; `chock ARGS...` runs once, unkilled, to find them.
std::vector<Step> steps_of(const std::vector<std::string>& args, const RunOptions& options);
// `chock ARGS...` killed with SIGKILL as it enters `step` (strace's syscall
// injection: the step itself never runs). Killed or not, and its status.
Killed kill_before(const Step& step, const std::vector<std::string>& args, const RunOptions& options);
// `count` of `steps`, spread evenly from the first to the last (all when fewer).
std::vector<Step> spread(const std::vector<Step>& steps, std::size_t count);

// Every process on the machine whose command line contains `needle`.
std::vector<pid_t> processes_with(const std::string& needle);

}  // namespace chock::test::reliability
