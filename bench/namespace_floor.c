// The kernel's floor under any sandbox start-up on this machine: one unshare
// of the namespaces named by FLAGS (a decimal CLONE_NEW* mask), the caller's
// uid and gid mapped to themselves, one fork, exec of /bin/true, one wait.
// No mount tree, no Landlock, no seccomp. Timed beside chock and bwrap:
//   cc -O2 -static -o /tmp/namespace_floor bench/namespace_floor.c
//   hyperfine -N "/tmp/namespace_floor 2013396992" (user|mnt|pid|net|ipc)
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int write_file(const char* path, const char* text) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = write(fd, text, strlen(text));
  close(fd);
  return n == (ssize_t)strlen(text) ? 0 : -1;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: namespace_floor FLAGS\n");
    return 2;
  }
  const int flags = atoi(argv[1]);
  const uid_t uid = getuid();
  const gid_t gid = getgid();
  if (unshare(flags) != 0) {
    perror("namespace_floor: unshare");
    return 1;
  }
  if (flags & CLONE_NEWUSER) {
    char map[64];
    snprintf(map, sizeof map, "%u %u 1", uid, uid);
    if (write_file("/proc/self/setgroups", "deny") != 0 || write_file("/proc/self/uid_map", map) != 0) {
      perror("namespace_floor: uid_map");
      return 1;
    }
    snprintf(map, sizeof map, "%u %u 1", gid, gid);
    if (write_file("/proc/self/gid_map", map) != 0) {
      perror("namespace_floor: gid_map");
      return 1;
    }
  }
  pid_t pid = fork();
  if (pid < 0) {
    perror("namespace_floor: fork");
    return 1;
  }
  if (pid == 0) {
    char* args[] = {"/bin/true", NULL};
    execv(args[0], args);
    _exit(127);
  }
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return 1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
