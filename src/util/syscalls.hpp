// Raw system calls that glibc 2.36 does not wrap, and the constants the
// system headers may be too old to define. Every wrapper is a single
// syscall(2), so all of them are async-signal-safe.
#pragma once

#include <fcntl.h>
#include <linux/mount.h>
#include <linux/openat2.h>
#include <linux/sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

#ifndef SYS_open_tree_attr
#define SYS_open_tree_attr 467
#endif
#ifndef CLONE_INTO_CGROUP
#define CLONE_INTO_CGROUP 0x200000000ULL
#endif
#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

namespace chock::sys {

// A system call that leaves errno alone: returns the result, or -errno. For
// code running in a process that shares the caller's memory, and so its
// errno, while the caller runs too (the middle of a call).
#if defined(__x86_64__) || defined(__aarch64__)
#define CHOCK_HAS_RAW_SYSCALL 1
inline long raw(long nr, long a = 0, long b = 0, long c = 0, long d = 0, long e = 0, long f = 0) noexcept {
#if defined(__x86_64__)
  long ret = 0;
  register long r10 __asm__("r10") = d;
  register long r8 __asm__("r8") = e;
  register long r9 __asm__("r9") = f;
  __asm__ volatile("syscall"
                   : "=a"(ret)
                   : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                   : "rcx", "r11", "memory");
  return ret;
#else
  register long x8 __asm__("x8") = nr;
  register long x0 __asm__("x0") = a;
  register long x1 __asm__("x1") = b;
  register long x2 __asm__("x2") = c;
  register long x3 __asm__("x3") = d;
  register long x4 __asm__("x4") = e;
  register long x5 __asm__("x5") = f;
  __asm__ volatile("svc 0"
                   : "+r"(x0)
                   : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5)
                   : "memory", "cc");
  return x0;
#endif
}
#else
// Elsewhere through syscall(2), which sets errno: the middle then runs with
// the caller held (CLONE_VFORK), so no one else reads it meanwhile.
inline long raw(long nr, long a = 0, long b = 0, long c = 0, long d = 0, long e = 0, long f = 0) noexcept {
  const long r = ::syscall(nr, a, b, c, d, e, f);
  return r < 0 ? -errno : r;
}
#endif

// A pointer as a raw() argument.
template <typename T>
inline long arg(T* p) noexcept {
  return reinterpret_cast<long>(p);
}

// struct clone_args as of Linux 5.7 (CLONE_INTO_CGROUP); size 88 bytes.
struct CloneArgs {
  std::uint64_t flags = 0;
  std::uint64_t pidfd = 0;
  std::uint64_t child_tid = 0;
  std::uint64_t parent_tid = 0;
  std::uint64_t exit_signal = 0;
  std::uint64_t stack = 0;
  std::uint64_t stack_size = 0;
  std::uint64_t tls = 0;
  std::uint64_t set_tid = 0;
  std::uint64_t set_tid_size = 0;
  std::uint64_t cgroup = 0;
};

inline long clone3(CloneArgs* args) noexcept {
  return ::syscall(SYS_clone3, args, sizeof(CloneArgs));
}
inline int pidfd_send_signal(int pidfd, int sig) noexcept {
  return static_cast<int>(::syscall(SYS_pidfd_send_signal, pidfd, sig, nullptr, 0));
}
inline int pidfd_open(pid_t pid, unsigned flags) noexcept {
  return static_cast<int>(::syscall(SYS_pidfd_open, pid, flags));
}

// /proc/<pid> (O_PATH) of the process `pidfd` refers to, pinned: opened by
// its number, then the pidfd asked whether that process is still there. A
// process not yet reaped keeps its number, so if it is, the directory is its
// own; if it was reaped, -1 with ESRCH, never the directory of a process that
// took its number since. No allocation: usable after fork.
inline int open_proc_pinned(pid_t pid, int pidfd) noexcept {
  char path[24] = "/proc/";
  char digits[12];
  int n = 0;
  for (auto v = static_cast<unsigned>(pid); n == 0 || v != 0; v /= 10)
    digits[n++] = static_cast<char>('0' + v % 10);
  int at = 6;
  while (n > 0) path[at++] = digits[--n];
  path[at] = '\0';
  const int fd = static_cast<int>(::syscall(SYS_openat, AT_FDCWD, path, O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (fd < 0) return -1;
  if (pidfd_send_signal(pidfd, 0) != 0) {
    const int saved = errno;
    ::close(fd);
    errno = saved;
    return -1;
  }
  return fd;
}
inline int openat2(int dirfd, const char* path, std::uint64_t flags, std::uint64_t mode,
                   std::uint64_t resolve) noexcept {
  open_how how{};
  how.flags = flags;
  how.mode = mode;
  how.resolve = resolve;
  return static_cast<int>(::syscall(SYS_openat2, dirfd, path, &how, sizeof how));
}
inline int open_tree(int dirfd, const char* path, unsigned flags) noexcept {
  return static_cast<int>(::syscall(SYS_open_tree, dirfd, path, flags));
}
inline int move_mount(int from_dirfd, const char* from_path, int to_dirfd, const char* to_path,
                      unsigned flags) noexcept {
  return static_cast<int>(::syscall(SYS_move_mount, from_dirfd, from_path, to_dirfd, to_path, flags));
}
inline int fsopen(const char* fstype, unsigned flags) noexcept {
  return static_cast<int>(::syscall(SYS_fsopen, fstype, flags));
}
inline int fsconfig(int fd, unsigned cmd, const char* key, const void* value, int aux) noexcept {
  return static_cast<int>(::syscall(SYS_fsconfig, fd, cmd, key, value, aux));
}
inline int fsmount(int fd, unsigned flags, unsigned attr_flags) noexcept {
  return static_cast<int>(::syscall(SYS_fsmount, fd, flags, attr_flags));
}
// `userns_fd` is the mapping of MOUNT_ATTR_IDMAP.
inline int mount_setattr(int dirfd, const char* path, unsigned flags, std::uint64_t set, std::uint64_t clear,
                         int userns_fd = -1) noexcept {
  mount_attr attr{};
  attr.attr_set = set;
  attr.attr_clr = clear;
  if (userns_fd >= 0) attr.userns_fd = static_cast<std::uint64_t>(userns_fd);
  return static_cast<int>(::syscall(SYS_mount_setattr, dirfd, path, flags, &attr, sizeof attr));
}
inline int pivot_root(const char* new_root, const char* put_old) noexcept {
  return static_cast<int>(::syscall(SYS_pivot_root, new_root, put_old));
}
inline int close_range(unsigned first, unsigned last, unsigned flags) noexcept {
  return static_cast<int>(::syscall(SYS_close_range, first, last, flags));
}

}  // namespace chock::sys
