// What became of a sandboxed call.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace chock {

// A step of the sandbox's own setup that failed, by name, with its errno.
struct SetupFailure {
  std::string step;    // "mount_tree", "pivot_root", "landlock_restrict", ...
  int code = 0;        // errno
  std::string detail;  // the path or object the step was working on, if any
};

struct LandlockReport {
  int abi = 0;                        // what the kernel answered
  std::uint64_t handled = 0;          // filesystem rights the ruleset handles
  std::vector<std::string> missing;   // rights the spec wants that this ABI lacks
  bool scoped_abstract_unix = false;  // ABI 6+
  bool scoped_signals = false;        // ABI 6+
};

enum class CgroupState {
  ok,           // Chock made and limited a cgroup for this call
  off,          // not asked for
  unsupported,  // asked for and not possible here; `reason` says why
  supplied,     // the caller's own cgroup: nothing written, nothing read
};

struct LimitsReport {
  // The rlimit floor as applied: resource name ("nofile") and soft/hard values.
  struct Rlimit {
    std::string name;
    std::uint64_t soft = 0;
    std::uint64_t hard = 0;
  };
  std::vector<Rlimit> rlimits;
  CgroupState cgroup = CgroupState::off;
  std::string cgroup_reason;                // for unsupported
  std::optional<std::uint64_t> memory_max;  // as written to memory.max
  std::optional<std::uint64_t> pids_max;    // as written to pids.max
  std::uint64_t memory_oom_kills = 0;       // memory.events oom_kill
  std::uint64_t memory_max_events = 0;      // memory.events max
  std::uint64_t pids_max_events = 0;        // pids.events max
  // Where memory.max is not ours to write, Chock measures the call itself:
  // the limit it measured against, why, and the most it saw.
  std::optional<std::uint64_t> memory_measured_limit;
  std::string memory_measured_why;  // "cgroup v2 memory is unavailable here", ...
  std::uint64_t memory_measured_peak = 0;
  std::uint64_t memory_measured_samples = 0;
  // killed_by "disk" or "cache": what the guard saw ("the call wrote 64 MiB ...").
  std::string disk_reason;
  // memory, processes, open_files, file_size, cpu_time; empty when no limit ended it.
  // (core_dump is never a cause: see core_dump_suppressed.)
  std::string killed_by;
  std::uint64_t killed_by_limit = 0;  // the value of that limit
  // The program died of a signal that dumps core and none was written, because
  // the floor sets RLIMIT_CORE to 0. Never a cause of death by itself.
  bool core_dump_suppressed = false;
};

// A process of the call the seccomp filter killed, and the call it made.
struct FilterKill {
  int pid = 0;          // in the call's pid namespace
  std::string command;  // its comm, printable ASCII ('?' for the rest)
  std::string call;     // "ptrace"
};

struct Result {
  std::optional<int> exit_code;               // the program exited with this code
  std::optional<int> signal;                  // or a signal ended it
  std::optional<SetupFailure> setup_failure;  // or Chock could not build the sandbox
  std::optional<int> exec_error;              // or execve failed with this errno
  // The keeper ended without its report of the program's end (exit_code is
  // then the keeper's own status, which may not be the program's).
  bool report_lost = false;
  bool timed_out = false;
  bool cancelled = false;
  std::chrono::nanoseconds duration{};
  bool write_execute_relaxed = false;
  // "sealed": every memfd of the call was made non-executable (MFD_NOEXEC_SEAL);
  // else "open (why)" on a kernel or machine where Chock could not.
  std::string memfd_exec;
  // Every process the filter killed (the first four named), grandchildren
  // included; Chock said each on stderr the moment it happened.
  // Packets of the call that found no route (its network namespace's
  // OutNoRoutes, IPv4 and IPv6): connections and lookups it tried and was
  // refused with ENETUNREACH. 0 with --net host, where it is not counted.
  std::uint64_t network_unreachable = 0;
  // --net filtered: Chock's lines for what its resolver, relay and broker
  // refused (a name, a port, an address no name gave), one per host and
  // reason; the connections themselves are in the judge's summary.
  std::vector<std::string> network_refusals;
  bool network_filtered = false;  // the call had Network::filtered
  // Calls the write-xor-execute rules refused (a writable and executable
  // mapping): what a JIT without sandbox.jit meets.
  std::uint64_t write_execute_refused = 0;
  std::string write_execute_program;  // the first refused process's executable ("chromium")
  // clone(CLONE_NEWUSER) calls refused (ENOSPC): a sandbox inside the call
  // (Chromium's, bubblewrap's) asking for a user namespace; said at once.
  std::uint64_t user_namespace_refused = 0;
  std::string user_namespace_program;
  std::uint64_t filter_kill_count = 0;
  std::vector<FilterKill> filter_kills;
  // The filter had killed `never_ending_after` and then no process left could
  // ever go on (each stopped, a zombie, or waiting on another of the call):
  // Chock ended the call at once instead of at its deadline.
  bool never_ending = false;
  FilterKill never_ending_after;
  // clone(CLONE_UNTRACED) refused (EPERM): a child the keeper could not
  // watch; of them, with exactly LeakSanitizer's tracer's flags.
  std::uint64_t untraced_clone_refused = 0;
  std::uint64_t sanitizer_tracer_refused = 0;
  LandlockReport landlock;
  LimitsReport limits;

  // The status `chock` exits with: the program's code; 128+N for a signal;
  // 125 for a setup failure; 126 not executable; 127 not found.
  [[nodiscard]] int exit_status() const noexcept;
  // One JSON object (the --result file), and the same as a value (the
  // session log's tool.result: not dumped and parsed again).
  [[nodiscard]] std::string to_json() const;
  [[nodiscard]] nlohmann::json json() const;
};

}  // namespace chock
