// How the processes of a call are made: clone3 with CLONE_PIDFD, so each is
// watched, signalled and reaped by descriptor. clone_on_stack is for a child
// that shares the caller's memory (CLONE_VM) and so needs a stack of its own:
// it runs fn(arg) there and exits with its return value. glibc's clone()
// does this for clone(2); glibc 2.36 offers no clone3 that does, and clone3
// is what takes CLONE_INTO_CGROUP.
#pragma once

#include <cstdint>

#include "sandbox/launch.hpp"

namespace chock::sandbox {

// clone3 with CLONE_PIDFD, `flags` (CLONE_PARENT, say) and CLONE_INTO_CGROUP
// when cgroup_fd >= 0, falling back to clone(2) where clone3 answers ENOSYS and
// no cgroup is asked for. Returns the pid (0 in the child) or -errno, and
// leaves errno alone (the middle calls it); *pidfd is set in the parent.
long clone_with_pidfd(int* pidfd, int cgroup_fd, std::uint64_t flags = 0) noexcept;

// The same, the child on `stack` running fn(arg),
// with glibc's clone(2) as the fallback. Returns the child's pid, or -1 with
// errno; *pidfd is set in the parent.
long clone_on_stack(int* pidfd, int cgroup_fd, std::uint64_t flags, const CloneStack& stack, int (*fn)(void*),
                    void* arg) noexcept;

}  // namespace chock::sandbox
