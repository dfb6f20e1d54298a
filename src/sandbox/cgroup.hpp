// cgroup v2, host side. Two promises: a cgroup Chock makes for a call (best
// effort, never a refusal to run) and a cgroup the caller supplies (nothing
// written, nothing read, and a refusal rather than a fallback).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chock/config.hpp"
#include "chock/error.hpp"
#include "chock/result.hpp"
#include "util/fd.hpp"

namespace chock::cgroup {

// Where the kernel tells a process about its cgroups; tests point these at
// files of their own.
struct Sources {
  std::string mountinfo = "/proc/self/mountinfo";
  std::string self_cgroup = "/proc/self/cgroup";
  // Where cgroup2 is usually mounted, tried first (one statfs each) as a
  // mount of the whole hierarchy; mountinfo when none is, or when the
  // caller's cgroup is not below it.
  std::vector<std::string> usual_points = {"/sys/fs/cgroup", "/sys/fs/cgroup/unified"};
};

// The mount point of the first cgroup2 mount and the cgroup path it shows as
// its root, or nullopt. `mountinfo` is the text of /proc/self/mountinfo.
struct Mount {
  std::string point;
  std::string root;
};
[[nodiscard]] std::optional<Mount> find_cgroup2_mount(std::string_view mountinfo);
// The unified-hierarchy path ("0::/a/b") of /proc/self/cgroup text, or nullopt.
[[nodiscard]] std::optional<std::string> unified_path(std::string_view self_cgroup);
// True when a cgroup.subtree_control (or cgroup.controllers) line names both
// the memory and the pids controllers.
[[nodiscard]] bool lists_memory_and_pids(std::string_view controllers);

struct Events {
  std::uint64_t memory_max = 0;  // memory.events max
  std::uint64_t oom_kill = 0;    // memory.events oom_kill
  std::uint64_t pids_max = 0;    // pids.events max
};
// "key value" lines, as memory.events and pids.events are written.
[[nodiscard]] std::uint64_t event_count(std::string_view text, std::string_view key);

// A cgroup made for one call. Destroying it kills whatever is still inside
// (cgroup.kill) and removes the directory.
class Managed {
 public:
  Managed() = default;
  Managed(Managed&& other) noexcept;
  Managed& operator=(Managed&& other) noexcept;
  Managed(const Managed&) = delete;
  Managed& operator=(const Managed&) = delete;
  ~Managed();

  [[nodiscard]] CgroupState state() const { return state_; }
  [[nodiscard]] const std::string& reason() const { return reason_; }
  [[nodiscard]] const std::string& path() const { return path_; }
  // For clone_args.cgroup with CLONE_INTO_CGROUP; -1 unless state() is ok.
  [[nodiscard]] int dir_fd() const { return dir_.get(); }
  [[nodiscard]] std::uint64_t memory_max() const { return memory_max_; }
  [[nodiscard]] std::uint64_t pids_max() const { return pids_max_; }

  // memory.events and pids.events as they stand now.
  [[nodiscard]] Events read_events() const;
  // Writes cgroup.kill (or, before 5.14, kills each member): every process
  // left in the cgroup gets SIGKILL. Returns at once.
  void kill() noexcept;
  // kill(), waits for the cgroup to empty, removes it. Idempotent.
  void teardown() noexcept;
  // The kernel refused to create the process in it (clone3 said `code`); the
  // call runs without it and the report says why.
  void placement_failed(int code);
  // Fills the cgroup rows of a limits report.
  void fill(LimitsReport& report) const;

  // Best effort: a Managed whose state is ok, or unsupported with the reason.
  static Managed create(const Limits& limits, const Sources& sources = {});

 private:
  CgroupState state_ = CgroupState::off;
  std::string reason_;
  std::string path_;
  UniqueFd parent_;
  std::string name_;
  UniqueFd dir_;
  std::uint64_t memory_max_ = 0;
  std::uint64_t pids_max_ = 0;
};

// A caller's own cgroup: checks the descriptor is a cgroup v2 directory,
// reading nothing inside it. Errc::cgroup_placement_refused otherwise.
[[nodiscard]] Expected<void> check_supplied(int fd);
// What a failed clone3(CLONE_INTO_CGROUP) into a supplied cgroup means:
// ENOSYS (no clone3, or a filter answering for it) is unsupported, anything
// else is the kernel refusing the placement.
[[nodiscard]] Error placement_error(int code);

}  // namespace chock::cgroup
