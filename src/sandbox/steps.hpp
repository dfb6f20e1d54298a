// The named steps of the sandbox's own setup, and the fixed-size record a
// process of the call sends to the caller over the report channel. A failed
// step is reported by name and errno ("landlock_restrict: EINVAL"), never as
// a bare failure.
#pragma once

#include <cstdint>

#include "sandbox/exit_watch.hpp"

namespace chock::sandbox {

enum class Step : std::uint32_t {
  none,
  close_fds,
  drop_uid,
  unshare,
  setgroups,
  uid_map,
  gid_map,
  clone_keeper,
  clone_program,
  setsid,
  userns_limit,
  loopback,
  net_routes,
  net_ruleset,
  net_sockets,
  mount_private,
  open_source,
  new_root,
  mount_tree,
  proc,
  dev,
  tmp,
  cover,
  pivot_root,
  root_readonly,
  stdin,
  chdir,
  capabilities,
  no_new_privs,
  landlock_ruleset,
  landlock_rule,
  landlock_restrict,
  keyring,
  seccomp,
  rlimits,
  exec,
  keeper_wait,  // the keeper lost its program (wait4 failed): said, never a silent 125
};

const char* step_name(Step step) noexcept;

// Where a step failed. `detail` indexes a table the caller built before the
// fork (a mount operation, a Landlock rule), or is -1.
struct StepFailure {
  Step step = Step::none;
  int error = 0;
  int detail = -1;
};

// One message on the report channel (a SOCK_SEQPACKET pair): fixed size, so
// writing one after fork needs no allocation.
struct Record {
  enum Kind : std::uint32_t {
    setup_failed = 1,  // step, error, detail
    exec_failed,       // error
    program_status,    // status (as from wait4), rusage, the keeper's evidence; sent once
                       // every process of the call but the keeper has ended
    keeper_pidfd,      // carries the keeper's pidfd as SCM_RIGHTS
    entered,           // a root caller's middle is in its namespaces: the caller writes its maps
    net_socket,        // a filtered call's socket (detail: kStubSocket...) as SCM_RIGHTS
    held_overlay,      // a clone of the overlay made inside (detail: its index in Config::overlays), to hold
  };
  std::uint32_t kind = 0;
  Step step = Step::none;
  std::int32_t error = 0;
  std::int32_t detail = -1;
  std::int32_t status = 0;
  std::int64_t user_usec = 0;
  std::int64_t system_usec = 0;
  std::int64_t max_rss_kib = 0;
  exit_watch::Evidence evidence;  // what the keeper saw of how the program's processes ended
};

// Sends one record (and optionally a descriptor). Async-signal-safe, and
// leaves errno alone (a raw system call).
void send_record(int channel, const Record& record, int fd_to_pass = -1) noexcept;

// Reports a failed step and ends the process with status 125.
[[noreturn]] void fail_step(int channel, const StepFailure& failure) noexcept;

}  // namespace chock::sandbox
