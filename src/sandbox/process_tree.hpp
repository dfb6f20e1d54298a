// The three processes of a call:
//
//   caller (chock)      clone3(CLONE_VM|CLONE_VFORK|CLONE_PIDFD[|CLONE_INTO_CGROUP])
//    │                  -> middle, on a stack of its own; held until it ends
//    ├─ middle          drops a root caller's uid, closes inherited fds,
//    │                  unshare(USER|NS|PID|IPC[|NET]) in one call, id maps,
//    │                  gives up what forks inherit; clone3(CLONE_PARENT)
//    │                  -> keeper (in the middle's cgroup), sends its pidfd, ends
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

// The middle, for clone_on_stack: `launch` is the caller's Launch. Never returns.
int middle_entry(void* launch);

}  // namespace chock::sandbox
