#include "sandbox/rlimits.hpp"

#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <string>

namespace chock::rlimits {

// Deliberately not set, each for its reason:
// RLIMIT_AS: counts reserved address space, not memory; V8, Go, the JVM and the
//   sanitizers reserve many GiB they never touch, so any useful value breaks
//   them. RLIMIT_DATA (only when asked for, see prepare) bounds what one
//   program can actually write to.
// RLIMIT_STACK: exec copies it into every program and it also selects the mmap
//   layout; lowering it breaks deep recursion (compilers, parsers) and raising
//   it gains nothing, since a program can map a stack of its own.
// RLIMIT_RSS: Linux has ignored it since 2.6.
// RLIMIT_MEMLOCK: the unprivileged default is already small, locked pages are
//   charged to memory.max, and io_uring, its big user, is refused by seccomp.
// RLIMIT_SIGPENDING: the caller's value already bounds queued signals, and a
//   sandboxed program can only signal the processes of its own call.
// RLIMIT_MSGQUEUE: POSIX message queues live in the call's own IPC namespace,
//   which ends with the call, and the caller's value bounds them meanwhile.

namespace {

Error bad(const std::string& flag, std::uint64_t value, const std::string& why) {
  return Error{
      "limit " + flag + " " + std::to_string(value) + " cannot be honoured: " + why, {}, 0, Errc::bad_config};
}

std::string hard_text(rlim_t hard) {
  return hard == RLIM_INFINITY ? std::string("unlimited") : std::to_string(hard);
}

void add(Plan& plan, int resource, rlim_t soft, rlim_t hard) {
  plan.entries.at(plan.count++) = Entry{resource, soft, hard};
}

// An explicit value must fit under the caller's hard limit: a process in a
// user namespace can lower a hard limit but never raise it.
Expected<rlim_t> explicit_value(const char* flag, std::uint64_t value, std::uint64_t minimum, rlim_t hard) {
  if (value < minimum)
    return bad(flag, value, "the least Chock can run a program under is " + std::to_string(minimum));
  if (value == RLIM_INFINITY) return bad(flag, value, "that is the kernel's 'unlimited'");
  if (hard != RLIM_INFINITY && value > hard)
    return bad(flag, value, "this process's own hard limit is " + hard_text(hard) + " and cannot be raised");
  return static_cast<rlim_t>(value);
}

}  // namespace

bool release_counts_nproc_per_userns(const char* release) noexcept {
  unsigned major = 0;
  unsigned minor = 0;
  if (std::sscanf(release, "%u.%u", &major, &minor) != 2) return false;
  return major > 5 || (major == 5 && minor >= 14);
}

Machine probe_machine() {
  Machine m;
  utsname u{};
  m.nproc_per_userns = ::uname(&u) == 0 && release_counts_nproc_per_userns(u.release);
  if (std::FILE* f = std::fopen("/proc/sys/fs/nr_open", "re")) {
    unsigned long long v = 0;
    if (std::fscanf(f, "%llu", &v) == 1) m.nr_open = v;
    std::fclose(f);
  }
  // Only the resources a plan sets from them (RLIMIT_CORE is always 0).
  m.hard.fill(RLIM_INFINITY);
  for (int r : {RLIMIT_DATA, RLIMIT_NOFILE, RLIMIT_FSIZE, RLIMIT_CPU, RLIMIT_NPROC}) {
    rlimit rl{};
    if (::getrlimit(static_cast<__rlimit_resource>(r), &rl) == 0) m.hard.at(r) = rl.rlim_max;
  }
  return m;
}

Expected<Plan> prepare(const Limits& limits, const Machine& machine) {
  Plan plan;
  const auto hard = [&](int r) { return machine.hard.at(r); };
  const auto floor_default = [&](int r, std::uint64_t v) { return std::min<rlim_t>(v, hard(r)); };

  // No core files: a dump would write the program's memory, secrets included,
  // into the workspace.
  add(plan, RLIMIT_CORE, 0, 0);

  // RLIMIT_DATA only when asked for: the call's memory is bounded as a whole
  // (limits.cpp), and a per-process data limit refuses the address space
  // sanitizers reserve.
  if (limits.data_bytes) {
    auto v = explicit_value("--data", *limits.data_bytes, 1 << 20, hard(RLIMIT_DATA));
    if (!v) return std::move(v).error();
    add(plan, RLIMIT_DATA, *v, *v);
  }

  rlim_t nofile = floor_default(RLIMIT_NOFILE, Limits::kDefaultOpenFiles);
  if (limits.open_files) {
    if (*limits.open_files > machine.nr_open)
      return bad("--nofile", *limits.open_files,
                 "the kernel's ceiling (/proc/sys/fs/nr_open) is " + std::to_string(machine.nr_open));
    auto v = explicit_value("--nofile", *limits.open_files, 1, hard(RLIMIT_NOFILE));
    if (!v) return std::move(v).error();
    nofile = *v;
  }
  add(plan, RLIMIT_NOFILE, nofile, nofile);

  rlim_t fsize = floor_default(RLIMIT_FSIZE, Limits::kDefaultFileSizeBytes);
  if (limits.file_size_bytes) {
    auto v = explicit_value("--fsize", *limits.file_size_bytes, 0, hard(RLIMIT_FSIZE));
    if (!v) return std::move(v).error();
    fsize = *v;
  }
  add(plan, RLIMIT_FSIZE, fsize, fsize);

  // Soft equals hard everywhere else, because prlimit64 is reachable and a
  // soft-only limit would be raised back in one call; CPU keeps a gap so the
  // first signal is SIGXCPU.
  rlim_t cpu_hard = floor_default(RLIMIT_CPU, Limits::kDefaultCpuSeconds + kCpuHardGrace);
  rlim_t cpu_soft = std::min<rlim_t>(Limits::kDefaultCpuSeconds, cpu_hard);
  if (limits.cpu_seconds) {
    rlim_t caller = hard(RLIMIT_CPU);
    if (*limits.cpu_seconds < 1) return bad("--cpu", *limits.cpu_seconds, "the kernel treats 0 seconds as 1");
    if (*limits.cpu_seconds > (1ULL << 40))
      return bad("--cpu", *limits.cpu_seconds, "it is beyond any clock");
    if (caller != RLIM_INFINITY && *limits.cpu_seconds + kCpuHardGrace > caller)
      return bad("--cpu", *limits.cpu_seconds,
                 "the hard limit sits " + std::to_string(kCpuHardGrace) +
                     " s above it and this process's own hard limit is " + hard_text(caller));
    cpu_soft = *limits.cpu_seconds;
    cpu_hard = cpu_soft + kCpuHardGrace;
  }
  add(plan, RLIMIT_CPU, cpu_soft, cpu_hard);

  // Before 5.14 RLIMIT_NPROC counted every process of the host uid, so a
  // limit would refuse forks because of processes outside the call.
  if (machine.nproc_per_userns) {
    rlim_t nproc = floor_default(RLIMIT_NPROC, Limits::kDefaultProcesses + kOwnTasks);
    if (limits.processes) {
      if (*limits.processes < 1) return bad("--pids", *limits.processes, "the program itself is a process");
      if (*limits.processes > (1ULL << 22))
        return bad("--pids", *limits.processes, "the kernel allows at most 4194304");
      rlim_t caller = hard(RLIMIT_NPROC);
      if (caller != RLIM_INFINITY && *limits.processes + kOwnTasks > caller)
        return bad("--pids", *limits.processes,
                   "with Chock's own " + std::to_string(kOwnTasks) +
                       " processes it exceeds this process's hard limit " + hard_text(caller));
      nproc = *limits.processes + kOwnTasks;
    }
    add(plan, RLIMIT_NPROC, nproc, nproc);
  } else if (limits.processes && *limits.processes < 1) {
    return bad("--pids", *limits.processes, "the program itself is a process");
  }
  return plan;
}

Expected<Plan> prepare(const Limits& limits) {
  return prepare(limits, probe_machine());
}

int apply(const Plan& plan, int* failed_resource) noexcept {
  for (std::size_t i = 0; i < plan.count; ++i) {
    const Entry& e = plan.entries[i];
    rlimit rl{e.soft, e.hard};
    if (::syscall(SYS_prlimit64, 0, e.resource, &rl, nullptr) != 0) {
      if (failed_resource != nullptr) *failed_resource = e.resource;
      return errno;
    }
  }
  return 0;
}

const char* resource_name(int resource) noexcept {
  switch (resource) {
    case RLIMIT_CORE:
      return "core";
    case RLIMIT_DATA:
      return "data";
    case RLIMIT_NOFILE:
      return "nofile";
    case RLIMIT_FSIZE:
      return "fsize";
    case RLIMIT_CPU:
      return "cpu";
    case RLIMIT_NPROC:
      return "nproc";
    default:
      return "unknown";
  }
}

std::vector<LimitsReport::Rlimit> report(const Plan& plan) {
  std::vector<LimitsReport::Rlimit> out;
  for (std::size_t i = 0; i < plan.count; ++i) {
    const Entry& e = plan.entries[i];
    out.push_back({resource_name(e.resource), e.soft, e.hard});
  }
  return out;
}

const Entry* find(const Plan& plan, int resource) noexcept {
  for (std::size_t i = 0; i < plan.count; ++i)
    if (plan.entries[i].resource == resource) return &plan.entries[i];
  return nullptr;
}

}  // namespace chock::rlimits
