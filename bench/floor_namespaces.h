// The start shared by bench/namespace_floor.c and bench/spec_floor.c: one
// unshare of FLAGS and, with a user namespace, the caller's uid and gid
// mapped to themselves (setgroups denied first, as an unprivileged caller
// must). 0, or -1 with errno and a line on stderr.
#ifndef CHOCK_BENCH_FLOOR_NAMESPACES_H
#define CHOCK_BENCH_FLOOR_NAMESPACES_H

#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int floor_write_file(const char* path, const char* text) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = write(fd, text, strlen(text));
  close(fd);
  return n == (ssize_t)strlen(text) ? 0 : -1;
}

static int floor_enter_namespaces(int flags) {
  const uid_t uid = getuid();
  const gid_t gid = getgid();
  if (unshare(flags) != 0) {
    perror("floor: unshare");
    return -1;
  }
  if ((flags & CLONE_NEWUSER) == 0) return 0;
  char map[64];
  snprintf(map, sizeof map, "%u %u 1", uid, uid);
  if (floor_write_file("/proc/self/setgroups", "deny") != 0 ||
      floor_write_file("/proc/self/uid_map", map) != 0) {
    perror("floor: uid_map");
    return -1;
  }
  snprintf(map, sizeof map, "%u %u 1", gid, gid);
  if (floor_write_file("/proc/self/gid_map", map) != 0) {
    perror("floor: gid_map");
    return -1;
  }
  return 0;
}

#endif
