// Times several commands in turns: round r runs every command once, in an
// order that rotates with r, so a change in the machine's load (this is a
// shared 2-core guest) falls on all of them alike. hyperfine runs each
// command's runs back to back instead, which lets a load change between two
// blocks pass for a difference between two programs.
//   interleave RUNS WARMUP CMD1 [ARG...] :: CMD2 [ARG...] :: ...
// Prints one line a command: the median and the 10th and 90th percentiles of
// its wall time in milliseconds, then the command. Output of the commands
// goes to /dev/null; a command that exits non-zero stops the run. With
// INTERLEAVE_CPU=1 in the environment, three more figures follow the wall
// time's: the median, 10th and 90th percentile of the CPU time (user and
// system) of the command and every process under it, in ms (interleave is
// their subreaper, so one that its parent left behind is counted too). With
// INTERLEAVE_EXIT=1, three more: the wall time to the command's own exit,
// which is what its caller waits for (the wall time above runs until every
// process under it is reaped: a teardown the command left to a process of
// its own is in that one, not in this). With INTERLEAVE_STDOUT=FILE, their
// stdout and stderr are FILE instead, opened for appending (as `>> log`).
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char** environ;

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int compare(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: interleave RUNS WARMUP CMD [ARG...] [:: CMD [ARG...]]...\n");
    return 2;
  }
  const int runs = atoi(argv[1]);
  const int warmup = atoi(argv[2]);
  char** cmds[32];
  int ncmd = 0;
  cmds[ncmd++] = &argv[3];
  for (int i = 3; i < argc; ++i) {
    if (strcmp(argv[i], "::") == 0) {
      argv[i] = NULL;
      if (ncmd == 32 || i + 1 >= argc) return 2;
      cmds[ncmd++] = &argv[i + 1];
    }
  }
  double* times = calloc((size_t)ncmd * (size_t)runs, sizeof *times);
  double* cpu = calloc((size_t)ncmd * (size_t)runs, sizeof *cpu);
  double* exits = calloc((size_t)ncmd * (size_t)runs, sizeof *exits);
  const int show_cpu = getenv("INTERLEAVE_CPU") != NULL && strcmp(getenv("INTERLEAVE_CPU"), "1") == 0;
  const int show_exit = getenv("INTERLEAVE_EXIT") != NULL && strcmp(getenv("INTERLEAVE_EXIT"), "1") == 0;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  const char* out = getenv("INTERLEAVE_STDOUT") != NULL ? getenv("INTERLEAVE_STDOUT") : "/dev/null";
  posix_spawn_file_actions_addopen(&fa, 1, out, O_WRONLY | O_APPEND | O_CREAT, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  double cpu_before = 0;
  for (int r = -warmup; r < runs; ++r) {
    for (int k = 0; k < ncmd; ++k) {
      const int c = ((r < 0 ? -r : r) + k) % ncmd;
      const double start = now_ms();
      pid_t pid;
      if (posix_spawn(&pid, cmds[c][0], &fa, NULL, cmds[c], environ) != 0) {
        perror(cmds[c][0]);
        return 1;
      }
      int status;
      if (waitpid(pid, &status, 0) != pid) return 1;
      const double exited = now_ms() - start;
      // What the command left behind is reparented here; its time counts once reaped.
      while (waitpid(-1, NULL, 0) > 0 || errno == EINTR) {
      }
      struct rusage use;
      getrusage(RUSAGE_CHILDREN, &use);
      const double cpu_now = (use.ru_utime.tv_sec + use.ru_stime.tv_sec) * 1e3 +
                             (use.ru_utime.tv_usec + use.ru_stime.tv_usec) / 1e3;
      const double took = now_ms() - start;
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "interleave: %s failed (status %d)\n", cmds[c][0], status);
        return 1;
      }
      if (r >= 0) {
        times[c * runs + r] = took;
        cpu[c * runs + r] = cpu_now - cpu_before;
        exits[c * runs + r] = exited;
      }
      cpu_before = cpu_now;
    }
  }
  for (int c = 0; c < ncmd; ++c) {
    double* t = times + c * runs;
    qsort(t, (size_t)runs, sizeof *t, compare);
    printf("%.3f %.3f %.3f", t[runs / 2], t[runs / 10], t[runs * 9 / 10]);
    if (show_cpu) {
      double* u = cpu + c * runs;
      qsort(u, (size_t)runs, sizeof *u, compare);
      printf(" %.3f %.3f %.3f", u[runs / 2], u[runs / 10], u[runs * 9 / 10]);
    }
    if (show_exit) {
      double* e = exits + c * runs;
      qsort(e, (size_t)runs, sizeof *e, compare);
      printf(" %.3f %.3f %.3f", e[runs / 2], e[runs / 10], e[runs * 9 / 10]);
    }
    for (char** a = cmds[c]; *a != NULL; ++a) printf(" %s", *a);
    printf("\n");
  }
  free(times);
  free(cpu);
  free(exits);
  return 0;
}
