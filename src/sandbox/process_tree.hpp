// The three processes of a call:
//
//   caller (chock)      clone3(CLONE_VM|CLONE_FILES|CLONE_PIDFD[|CLONE_INTO_CGROUP])
//    │                  -> middle, on a stack of its own; builds the plan
//    │                  meanwhile, writes a root caller's middle's id maps,
//    │                  hands the plan over, waits for the middle to end
//    ├─ middle          drops a root caller's uid (never dumpable after),
//    │                  unshare(USER|NS|PID|IPC[|NET]) in one call, id maps
//    │                  (its own unless root's), gives up what forks inherit,
//    │                  waits for the plan; clone3(CLONE_PARENT)
//    │                  -> keeper (in the middle's cgroup), sends its pidfd, ends
//    └─ keeper          the caller's child, pid 1 of the new pid namespace:
//        │              closes all but the call's descriptors, watches the
//        │              program's tree end, reaps, forwards signals, exits
//        │              with its status
//        └─ program     pid 2, CLONE_VM with the keeper until its exec: setsid,
//                       mount tree, pivot_root, capabilities, Landlock,
//                       keyring, seccomp, rlimits, exec
//
// The middle runs in the caller's memory, alongside it, on a stack of its
// own: raw system calls only (errno is shared too), and no glibc call that
// acts on the whole process (setresuid in glibc signals every thread of it).
// The program runs in the keeper's memory (a copy of the caller's) until its
// exec. Where raw system calls are not built (not x86-64 or arm64), the
// middle shares nothing and the caller waits for it (CLONE_VFORK).
#pragma once

#include <signal.h>

#include <cstdint>

#include "sandbox/launch.hpp"

namespace chock::sandbox {

// The middle, for clone_on_stack: `launch` is the caller's Launch. Never returns.
int middle_entry(void* launch);

// Sent by the caller to the keeper when Chock ends the call itself (its
// timeout, a cancel, a limit of its own): the keeper kills every other
// process and reports the program's end with what it counted, as for any
// other end. Honoured only from outside the call's pid namespace. A keeper
// that has not reported within kEndCallGraceMs is killed.
inline constexpr int kEndCallSignal = SIGPWR;
inline constexpr int kEndCallGraceMs = 500;

}  // namespace chock::sandbox
