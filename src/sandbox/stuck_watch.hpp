// A call that can never end, ended at once. The filter kills a process it
// refuses (strace for its ptrace), and what that process was looking after
// can be left with nobody to go on: its child stopped or in pause() waiting
// for a tracer that is dead, a `tail` reading that child's pipe, a shell
// waiting for the tail. Without this the call waits for its deadline.
//
// "Can never end", precisely: after the filter has killed a process, every
// other process of the call's pid namespace (the keeper, pid 1, aside), in
// every one of its threads, is
//   - a zombie, or stopped (T, or t: a job-control stop the keeper let be),
//   - or asleep in a call only another process of the call can end:
//     wait4 or waitid (a child), pause or rt_sigsuspend (a signal) with no
//     POSIX timer of its own, read, readv, write or writev on a pipe made
//     inside the call (not one the host holds the other end of: the call's
//     stdin, stdout or stderr),
// and so it stays, with no task run in between, at two looks 250 ms apart,
// with no ptrace event waiting for the keeper. Anything else (running, in
// disk sleep, a timed sleep, poll, a socket, the terminal, a futex) can go
// on, and the call is left to run. A stopped process with a sibling that
// could still send it SIGCONT is therefore never ended (the sibling runs or
// sleeps on something the rule does not count), and a job-control stop at
// an interactive shell leaves the shell reading its terminal.
//
// What /proc cannot show: a timer set with alarm(2) or setitimer(2). A
// process in pause() whose only way on is such a timer, in a call where the
// filter killed a process, is ended with the rest.
//
// Runs in the keeper (after the fork): system calls only, no allocation.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

namespace chock::stuck_watch {

inline constexpr long kIntervalUsec = 250'000;
// A call with more tasks than this is not looked at (it can go on).
inline constexpr std::uint32_t kMaxTasks = 4096;
inline constexpr std::size_t kHostPipesKept = 16;

struct Watch {
  bool armed = false;                             // the filter killed a process: look every kIntervalUsec
  bool ended = false;                             // the call was ended: look no more
  std::uint64_t host_pipes[kHostPipesKept] = {};  // inodes of the pipes the host holds the other end of
  std::size_t host_pipe_count = 0;
  std::uint64_t last_look_ns = 0;
  bool stuck_before = false;       // the last look found every process stuck
  std::uint64_t last_runs = 0;     // ... and its tasks had run this often (schedstat), summed
  std::uint64_t last_tasks = 0;    // ... and this many tasks
  std::uint64_t last_tid_sum = 0;  // ... whose ids summed to this
};

// Before the program is made: the pipes among `fds` (the keeper's, which
// the program inherits), whose other ends are the host's.
void note_host_pipes(Watch& watch, const int* fds, std::size_t count) noexcept;

// Called at each tick of the keeper's timer once `armed`: true when the call
// can never end (above). `proc_fd`: the call's procfs (exit_watch::proc_dir).
bool never_ends(Watch& watch, int proc_fd) noexcept;

}  // namespace chock::stuck_watch
