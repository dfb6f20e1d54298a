// Everything the processes of a call need, built by the caller before the
// first clone: after it, they make system calls only.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "chock/config.hpp"
#include "chock/error.hpp"
#include "sandbox/exit_watch.hpp"
#include "sandbox/filtered_setup.hpp"
#include "sandbox/landlock.hpp"
#include "sandbox/limits.hpp"
#include "sandbox/mount_tree.hpp"
#include "sandbox/namespaces.hpp"
#include "sandbox/rlimits.hpp"
#include "sandbox/seccomp.hpp"
#include "util/fd.hpp"
#include "util/syscalls.hpp"

namespace chock::sandbox {

// The stack of a process cloned with CLONE_VM, which cannot run on its
// parent's. Its pages are touched only as the stack grows into them.
class CloneStack {
 public:
  explicit CloneStack(std::size_t size) : bytes_(new char[size]), size_(size) {}
  // The high end, 16-byte aligned: x86-64 and arm64 stacks grow down.
  [[nodiscard]] void* top() const noexcept {
    char* end = bytes_.get() + size_;
    return end - (reinterpret_cast<std::uintptr_t>(end) & 15U);
  }
  // clone3's view: the lowest address and the size up to top().
  [[nodiscard]] void* base() const noexcept { return bytes_.get(); }
  [[nodiscard]] std::size_t size() const noexcept {
    return static_cast<std::size_t>(static_cast<char*>(top()) - bytes_.get());
  }

 private:
  std::unique_ptr<char[]> bytes_;
  std::size_t size_;
};

struct Launch {
  // Set before the middle is made, and only read after.
  Identity identity;
  UniqueFd channel;  // the child's end of the report channel
  pid_t caller_pid = 0;
  UniqueFd caller_pidfd;  // the keeper's way to tell the caller is alive

  // The rest is the plan, which the caller builds while the middle enters the
  // namespaces, and hands over with publish_plan.

  MountPlan mounts;
  std::vector<std::string> argv_storage;
  std::vector<std::string> env_storage;
  std::vector<std::string> candidates;  // where argv[0] may be, in PATH order
  std::vector<char*> argv;
  std::vector<char*> envp;
  std::string cwd;
  bool pass_stdin = false;
  std::array<int, 3> stdio{0, 1, 2};      // dup2'd onto 0, 1, 2 by the keeper
  std::uint64_t ignored_signals = ~0ULL;  // bit N-1: signal N is SIG_IGN in the caller
  landlock::Prepared landlock;
  seccomp::Program filter;
  rlimits::Plan rlimits;
  exit_watch::Watch watch;
  UniqueFd dev_null;
  FilteredPlan filtered;       // Network::filtered: routes, ruleset, sockets
  int broker_fd = -1;          // the program's end of the broker, put at fd 3 before the exec
  std::vector<int> keep_fds;   // sorted: what the keeper keeps open
  std::vector<int> setup_fds;  // what the keeper closes once the program has it
  CloneStack middle_stack{std::size_t{64} << 10};
  CloneStack program_stack{std::size_t{256} << 10};
  int rlimit_labels = 0;  // index of the first rlimit in the caller's label table

  // The caller: the plan is complete (true), or there is none (false); the
  // middle, waiting in await_plan, goes on or ends.
  void publish_plan(bool ready) noexcept;
  // The middle: blocks until publish_plan; true when there is a plan. Raw
  // system calls only.
  bool await_plan() noexcept;

 private:
  std::atomic<int> plan_state_{0};  // 0 building, 1 ready, -1 none; a futex word
};

// The middle runs alongside the caller where its system calls can leave
// errno alone; elsewhere the caller is held until it ends (CLONE_VFORK) and
// builds the plan first.
#ifdef CHOCK_HAS_RAW_SYSCALL
inline constexpr bool kMiddleRunsAlongside = true;
#else
inline constexpr bool kMiddleRunsAlongside = false;
#endif

// Who the call runs as: what the middle needs before the plan.
Expected<void> prepare_identity(const Config& config, Launch& launch);

// Builds the plan of a Launch from a Config, and the label table the caller uses to name
// a failed step's object (mount operations, then Landlock rules, then rlimits).
Expected<void> prepare_launch(const Config& config, const LimitsSetup& limits, Launch& launch,
                              std::vector<std::string>& labels);

}  // namespace chock::sandbox
