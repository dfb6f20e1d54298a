// What a preloaded library adds to every exec: RUNS spawns of /bin/true with
// no LD_PRELOAD and with each LIBRARY preloaded, taking turns, outside any
// sandbox (inside a call, bench/exec_in_call.sh; the sandbox's own cost per
// exec there hides a difference of a few microseconds).
//   cc -O2 -o preload_exec bench/preload_exec.c
//   ./preload_exec RUNS LIBRARY...   (absolute paths)
// Prints, for each, the mean wall time of a spawn until it is reaped and the
// mean CPU time of the child, in microseconds.
#define _GNU_SOURCE
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { kMaxLibraries = 8 };

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static double cpu_us(const struct rusage* ru) {
  return (double)(ru->ru_utime.tv_sec + ru->ru_stime.tv_sec) * 1e6 +
         (double)(ru->ru_utime.tv_usec + ru->ru_stime.tv_usec);
}

int main(int argc, char** argv) {
  if (argc < 3 || argc - 2 > kMaxLibraries || atoi(argv[1]) <= 0) {
    fprintf(stderr, "usage: %s RUNS LIBRARY... (at most %d)\n", argv[0], kMaxLibraries);
    return 2;
  }
  const int runs = atoi(argv[1]);
  const int kinds = argc - 1;  // none, then each library
  static char env[kMaxLibraries + 1][4096];
  double wall[kMaxLibraries + 1] = {0}, cpu[kMaxLibraries + 1] = {0};
  for (int k = 1; k < kinds; ++k) {
    // The loader skips a library it cannot load with a warning, and the
    // spawn would then be timed without it.
    if (argv[k + 1][0] != '/' || access(argv[k + 1], R_OK) != 0) {
      fprintf(stderr, "%s: needs an absolute path to a readable library\n", argv[k + 1]);
      return 2;
    }
    snprintf(env[k], sizeof env[k], "LD_PRELOAD=%s", argv[k + 1]);
  }
  char* args[] = {"/bin/true", NULL};
  for (int r = 0; r < runs; ++r) {
    for (int i = 0; i < kinds; ++i) {
      const int k = (r + i) % kinds;  // the order turns with the round
      char* envp[] = {k == 0 ? NULL : env[k], NULL};
      const double start = now_us();
      pid_t pid;
      if (posix_spawn(&pid, "/bin/true", NULL, NULL, args, envp) != 0) {
        perror("posix_spawn /bin/true");
        return 1;
      }
      int status;
      struct rusage ru;
      if (wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "/bin/true failed (with %s)\n", k == 0 ? "no preload" : argv[k + 1]);
        return 1;
      }
      wall[k] += now_us() - start;
      cpu[k] += cpu_us(&ru);
    }
  }
  for (int k = 0; k < kinds; ++k)
    printf("%8.1f us wall %8.1f us CPU  %s\n", wall[k] / runs, cpu[k] / runs,
           k == 0 ? "(no preload)" : argv[k + 1]);
  return 0;
}
