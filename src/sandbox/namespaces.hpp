// Who the call runs as, and the one unshare(2) that takes every namespace.
#pragma once

#include <sys/types.h>

#include "chock/config.hpp"
#include "chock/error.hpp"
#include "sandbox/steps.hpp"

namespace chock::sandbox {

// Decided before the fork. The caller's uid and gid map to themselves; a
// root caller first becomes an unprivileged host uid (65534 unless
// Config::user), so nothing of the call ever holds uid 0.
struct Identity {
  uid_t uid = 0;
  gid_t gid = 0;
  bool drop_from_root = false;
  int unshare_flags = 0;
  char uid_map[48] = {};
  char gid_map[48] = {};
};

Expected<Identity> plan_identity(const Config& config);

// Root callers only: supplementary groups emptied, then gid, then uid.
// Keeps the process dumpable so it can still write its own id maps.
bool drop_to_identity(const Identity& identity, StepFailure* failure) noexcept;

// unshare(USER|NS|PID|IPC[|NET]) in one call, then setgroups=deny and the
// self-maps. Async-signal-safe.
bool enter_namespaces(const Identity& identity, StepFailure* failure) noexcept;

}  // namespace chock::sandbox
