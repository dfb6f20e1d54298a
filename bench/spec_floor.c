// The floor under any sandbox that keeps the spec's promises on this machine:
// namespace_floor.c's unshare and id maps, then the least the spec asks on
// top, done with plain system calls and no error reporting beyond the exit
// code. A keeper as pid 1 that forks the program as pid 2; the program, in a
// new session, builds the spec's mount tree (a tmpfs root, the toolchain
// bound read-only, a fresh procfs with its 20 entries masked then made
// read-only, a /dev of six nodes with pts and shm, a capped /tmp), pivots
// into it, detaches the old root and runs /bin/true.
// Left out, so this is a lower bound: seccomp, Landlock, the capability and
// rlimit steps, closing descriptors, any checking or reporting.
//   cc -O2 -static -o /tmp/spec_floor bench/spec_floor.c
//   /tmp/spec_floor [PROGRAM ARG...]   (/bin/true when none is given)
#include "floor_namespaces.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static const char* const kToolchain[] = {"usr", "bin", "lib", "lib64", "sbin", "etc"};
static const char* const kMasked[] = {
    "cmdline",  "version",     "kallsyms",    "config.gz",  "kcore",         "modules",    "iomem",
    "ioports",  "mtrr",        "sched_debug", "timer_list", "latency_stats", "interrupts", "schedstat",
    "slabinfo", "vmallocinfo", "keys",        "key-users",  "sysrq-trigger", "kmsg"};
static const char* const kDevices[] = {"null", "zero", "full", "random", "urandom", "tty"};

// A read-only bind of the host's directory HOST at NAME under the new root.
static int bind_ro(const char* host, const char* name) {
  if (mkdir(name, 0755) != 0) return -1;
  if (mount(host, name, NULL, MS_BIND | MS_REC, NULL) != 0) return -1;
  return mount(NULL, name, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL);
}

static int build_tree(void) {
  char path[64], link[64];
  if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) return 1;
  if (mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") != 0 || chdir("/tmp") != 0) return 2;
  for (size_t i = 0; i < sizeof kToolchain / sizeof *kToolchain; i++) {
    snprintf(path, sizeof path, "/%s", kToolchain[i]);
    ssize_t n = readlink(path, link, sizeof link - 1);
    if (n > 0) {
      link[n] = 0;
      if (symlink(link, kToolchain[i]) != 0) return 3;
    } else if (access(path, F_OK) == 0 && bind_ro(path, kToolchain[i]) != 0) {
      return 3;
    }
  }
  int fd = open(".empty", O_WRONLY | O_CREAT | O_CLOEXEC, 0444);
  if (fd < 0) return 4;
  close(fd);
  if (mkdir("proc", 0555) != 0 || mount("proc", "proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) != 0)
    return 4;
  for (size_t i = 0; i < sizeof kMasked / sizeof *kMasked; i++) {
    snprintf(path, sizeof path, "proc/%s", kMasked[i]);
    if (mount(".empty", path, NULL, MS_BIND, NULL) != 0 && errno != ENOENT) return 4;
  }
  if (mount(NULL, "proc", NULL, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) != 0)
    return 4;
  if (mkdir("dev", 0755) != 0 || mount("tmpfs", "dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755") != 0)
    return 5;
  for (size_t i = 0; i < sizeof kDevices / sizeof *kDevices; i++) {
    char host[64];
    snprintf(host, sizeof host, "/dev/%s", kDevices[i]);
    snprintf(path, sizeof path, "dev/%s", kDevices[i]);
    int node = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (node < 0) return 5;
    close(node);
    if (mount(host, path, NULL, MS_BIND, NULL) != 0) return 5;
  }
  if (mkdir("dev/pts", 0755) != 0 ||
      mount("devpts", "dev/pts", "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666,mode=620") !=
          0 ||
      symlink("pts/ptmx", "dev/ptmx") != 0)
    return 5;
  if (mkdir("dev/shm", 01777) != 0 ||
      mount("tmpfs", "dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "size=64m") != 0)
    return 5;
  if (mkdir("tmp", 01777) != 0 ||
      mount("tmpfs", "tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777,size=256m") != 0)
    return 6;
  if (syscall(SYS_pivot_root, ".", ".") != 0 || umount2(".", MNT_DETACH) != 0 || chdir("/") != 0) return 7;
  if (mount(NULL, "/", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL) != 0) return 8;
  return 0;
}

static int wait_for(pid_t pid) {
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid) return 1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int main(int argc, char** argv) {
  if (floor_enter_namespaces(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC) != 0)
    return 1;
  pid_t keeper = fork();
  if (keeper == 0) {
    pid_t program = fork();
    if (program == 0) {
      setsid();
      int rc = build_tree();
      if (rc != 0) {
        fprintf(stderr, "spec_floor: mount tree step %d: %s\n", rc, strerror(errno));
        _exit(125);
      }
      char* true_args[] = {"/bin/true", NULL};
      char** args = argc > 1 ? argv + 1 : true_args;
      execv(args[0], args);
      _exit(127);
    }
    _exit(wait_for(program));
  }
  return wait_for(keeper);
}
