// The files that configure Chock, read into values: the project's chock.zon,
// the operator's ~/.config/chock/config.zon and the organisation bundle. A
// bad file is an Error whose `what` is "path:line:col: error: what is wrong"
// (path and code left empty), and nothing runs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chock/config.hpp"
#include "chock/error.hpp"
#include "config/zon.hpp"
#include "policy/policy.hpp"

namespace chock::config {

inline constexpr std::size_t kMaxFileBytes = zon::kMaxInputBytes;
inline constexpr std::size_t kMaxDenyRead = 64;
// A processes share is a share of this many processes for each online CPU
// (the spec words it "percent of CPUs"): "50%" on 8 CPUs is 1024 processes.
inline constexpr std::uint64_t kProcessesPerCpu = 256;

// A limit as written: a number, or a share of the machine ("50%").
struct LimitValue {
  enum class Kind { absolute, percent };
  Kind kind = Kind::absolute;
  std::uint64_t value = 0;  // bytes or a count; for percent 1..100
  std::string origin;       // "path:line:col"
};
struct LimitsSpec {
  std::optional<LimitValue> processes;               // .processes = 256 | "50%"
  std::optional<LimitValue> memory;                  // .memory = "4GiB" | "50%"
  std::optional<LimitValue> timeout = std::nullopt;  // .timeout = 600 | "10m" | "2h": seconds of wall clock
  std::optional<LimitValue> disk =
      std::nullopt;  // .disk = "10GiB": what a call may write to the data directory
  std::optional<LimitValue> cache =
      std::nullopt;  // .cache = "2GiB": the project's toolchain cache, all of it
};

// A call that sets no deadline ends after this long (chock run): a hung test
// runner or a program waiting on a network that is not there stops by itself.
inline constexpr std::uint64_t kDefaultTimeoutSeconds = 30ULL * 60;
// What a call may write to the data directory's file system when nobody says.
inline constexpr std::uint64_t kDefaultDiskBytes = 10ULL << 30;
// How large a project's toolchain cache (/run/chock/cache) may grow when nobody says.
inline constexpr std::uint64_t kDefaultCacheBytes = 2ULL << 30;
// A deadline is at most a week.
inline constexpr std::uint64_t kMaxTimeoutSeconds = 7ULL * 24 * 3600;

// <project>/chock.zon. Keys: .policy.rules, .deny_read, .carry, .limits, .network.
// An entry of .devices: a device the project asks to have bound into its
// calls, when a policy rule allows the same action.
struct DeviceEntry {
  std::string action;  // device.usb.1d50.6018, device.path.dev.kvm, ...
  std::string origin;  // "path:line:col"
};

struct ProjectFile {
  std::string path;                 // empty when the project has no chock.zon
  std::string bytes;                // the file as read (for its SHA-256 in the session log)
  std::vector<policy::Rule> rules;  // origin "path:line:col"
  std::vector<std::string> deny_read;
  std::vector<std::string> carry;  // directories a git workspace shows copy-on-write
  LimitsSpec limits;
  std::optional<Network> network;
  std::vector<DeviceEntry> devices;
};
// The project's chock.zon, or an empty ProjectFile when there is none.
[[nodiscard]] Expected<ProjectFile> read_project(const std::string& project_dir);
// The same from text: `display_path` names it in errors and origins, and
// deny_read entries are checked for directories relative to `project_dir`
// (empty: the current directory).
[[nodiscard]] Expected<ProjectFile> parse_project(std::string_view text, const std::string& display_path,
                                                  const std::string& project_dir);

// The operator's file: .limits, as the machine's defaults, .bases_max_size,
// .link_base_index, and
// .toolchain_paths: directories of the person's own toolchains (~/.cargo,
// ~/.rustup, ~/.pyenv) every call gets read-only at their own paths. Only
// the operator names them: a project could otherwise name any directory.
struct OperatorFile {
  std::string path;
  LimitsSpec limits;
  std::vector<std::string> toolchain_paths;  // absolute, `~/` expanded
  std::vector<std::string> allow_private;    // CIDR ranges inside the private ones the judge may dial
  // .bases_max_size: past it, the sweeper (and `chock workspace gc`) removes
  // the unused shared bases used least recently, whatever their age.
  std::optional<std::uint64_t> bases_max_bytes;
  // .link_base_index = true: a git session over a settled base links the
  // base's index (git's split index) instead of copying it. libgit2 cannot
  // read a split index, so tools built on it fail inside: off by default.
  bool link_base_index = false;
};
// $XDG_CONFIG_HOME/chock/config.zon, else ~/.config/chock/config.zon; empty when absent.
[[nodiscard]] Expected<OperatorFile> read_operator();
[[nodiscard]] Expected<OperatorFile> parse_operator(std::string_view text, const std::string& display_path);

// The organisation bundle: .policy, .limits and .deny_read, all ceilings.
struct BundleFile {
  std::string path;
  std::vector<policy::Rule> rules;
  std::vector<std::string> deny_read;
  LimitsSpec limits;
};
// `path` if given (then it must exist), else /etc/chock/bundle.zon if present, else empty.
[[nodiscard]] Expected<BundleFile> read_bundle(const std::string& path);
// The bundle's deny_read entries get the same checks as a project's but the
// directory one, since a bundle names no project.
[[nodiscard]] Expected<BundleFile> parse_bundle(std::string_view text, const std::string& display_path);

// The machine a share is taken of.
struct Machine {
  std::uint64_t cpus = 1;
  std::uint64_t ram_bytes = 0;
};
// Online CPUs (sysconf) and total RAM (sysinfo).
[[nodiscard]] Machine this_machine();

// A limit as a number: an absolute value as written; a share of memory is
// that share of machine.ram_bytes, a share of processes that share of
// kProcessesPerCpu * machine.cpus, rounded down and never below 1.
[[nodiscard]] std::uint64_t resolve_processes(const LimitValue& value, const Machine& machine);
[[nodiscard]] std::uint64_t resolve_memory(const LimitValue& value, const Machine& machine);

// The ratchet, each limit on its own, every share resolved against `machine`
// before any comparison:
//  1. the project's value, else the operator's, else none;
//  2. a project value above the operator's is held to the operator's;
//  3. the result is held to the bundle's ceiling. When nobody set the limit
//     it stays nullopt unless a sandbox default is above the ceiling; then it
//     is the lower of the ceiling and the lowest default (processes: 256;
//     memory: cgroup memory.max 2 GiB, RLIMIT_DATA 16 GiB, so a memory
//     ceiling under 16 GiB gives min(ceiling, 2 GiB)). Every mechanism is
//     then held under the ceiling and no default is raised.
// `notices` has one line for each limit that someone asked for and did not
// get, naming who asked and the layer that held it at the value used ("the
// project asks for memory 8 GiB; the organisation bundle holds it to 4 GiB"),
// to be said once.
struct EffectiveLimits {
  std::optional<std::uint64_t> processes;     // nullopt: nobody set one, the floor's default applies
  std::optional<std::uint64_t> memory_bytes;  // nullopt: likewise
  std::uint64_t timeout_seconds = kDefaultTimeoutSeconds;  // always set: the default when nobody asks
  std::uint64_t disk_bytes = kDefaultDiskBytes;            // likewise
  std::uint64_t cache_bytes = kDefaultCacheBytes;          // likewise
  std::vector<std::string> notices;
};
[[nodiscard]] EffectiveLimits ratchet(const LimitsSpec& project, const LimitsSpec& operator_defaults,
                                      const LimitsSpec& bundle, const Machine& machine);

}  // namespace chock::config
