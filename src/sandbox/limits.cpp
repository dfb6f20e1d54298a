#include "sandbox/limits.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "sandbox/kill_naming.hpp"

namespace chock {

std::optional<Error> LimitsSetup::placement_failed(int code) {
  clone_cgroup_fd = -1;
  if (supplied) return cgroup::placement_error(code);
  managed.placement_failed(code);
  return std::nullopt;
}

exit_watch::Watch LimitsSetup::watch() const {
  exit_watch::Watch w;
  w.seal_memfd = seals_memfd;
  w.memory_limit = measured_memory;
  if (const rlimits::Entry* cpu = rlimits::find(plan, RLIMIT_CPU);
      cpu != nullptr && cpu->soft != RLIM_INFINITY)
    w.cpu_soft_ticks = static_cast<std::uint64_t>(cpu->soft) * static_cast<std::uint64_t>(clock_ticks);
  return w;
}

Expected<LimitsSetup> prepare_limits(const Config& config) {
  LimitsSetup s;
  rlimits::Machine machine = rlimits::probe_machine();
  auto plan = rlimits::prepare(config.limits, machine);
  if (!plan) return std::move(plan).error();
  s.plan = *plan;
  s.processes_allowed = config.limits.processes.value_or(Limits::kDefaultProcesses);
  s.clock_ticks = ::sysconf(_SC_CLK_TCK);
#if defined(__x86_64__)
  // Probed once a process: the kernel does not change under it.
  static const bool kernel_seals = exit_watch::kernel_seals_memfd();
  s.seals_memfd = kernel_seals;
#endif
  if (config.containment.kind == Containment::Kind::supplied) {
    if (auto ok = cgroup::check_supplied(config.containment.cgroup_fd); !ok) return std::move(ok).error();
    s.supplied = true;
    s.clone_cgroup_fd = config.containment.cgroup_fd;
  } else {
    s.managed = cgroup::Managed::create(config.limits);
    if (s.managed.state() == CgroupState::ok) {
      s.clone_cgroup_fd = s.managed.dir_fd();
      // copy_process checks RLIMIT_NPROC before the pids controller: one
      // above pids.max, the cgroup refuses first and pids.events says so.
      for (std::size_t i = 0; i < s.plan.count; ++i)
        if (s.plan.entries[i].resource == RLIMIT_NPROC &&
            s.plan.entries[i].hard < machine.hard.at(RLIMIT_NPROC)) {
          s.plan.entries[i].soft += 1;
          s.plan.entries[i].hard += 1;
        }
    }
  }
  // Memory is bounded for the call as a whole: by memory.max of our cgroup,
  // else by the keeper's measurement. A supplied cgroup is the caller's to
  // limit, unless --memory asks Chock too.
  if (s.supplied) {
    if (config.limits.memory_bytes) {
      s.measured_memory = *config.limits.memory_bytes;
      s.measured_memory_why = "the supplied cgroup is the caller's to limit";
    }
  } else if (s.managed.state() != CgroupState::ok) {
    s.measured_memory = config.limits.memory_bytes.value_or(Limits::kDefaultMemoryBytes);
    s.measured_memory_why = "cgroup v2 memory is unavailable here";
  }
  // --pids with neither a per-namespace RLIMIT_NPROC nor a cgroup of ours
  // would be a promise nothing keeps.
  if (config.limits.processes && rlimits::find(s.plan, RLIMIT_NPROC) == nullptr &&
      s.managed.state() != CgroupState::ok)
    return Error{
        "limit --pids " + std::to_string(*config.limits.processes) +
            " cannot be honoured: this kernel counts RLIMIT_NPROC across the whole user (before 5.14)"
            " and no cgroup of Chock's bounds processes" +
            (s.supplied ? std::string(" (the supplied cgroup is the caller's to limit)")
                        : ": " + s.managed.reason()),
        {},
        0,
        Errc::bad_config};
  return s;
}

void finish_limits(LimitsSetup& s, Result& result, const exit_watch::Evidence& evidence) {
  LimitsReport& r = result.limits;
  r.rlimits = rlimits::report(s.plan);
  if (s.supplied) {
    r.cgroup = CgroupState::supplied;
  } else {
    s.managed.fill(r);
  }
  // Untraced, memfd_create answers ENOSYS: no memfd at all, which is sealed too.
  if (!s.seals_memfd)
    result.memfd_exec =
        "open (this kernel has no MFD_NOEXEC_SEAL, Linux 6.3, or Chock cannot add it on this architecture)";
  else if (evidence.memfd_unsealed > 0)
    result.memfd_exec =
        "open (" + std::to_string(evidence.memfd_unsealed) + " memfd_create calls could not be sealed)";
  else
    result.memfd_exec = "sealed";
  if (s.measured_memory > 0) {
    r.memory_measured_limit = s.measured_memory;
    r.memory_measured_why = s.measured_memory_why;
    r.memory_measured_peak = evidence.memory_peak;
    r.memory_measured_samples = evidence.memory_samples;
  }
  result.network_unreachable = evidence.net_no_route;
  result.write_execute_refused = evidence.write_execute_refused;
  result.write_execute_program.assign(
      evidence.write_execute_program,
      ::strnlen(evidence.write_execute_program, sizeof evidence.write_execute_program));
  result.user_namespace_refused = evidence.user_namespace_refused;
  result.user_namespace_program.assign(
      evidence.user_namespace_program,
      ::strnlen(evidence.user_namespace_program, sizeof evidence.user_namespace_program));
  result.filter_kill_count = evidence.filter_kill_count;
  for (std::size_t i = 0; i < evidence.filter_kill_count && i < exit_watch::kFilterKillsKept; ++i) {
    const exit_watch::FilterKill& k = evidence.filter_kills[i];
    result.filter_kills.push_back({k.pid, std::string(k.comm, ::strnlen(k.comm, sizeof k.comm)),
                                   std::string(k.call, ::strnlen(k.call, sizeof k.call))});
  }
  if (evidence.never_ending > 0) {
    const exit_watch::FilterKill& k = evidence.last_filter_kill;
    result.never_ending = true;
    result.never_ending_after = {k.pid, std::string(k.comm, ::strnlen(k.comm, sizeof k.comm)),
                                 std::string(k.call, ::strnlen(k.call, sizeof k.call))};
  }
  result.untraced_clone_refused = evidence.untraced_clone_refused;
  result.sanitizer_tracer_refused = evidence.sanitizer_tracer_refused;
  KillFacts facts;
  facts.exit_code = result.exit_code;
  facts.signal = result.signal;
  facts.ended_by_chock = result.timed_out || result.cancelled || result.never_ending;
  facts.plan = &s.plan;
  facts.processes_allowed = s.processes_allowed;
  facts.evidence = evidence;
  facts.clock_ticks = s.clock_ticks;
  name_kill(facts, r);
  s.managed.teardown();
}

DiskGuard DiskGuard::for_file_system(std::string path, std::uint64_t cap_bytes, std::uint64_t size_bytes,
                                     std::uint64_t inodes) {
  DiskGuard g;
  g.path = std::move(path);
  g.cap_bytes = cap_bytes;
  g.floor_bytes = std::min<std::uint64_t>(1ULL << 30, size_bytes / 10) >> 20 << 20;  // whole MiB
  g.floor_inodes = inodes == 0 ? 0 : std::min<std::uint64_t>(10000, inodes / 10);
  return g;
}

}  // namespace chock
