// The rlimit floor: limits that need nothing from the machine, so they always
// apply. Built on the host side before the fork, applied by the program as the
// last step before exec.
#pragma once

#include <sys/resource.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "chock/config.hpp"
#include "chock/error.hpp"
#include "chock/result.hpp"

namespace chock::rlimits {

// The hard CPU limit sits this far above the soft one, so the first signal is
// SIGXCPU (catchable, nameable) and SIGKILL only follows if it is ignored.
inline constexpr std::uint64_t kCpuHardGrace = 30;
// Chock's own task of a call (the keeper; the middle has ended before the
// program starts, and is never in the cgroup) is counted by RLIMIT_NPROC and
// pids.max; a limit of N processes for the program is written as N plus it.
inline constexpr std::uint64_t kOwnTasks = 1;

struct Entry {
  int resource = 0;
  rlim_t soft = 0;
  rlim_t hard = 0;
};

// A fixed array, so apply() after the fork neither allocates nor copies.
struct Plan {
  std::array<Entry, 8> entries{};
  std::size_t count = 0;
};

// What the host side learns from the machine before building a plan. Split
// out so tests can state a kernel and a caller's limits.
struct Machine {
  bool nproc_per_userns = false;    // RLIMIT_NPROC counted per user namespace (5.14+)
  std::uint64_t nr_open = 1 << 20;  // /proc/sys/fs/nr_open: the kernel's ceiling on NOFILE
  // The caller's current hard limits of the resources a plan sets, which a
  // process in a user namespace cannot raise; indexed by resource, the rest
  // RLIM_INFINITY.
  std::array<rlim_t, RLIM_NLIMITS> hard{};
};

// The running machine and this process's hard limits.
[[nodiscard]] Machine probe_machine();
// True when a kernel release string ("6.1.0-57-cloud-amd64") is 5.14 or later.
[[nodiscard]] bool release_counts_nproc_per_userns(const char* release) noexcept;

// The floor for these limits. Unset limits take the defaults (lowered to the
// caller's own hard limit when that is already tighter); a limit that was set
// and cannot be honoured is an error, never a clamp.
[[nodiscard]] Expected<Plan> prepare(const Limits& limits, const Machine& machine);
[[nodiscard]] Expected<Plan> prepare(const Limits& limits);

// The last step before exec: system calls only, async-signal-safe. Returns 0,
// or the errno of the first limit the kernel refused, its resource in *failed.
int apply(const Plan& plan, int* failed_resource) noexcept;

// "nofile", "data", ...; "unknown" for a resource the floor never sets.
[[nodiscard]] const char* resource_name(int resource) noexcept;
// The plan as the limits report lists it.
[[nodiscard]] std::vector<LimitsReport::Rlimit> report(const Plan& plan);
// The entry for a resource, or nullptr when the plan does not set it.
[[nodiscard]] const Entry* find(const Plan& plan, int resource) noexcept;

}  // namespace chock::rlimits
