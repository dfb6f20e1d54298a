// clone3 for a child that shares the caller's memory (CLONE_VM) and so needs
// a stack of its own: the child runs fn(arg) on that stack and exits with its
// return value. glibc's clone() does this for clone(2); glibc 2.36 offers no
// clone3 that does, and clone3 is what takes CLONE_INTO_CGROUP.
#pragma once

#include <cstdint>

#include "sandbox/launch.hpp"

namespace chock::sandbox {

// clone3 with CLONE_PIDFD, `flags` and, when cgroup_fd >= 0, CLONE_INTO_CGROUP,
// the child on `stack`. Where clone3 answers ENOSYS (before 5.3, or a seccomp
// filter) and no cgroup is asked for, clone(2) through glibc. Returns the
// child's pid, or -1 with errno; *pidfd is set in the parent.
long clone_on_stack(int* pidfd, int cgroup_fd, std::uint64_t flags, const CloneStack& stack, int (*fn)(void*),
                    void* arg) noexcept;

}  // namespace chock::sandbox
