#include "sandbox/clone.hpp"

#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include "util/syscalls.hpp"

// The raw call: returns what the kernel returned (the pid, or -errno) in the
// parent; the child starts on the new stack with every register but the
// result and the stack pointer as the parent's, so fn and arg are kept in
// registers the system call preserves, and the child calls fn and exits.
extern "C" long chock_clone3_raw(chock::sys::CloneArgs* args, unsigned long size, int (*fn)(void*),
                                 void* arg);

#if defined(__x86_64__)
asm(R"(
  .pushsection .text
  .globl chock_clone3_raw
  .type chock_clone3_raw, @function
chock_clone3_raw:
  mov %rdx, %r8
  mov %rcx, %r9
  mov $435, %eax
  syscall
  test %rax, %rax
  jz 1f
  ret
1:
  xor %ebp, %ebp
  mov %r9, %rdi
  call *%r8
  mov %eax, %edi
  mov $60, %eax
  syscall
  hlt
  .size chock_clone3_raw, .-chock_clone3_raw
  .popsection
)");
#define CHOCK_HAS_CLONE3_RAW 1
#elif defined(__aarch64__)
asm(R"(
  .pushsection .text
  .globl chock_clone3_raw
  .type chock_clone3_raw, %function
chock_clone3_raw:
  mov x9, x2
  mov x10, x3
  mov x8, #435
  svc #0
  cbz x0, 1f
  ret
1:
  mov x29, #0
  mov x30, #0
  mov x0, x10
  blr x9
  mov x8, #93
  svc #0
  brk #0
  .size chock_clone3_raw, .-chock_clone3_raw
  .popsection
)");
#define CHOCK_HAS_CLONE3_RAW 1
#endif

namespace chock::sandbox {

namespace {

sys::CloneArgs pidfd_args(int* pidfd, int cgroup_fd, std::uint64_t flags) noexcept {
  sys::CloneArgs args;
  args.flags = CLONE_PIDFD | flags;
  args.pidfd = reinterpret_cast<std::uint64_t>(pidfd);
  // A CLONE_PARENT child's exit signal is its parent's; clone3 wants 0 here.
  args.exit_signal = (flags & CLONE_PARENT) != 0 ? 0 : SIGCHLD;
  if (cgroup_fd >= 0) {
    args.flags |= CLONE_INTO_CGROUP;
    args.cgroup = static_cast<std::uint64_t>(cgroup_fd);
  }
  return args;
}

}  // namespace

long clone_with_pidfd(int* pidfd, int cgroup_fd, std::uint64_t flags) noexcept {
  sys::CloneArgs args = pidfd_args(pidfd, cgroup_fd, flags);
  long pid = sys::raw(SYS_clone3, sys::arg(&args), sizeof args);
  if (pid == -ENOSYS && cgroup_fd < 0) {
    // clone(2) has had CLONE_PIDFD since 5.2; the pidfd comes back through parent_tid.
    pid = sys::raw(SYS_clone, static_cast<long>(args.flags | args.exit_signal), 0, sys::arg(pidfd), 0, 0);
  }
  return pid;
}

long clone_on_stack(int* pidfd, int cgroup_fd, std::uint64_t flags, const CloneStack& stack, int (*fn)(void*),
                    void* arg) noexcept {
#ifdef CHOCK_HAS_CLONE3_RAW
  static_assert(SYS_clone3 == 435, "the assembly above names clone3 by number");
  sys::CloneArgs args = pidfd_args(pidfd, cgroup_fd, flags);
  args.stack = reinterpret_cast<std::uint64_t>(stack.base());
  args.stack_size = stack.size();
  const long rc = chock_clone3_raw(&args, sizeof args, fn, arg);
  if (rc >= 0) return rc;
  errno = static_cast<int>(-rc);
  if (errno != ENOSYS || cgroup_fd >= 0) return -1;
#else
  if (cgroup_fd >= 0) {
    errno = ENOSYS;
    return -1;
  }
#endif
  // glibc's clone() for clone(2), which has had CLONE_PIDFD since 5.2.
  return ::clone(fn, stack.top(), static_cast<int>(CLONE_PIDFD | flags) | SIGCHLD, arg, pidfd);
}

}  // namespace chock::sandbox
