#include "sandbox/kill_naming.hpp"

#include <signal.h>

#include <algorithm>

#include "util/size.hpp"

namespace chock {

namespace {

constexpr std::uint64_t kMiB = 1ULL << 20;

rlim_t soft_of(const rlimits::Plan* plan, int resource) {
  if (plan == nullptr) return RLIM_INFINITY;
  const rlimits::Entry* e = rlimits::find(*plan, resource);
  return e != nullptr ? e->soft : RLIM_INFINITY;
}

bool dumps_core(int sig) {
  switch (sig) {
    case SIGQUIT:
    case SIGILL:
    case SIGTRAP:
    case SIGABRT:
    case SIGBUS:
    case SIGFPE:
    case SIGSEGV:
    case SIGXCPU:
    case SIGXFSZ:
    case SIGSYS:
      return true;
    default:
      return false;
  }
}

void name(LimitsReport& r, const char* what, std::uint64_t limit) {
  r.killed_by = what;
  r.killed_by_limit = limit;
}

}  // namespace

void name_kill(const KillFacts& f, LimitsReport& r) {
  r.killed_by.clear();
  r.killed_by_limit = 0;
  r.core_dump_suppressed = f.signal && dumps_core(*f.signal) && soft_of(f.plan, RLIMIT_CORE) == 0;
  const bool failed = f.signal.has_value() || (f.exit_code && *f.exit_code != 0);
  if (!failed || f.ended_by_chock) return;
  const exit_watch::Evidence& ev = f.evidence;

  // The keeper measured the call past its memory limit and ended it.
  if (ev.memory_over > 0 && r.memory_measured_limit) return name(r, "memory", *r.memory_measured_limit);
  // The cgroup's own counters are the kernel saying so.
  if (r.cgroup == CgroupState::ok && r.memory_oom_kills > 0)
    return name(r, "memory", r.memory_max.value_or(0));
  if (r.cgroup == CgroupState::ok && r.pids_max_events > 0) return name(r, "processes", f.processes_allowed);

  // A SIGXCPU the kernel sent: the task had used its soft CPU limit. The
  // SIGKILL at the hard limit follows it when the program ignores it.
  const rlim_t cpu = soft_of(f.plan, RLIMIT_CPU);
  if (ev.xcpu_over_soft > 0 && cpu != RLIM_INFINITY) return name(r, "cpu_time", cpu);
  // SIGXFSZ on the return of a system call that failed with EFBIG.
  const rlim_t fsize = soft_of(f.plan, RLIMIT_FSIZE);
  if (ev.xfsz_efbig > 0 && fsize != RLIM_INFINITY) return name(r, "file_size", fsize);
  // A task ended in failure with its descriptor table full.
  const rlim_t nofile = soft_of(f.plan, RLIMIT_NOFILE);
  if (nofile != RLIM_INFINITY && ev.exit_fds_max > 0 && ev.exit_fds_max >= nofile)
    return name(r, "open_files", nofile);
  // The tree held every process it was allowed: the next fork got EAGAIN.
  if (f.processes_allowed > 0 && soft_of(f.plan, RLIMIT_NPROC) != RLIM_INFINITY &&
      ev.tasks_peak >= f.processes_allowed)
    return name(r, "processes", f.processes_allowed);
  // A task ended in failure with its data segment within one allocation of
  // RLIMIT_DATA. The slack is what a program plausibly asks for at once.
  const rlim_t data = soft_of(f.plan, RLIMIT_DATA);
  if (data != RLIM_INFINITY && ev.exit_data_max > 0) {
    const std::uint64_t slack = std::min<std::uint64_t>(64 * kMiB, data / 4);
    if (ev.exit_data_max + slack >= data) return name(r, "memory", data);
  }
}

std::string kill_message(const LimitsReport& r) {
  if (r.killed_by.empty()) return {};
  if (r.killed_by == "disk")
    return "chock: the program was stopped by the disk limit: " + r.disk_reason +
           " (every process of the call was stopped)";
  if (r.killed_by == "cache")
    return "chock: the program was stopped by the cache limit: " + r.disk_reason +
           " (every process of the call was stopped)";
  std::string what;
  std::string value;
  if (r.killed_by == "memory") {
    what = "memory";
    value = format_size(r.killed_by_limit);
  } else if (r.killed_by == "processes") {
    what = "processes";
    value = std::to_string(r.killed_by_limit);
  } else if (r.killed_by == "open_files") {
    what = "open files";
    value = std::to_string(r.killed_by_limit);
  } else if (r.killed_by == "file_size") {
    what = "file size";
    value = format_size(r.killed_by_limit);
  } else if (r.killed_by == "cpu_time") {
    what = "CPU time";
    value = std::to_string(r.killed_by_limit) + " s";
  } else {
    what = r.killed_by;
    value = std::to_string(r.killed_by_limit);
  }
  std::string line = "chock: the program was stopped by the limit on " + what + ", which is " + value;
  if (r.killed_by == "memory" && r.memory_measured_limit && r.killed_by_limit == *r.memory_measured_limit)
    line += ", measured by Chock: " + r.memory_measured_why + " (the call's processes held " +
            format_size(r.memory_measured_peak / kMiB * kMiB) + ")";
  return line;
}

}  // namespace chock
