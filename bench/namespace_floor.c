// The kernel's floor under any sandbox start-up on this machine: one unshare
// of the namespaces named by FLAGS (a decimal CLONE_NEW* mask), the caller's
// uid and gid mapped to themselves, one fork, exec of /bin/true, one wait.
// No mount tree, no Landlock, no seccomp. Timed beside chock and bwrap:
//   cc -O2 -static -o /tmp/namespace_floor bench/namespace_floor.c
//   hyperfine -N "/tmp/namespace_floor 2013396992" (user|mnt|pid|net|ipc)
#include "floor_namespaces.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: namespace_floor FLAGS\n");
    return 2;
  }
  if (floor_enter_namespaces(atoi(argv[1])) != 0) return 1;
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
