// The probes behind the rows of `chock doctor`, one file per group. Internal
// to src/doctor/: doctor.cpp puts them in order and decides which block.
#pragma once

#include <string>
#include <vector>

#include "chock/error.hpp"
#include "doctor/doctor.hpp"
#include "doctor/probe_child.hpp"
#include "policy/policy.hpp"
#include "sandbox/namespaces.hpp"
#include "util/size.hpp"

namespace chock::doctor {

// A private directory under $TMPDIR (or /tmp) for the probes that need files,
// owned by the uid the namespace probes drop to, removed with its contents.
class Scratch {
 public:
  Scratch() = default;
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  ~Scratch();
  static Expected<void> make(Scratch& scratch, uid_t owner, gid_t group);
  [[nodiscard]] const std::string& path() const { return path_; }
  // A subdirectory made now (mode 0755, same owner), its absolute path.
  [[nodiscard]] Expected<std::string> subdir(const std::string& name) const;

 private:
  std::string path_;
  uid_t owner_ = 0;
  gid_t group_ = 0;
};

// What every probe shares, built before any fork.
struct Context {
  // Who a tool call runs as: the caller, or 65534 for a root caller, exactly
  // as chock run plans it. Probes that build namespaces drop to it first.
  sandbox::Identity identity;
  Scratch scratch;
  bool root_caller = false;
};

// namespaces_probe.cpp: user, mount, pid, ipc, net; in that order.
[[nodiscard]] std::vector<Row> namespace_rows(const Context& context);
// A call's user namespace allows none below it (the limit chock run sets).
[[nodiscard]] Row nested_namespaces_row(const Context& context);

// layers_probe.cpp
[[nodiscard]] Row landlock_row(const Context& context);
// Installs Chock's own filter (strict, or the JIT one) in a child, then: a
// writable and executable mmap, io_uring_setup, and unshare(0), which is on
// the kill list and harmless if it ran.
[[nodiscard]] ChildResult try_filter(bool allow_jit);
// Every step of try_filter went as it should and unshare(0) ended the child
// with SIGSYS.
[[nodiscard]] bool filter_held(const ChildResult& result);
[[nodiscard]] Row seccomp_row(const ChildResult& strict);
[[nodiscard]] Row rlimit_row();

// process_probe.cpp
[[nodiscard]] Row pidfd_row();
[[nodiscard]] Row clone_into_cgroup_row();
// Whether a memfd made with MFD_NOEXEC_SEAL refuses to be run (Linux 6.3+).
[[nodiscard]] Row memfd_row();

// network_probe.cpp: "filtered network" and "resolver files".
[[nodiscard]] std::vector<Row> filtered_network_rows();
// mounts_probe.cpp
[[nodiscard]] Row overlay_row(const Context& context, bool blocks, const std::string& why_blocks);
// A root caller's non-git project with no copy: the overlay a call gets, made
// now over an idmapped mount of `project` (or why the copy stays).
[[nodiscard]] Row idmap_row(const Context& context, const std::string& project, const std::string& why);
[[nodiscard]] Row tmpfs_row(const Context& context);

// host_probe.cpp
[[nodiscard]] Row cgroup_row(const Row& rlimit_floor);
[[nodiscard]] Row git_row(bool blocks, const std::string& why_blocks);
// Which mechanism bounds a call's memory here, and how fast it reacts.
[[nodiscard]] Row memory_row();
// What a call may write to the data directory's file system, and its floors.
[[nodiscard]] Row disk_row();
[[nodiscard]] Row space_row();

// policy_probe.cpp: the organisation's, the project's and the command line's
// rules folded for `action` (sandbox.jit, toolchain.nix); an Error when one
// of their files is bad.
[[nodiscard]] Expected<policy::Answer> policy_answer(const Options& options, const std::string& project_root,
                                                     const char* action);
// devices_probe.cpp
[[nodiscard]] Row device_row(const Options& options, const std::string& project_root);
// Which toolchain the project's calls get: the host's, or its Nix dev shell's
// (evaluated only where `nix_rule`, toolchain.nix, and the person allow it).
[[nodiscard]] Row toolchain_row(const std::string& project_root, const policy::Answer& nix_rule);
// The answer in words, and the filter it selects tried for real (the strict
// one was already tried for the seccomp row).
[[nodiscard]] Row write_execute_row(const policy::Answer& answer, const ChildResult& strict_filter);

}  // namespace chock::doctor
