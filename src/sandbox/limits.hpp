// The limits of one call, as the sandbox core uses them: one step before the
// fork, one question if the first clone3 fails, one step after the call.
//
//   auto limits = prepare_limits(config);           // host side, before the fork
//   clone_args.cgroup = limits->clone_cgroup_fd;    // with CLONE_INTO_CGROUP when >= 0
//   ... clone3 fails with e: if (auto err = limits->placement_failed(e)) refuse(*err); else retry without
//   program, last step before exec: rlimits::apply(limits->plan, &resource)
//   keeper: exit_watch::seize / on_wait, Evidence back to the host
//   finish_limits(*limits, result, evidence);        // after the call: report, name, teardown
#pragma once

#include <optional>

#include "chock/config.hpp"
#include "chock/error.hpp"
#include "chock/result.hpp"
#include "sandbox/cgroup.hpp"
#include "sandbox/exit_watch.hpp"
#include "sandbox/rlimits.hpp"

namespace chock {

struct LimitsSetup {
  rlimits::Plan plan;
  cgroup::Managed managed;   // Kind::managed: ok, or unsupported with the reason
  bool supplied = false;     // Kind::supplied: the caller's cgroup
  int clone_cgroup_fd = -1;  // for clone_args.cgroup (CLONE_INTO_CGROUP), or -1
  std::uint64_t processes_allowed = 0;
  long clock_ticks = 100;
  bool seals_memfd = false;  // the keeper can add MFD_NOEXEC_SEAL to every memfd_create
  // The call's memory when no memory.max of Chock's bounds it: the keeper
  // measures against this (0: not needed), for this reason.
  std::uint64_t measured_memory = 0;
  std::string measured_memory_why;

  // The first clone3 failed with `code` while clone_cgroup_fd was set. For a
  // supplied cgroup: the refusal to return (start nothing, no fallback). For a
  // managed one: nullopt; the cgroup is dropped and the caller retries
  // without CLONE_INTO_CGROUP.
  [[nodiscard]] std::optional<Error> placement_failed(int code);
  // The keeper's watch, with the CPU limit it compares against.
  [[nodiscard]] exit_watch::Watch watch() const;
};

// Before the fork. Errors: a limit that cannot be honoured (Errc::bad_config),
// a supplied descriptor that is not a cgroup v2 directory.
[[nodiscard]] Expected<LimitsSetup> prepare_limits(const Config& config);

// After the call ended (result holds exit_code or signal, timed_out,
// cancelled): reads the cgroup's events, fills result.limits, names the kill,
// then kills what is left in a managed cgroup and removes it.
void finish_limits(LimitsSetup& setup, Result& result, const exit_watch::Evidence& evidence);

}  // namespace chock
