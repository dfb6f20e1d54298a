// Who the call runs as, and the one unshare(2) that takes every namespace.
#pragma once

#include <sys/types.h>

#include "chock/config.hpp"
#include "chock/error.hpp"
#include "sandbox/steps.hpp"

namespace chock::sandbox {

// Decided before the fork. The caller's uid and gid map to themselves; a
// root caller's call runs as an unprivileged host uid (65534 unless
// Config::user), so no process of the call past its setup holds uid 0.
struct Identity {
  uid_t uid = 0;
  gid_t gid = 0;
  bool drop_from_root = false;
  int unshare_flags = 0;
  char uid_map[48] = {};
  char gid_map[48] = {};
};

Expected<Identity> plan_identity(const Config& config);

// Raw system calls only, which leave errno alone: the middle runs them
// while the caller, in the same memory, runs too.

// Root callers only: supplementary groups emptied, then gid, then uid.
// `stay_dumpable` to write one's own id maps next; a process that shares a
// root caller's memory must not (every process of its new uid could trace
// it, and so write into root's memory): the caller writes its maps.
bool drop_to_identity(const Identity& identity, bool stay_dumpable, StepFailure* failure) noexcept;

// unshare(USER|NS|PID|IPC[|NET]) in one call; with `own_maps`, then
// setgroups=deny and the self-maps (write_maps on /proc/self).
bool enter_namespaces(const Identity& identity, bool own_maps, StepFailure* failure) noexcept;

// setgroups=deny, uid_map and gid_map of the process whose /proc/PID is open
// at `proc_pid_dir`.
bool write_maps(int proc_pid_dir, const Identity& identity, StepFailure* failure) noexcept;

// Sets the user namespace limit of the caller's own user namespace to 0, so
// no process in it makes one below it by any route (unshare, clone, clone3
// answer ENOSPC). Needs CAP_SYS_RESOURCE there: run it before the
// capabilities go. Async-signal-safe; on failure errno says why.
bool forbid_nested_user_namespaces() noexcept;

// Brings up the loopback interface of the caller's network namespace: the
// call's own 127.0.0.1 and ::1, which reach only the call. Needs
// CAP_NET_ADMIN there. Async-signal-safe; on failure errno says why.
bool bring_up_loopback() noexcept;

}  // namespace chock::sandbox
