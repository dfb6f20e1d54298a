// The keeper's witness of how the program's processes ended. Some limits end
// a program without a signal (an fd bomb gets EMFILE, a fork bomb EAGAIN, a
// memory hog ENOMEM), so the keeper traces the program's process tree with
// ptrace (PTRACE_SEIZE; the program itself cannot call ptrace, seccomp kills
// it) and samples each process as it ends, before it lets go of its files and
// memory. Everything here runs in the keeper after the fork: system calls
// only, no allocation.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

namespace chock::exit_watch {

// A process of the call the filter killed, and for which system call.
struct FilterKill {
  std::int32_t pid = 0;  // in the call's pid namespace
  char call[24] = {};    // "ptrace"
  char comm[16] = {};    // its /proc/<pid>/comm, printable ASCII only ('?' for the rest)
};
inline constexpr std::size_t kFilterKillsKept = 4;

// What the keeper saw, sent to the host side as raw bytes when the program
// has ended. Each field is evidence for one limit; none names a limit alone.
struct Evidence {
  std::uint32_t traced = 0;          // 1: the program was seized, the rest means something
  std::uint32_t proc = 0;            // 1: a procfs of the sandbox's pid namespace was readable
  std::uint32_t tasks_peak = 0;      // most live tasks of the program's tree at one time
  std::uint32_t exit_fds_max = 0;    // most open fds a task held as it failed (exit code != 0)
  std::uint64_t exit_data_max = 0;   // largest VmData (bytes) of a task as it failed
  std::uint32_t xfsz_efbig = 0;      // SIGXFSZ deliveries right after a system call failed with EFBIG
  std::uint32_t xcpu_over_soft = 0;  // SIGXCPU deliveries to a task whose own CPU time passed `cpu_soft`
  std::uint64_t cpu_ticks_max = 0;   // largest own CPU time (clock ticks) seen at such a delivery
  std::uint64_t memory_peak = 0;     // most resident memory of the call's processes, summed (measured)
  std::uint32_t memory_samples = 0;  // how often it was measured
  std::uint32_t memory_over = 0;     // 1: the sum passed memory_limit and the keeper ended the call
  std::uint32_t write_execute_refused = 0;    // calls the write-xor-execute rules refused (EPERM)
  char write_execute_program[24] = {};        // the first refused process's executable (base name)
  std::uint32_t user_namespace_refused = 0;   // clone(CLONE_NEWUSER) calls answered ENOSPC
  char user_namespace_program[24] = {};       // the first that asked
  std::uint32_t memfd_sealed = 0;             // memfd_create calls the keeper made non-executable
  std::uint32_t memfd_unsealed = 0;           // ... and calls it could not (their memfd may be run)
  std::uint64_t net_no_route = 0;             // the call's network namespace: Ip OutNoRoutes + Ip6OutNoRoutes
  std::uint32_t filter_kill_count = 0;        // processes the filter killed, all of them
  FilterKill filter_kills[kFilterKillsKept];  // the first few
  FilterKill last_filter_kill;                // the latest
  std::uint32_t untraced_clone_refused = 0;   // clone(CLONE_UNTRACED) answered EPERM
  std::uint32_t sanitizer_tracer_refused = 0;  // ... with exactly LeakSanitizer's tracer's flags
  // 1: the filter had killed a process and then no process left could ever
  // go on (stuck_watch.hpp): the keeper ended the call at once.
  std::uint32_t never_ending = 0;
};

// Keeper state: fixed size, built before the fork.
struct Watch {
  int proc_fd = -1;                  // a procfs of the sandbox pid namespace, or -1
  bool find_proc = false;            // proc_fd < 0: open the sandbox's own /proc when first needed
  std::uint64_t cpu_soft_ticks = 0;  // RLIMIT_CPU soft, in clock ticks (sysconf before the fork)
  bool seal_memfd = false;           // this kernel has MFD_NOEXEC_SEAL (probed before the fork)
  std::uint64_t memory_limit = 0;    // bytes the keeper measures the call against; 0: not its job
  bool count_network = false;        // the call has a network namespace of its own: read its counters
  std::uint32_t tasks_live = 0;
  Evidence evidence;
};

// Options for PTRACE_SEIZE: follow every fork, vfork and thread, stop each
// task at exit and at the filter's SECCOMP_RET_TRACE, and kill the tracees
// if the keeper dies.
unsigned long seize_options() noexcept;

// The keeper's /proc, when it is a procfs of the keeper's own pid namespace
// (it reads /proc/self as 1): the program's pivot_root moved the keeper's
// root to the sandbox's, whose /proc is the sandbox's pid namespace. Opened
// once, when evidence first needs it; -1 until the program has pivoted.
int proc_dir(Watch& watch) noexcept;

// Whether memfd_create takes MFD_NOEXEC_SEAL here (Linux 6.3+). Before the fork.
bool kernel_seals_memfd() noexcept;

// A detached procfs of the caller's pid namespace (fsopen + fsmount, so it is
// attached nowhere in the mount tree), or -1 with errno.
int open_private_proc() noexcept;

// Seizes `pid` (the keeper's freshly forked program). 0, or errno.
int seize(Watch& watch, pid_t pid) noexcept;

// For each waitpid(-1, &status, __WALL) result in the keeper. Returns true
// when `status` was a ptrace stop, which it recorded and resumed; false when
// it was an end (exit or signal) for the keeper's own handling. Counts ends of
// traced tasks either way.
bool on_wait(Watch& watch, pid_t pid, int status) noexcept;

// The call's own network namespace (the keeper's) counts every packet that
// found no route: a connect or a send to any address but loopback, a name
// lookup through the host's resolver. Read once, as the program has ended.
void read_network_counters(Watch& watch) noexcept;

// Memory without a cgroup: the keeper sums the resident anonymous and shared
// memory (RssAnon + RssShmem) of every process of the call from the
// sandbox's /proc, every few milliseconds, the nearer the limit the more
// often, and ends the whole call when the sum passes `memory_limit`.
// A page two processes share after a fork counts twice; the keeper's own
// memory (pid 1) does not count.
inline constexpr long kMemoryIntervalMinUsec = 5'000;
inline constexpr long kMemoryIntervalMaxUsec = 200'000;
// The fastest a call is assumed to fill memory, for the next interval: the
// limit can be passed by about what it fills in kMemoryIntervalMinUsec.
inline constexpr std::uint64_t kMemoryFillBytesPerSecond = 8ULL << 30;
// Microseconds until the next measurement when `used` of `limit` is resident.
long memory_interval_usec(std::uint64_t limit, std::uint64_t used) noexcept;
// Measures now into `used`; true when the call passed its limit (the caller
// ends it).
bool measure_memory(Watch& watch, std::uint64_t* used) noexcept;

}  // namespace chock::exit_watch
