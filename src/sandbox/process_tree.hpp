// The three processes of a call:
//
//   caller (chock)      clone(CLONE_VM|CLONE_VFORK|CLONE_PIDFD) -> middle;
//    │                  held until the middle ends
//    ├─ middle          drops a root caller's uid, closes inherited fds,
//    │                  unshare(USER|NS|PID|IPC[|NET]) in one call, id maps,
//    │                  gives up what forks inherit; clone3(CLONE_PARENT
//    │                  [|CLONE_INTO_CGROUP]) -> keeper, sends its pidfd, ends
//    └─ keeper          the caller's child, pid 1 of the new pid namespace:
//        │              watches the program's tree end, reaps, forwards
//        │              signals, exits with its status
//        └─ program     pid 2, CLONE_VM with the keeper until its exec: setsid,
//                       mount tree, pivot_root, capabilities, Landlock,
//                       keyring, seccomp, rlimits, exec
//
// The middle runs in the caller's memory on a stack of its own, and the
// program in the keeper's: system calls only, and no glibc call that acts
// on the whole process (setresuid in glibc signals every thread of it).
#pragma once

#include <cstdint>

#include "sandbox/launch.hpp"

namespace chock::sandbox {

// clone3 with CLONE_PIDFD, `flags` (CLONE_PARENT, say) and CLONE_INTO_CGROUP
// when cgroup_fd >= 0, falling back to clone(2) where clone3 answers ENOSYS and
// no cgroup is asked for. Returns the pid (0 in the child) or -1 with errno;
// *pidfd is set in the parent.
long clone_with_pidfd(int* pidfd, int cgroup_fd, std::uint64_t flags = 0) noexcept;

// The middle, for clone(2): `launch` is the caller's Launch. Never returns.
int middle_entry(void* launch);

}  // namespace chock::sandbox
