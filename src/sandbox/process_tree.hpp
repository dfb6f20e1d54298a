// The three processes of a call, after the first clone:
//
//   caller (chock)      clone3(CLONE_PIDFD[|CLONE_INTO_CGROUP]) -> middle
//    └─ middle          drops a root caller's uid, closes inherited fds,
//        │              unshare(USER|NS|PID|IPC[|NET]) in one call, id maps
//        └─ keeper      pid 1 of the new pid namespace: watches the program's
//            │          tree end, reaps, forwards signals, exits with its status
//            └─ program pid 2: setsid, mount tree, pivot_root, capabilities,
//                       no_new_privs, Landlock, keyring, seccomp, rlimits, exec
//
// System calls only from here on: everything was built into the Launch.
#pragma once

#include <cstdint>

#include "sandbox/launch.hpp"

namespace chock::sandbox {

// clone3 with CLONE_PIDFD (and CLONE_INTO_CGROUP when cgroup_fd >= 0),
// falling back to clone(2) where clone3 answers ENOSYS and no cgroup is asked
// for. Returns the pid (0 in the child) or -1 with errno; *pidfd is set in the parent.
long clone_with_pidfd(int* pidfd, int cgroup_fd) noexcept;

[[noreturn]] void middle_main(Launch& launch) noexcept;

}  // namespace chock::sandbox
