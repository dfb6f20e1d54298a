#include "sandbox/launch.hpp"

#include <fcntl.h>
#include <linux/futex.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

extern char** environ;

namespace chock::sandbox {

namespace {

// The Landlock rules of a call, from its mount plan: a bind's grant set, /tmp
// and /dev/shm read-write, /proc read-only, each device node what a device
// needs, and "/" read_dir alone so `ls /` works. Config::landlock_grants, when
// given, replaces the rules of the caller's own binds (never the toolchain's,
// /dev's, /proc's or /tmp's).
std::vector<landlock::Rule> landlock_rules(const Config& config, const MountPlan& plan, int abi) {
  std::vector<std::string> caller_targets;
  if (config.landlock_grants) {
    for (const Bind& b : config.binds) {
      caller_targets.push_back(normalize_absolute(b.target.empty() ? b.source : b.target));
    }
  }
  std::vector<landlock::Rule> rules = {{"/", landlock::right::read_dir}};
  for (const auto& op : plan.ops) {
    const std::string path = "/" + op.target;
    const bool device = op.kind == MountOp::Kind::devpts ||
                        (op.kind == MountOp::Kind::bind && op.step == Step::dev && !op.landlock);
    if (device) {
      rules.push_back({path, landlock::device_rights(abi)});
      continue;
    }
    if (!op.landlock) continue;
    if (std::find(caller_targets.begin(), caller_targets.end(), path) != caller_targets.end()) continue;
    rules.push_back({path, landlock::grant(op.access, abi)});
  }
  if (config.landlock_grants) {
    for (const Grant& g : *config.landlock_grants) rules.push_back({g.path, landlock::grant(g.access, abi)});
  }
  return rules;
}

std::vector<std::string> exec_candidates(const std::string& command, const std::vector<std::string>& env) {
  if (command.find('/') != std::string::npos) return {command};
  std::string path = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin";
  for (const auto& e : env) {
    if (e.rfind("PATH=", 0) == 0) path = e.substr(5);
  }
  std::vector<std::string> out;
  size_t i = 0;
  for (;;) {
    size_t j = path.find(':', i);
    std::string dir = path.substr(i, j == std::string::npos ? std::string::npos : j - i);
    out.push_back((dir.empty() ? std::string(".") : dir) + "/" + command);
    if (j == std::string::npos) break;
    i = j + 1;
  }
  return out;
}

Expected<void> prepare_command(const Config& config, Launch& l) {
  if (config.argv.empty() || config.argv[0].empty()) {
    return Error{"no command given: say what to run after --", "", 0, Errc::bad_config};
  }
  l.argv_storage = config.argv;
  if (config.env) {
    l.env_storage = *config.env;
  } else {
    for (char** e = environ; *e != nullptr; ++e) l.env_storage.emplace_back(*e);
  }
  if (config.network == Network::filtered) {
    std::erase_if(l.env_storage, [](const std::string& e) { return e.rfind("CHOCK_BROKER_FD=", 0) == 0; });
    l.env_storage.emplace_back("CHOCK_BROKER_FD=3");
  }
  l.candidates = exec_candidates(config.argv[0], l.env_storage);
  for (auto& a : l.argv_storage) l.argv.push_back(a.data());
  l.argv.push_back(nullptr);
  for (auto& e : l.env_storage) l.envp.push_back(e.data());
  l.envp.push_back(nullptr);
  l.cwd = normalize_absolute(config.cwd);
  if (l.cwd.empty())
    return Error{"--cwd " + config.cwd + ": needs an absolute path", "", 0, Errc::bad_config};
  l.pass_stdin = config.pass_stdin;
  l.stdio = config.stdio;
  return {};
}

// The signals this process ignores (SigIgn in /proc/self/status): execve
// keeps an ignored signal ignored, so the program resets exactly these.
// Every signal when the file cannot be read.
std::uint64_t ignored_signals() {
  std::uint64_t mask = ~0ULL;
  int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return mask;
  char buf[4096];
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return mask;
  buf[n] = '\0';
  const char* line = std::strstr(buf, "\nSigIgn:\t");
  if (line == nullptr) return mask;
  char* end = nullptr;
  unsigned long long v = std::strtoull(line + 9, &end, 16);
  return end != line + 9 ? v : mask;
}

}  // namespace

static_assert(sizeof(std::atomic<int>) == sizeof(int) && std::atomic<int>::is_always_lock_free,
              "the plan's state is a futex word");

void Launch::publish_plan(bool ready) noexcept {
  plan_state_.store(ready ? 1 : -1, std::memory_order_release);
  sys::raw(SYS_futex, sys::arg(&plan_state_), FUTEX_WAKE_PRIVATE, 1);
}

bool Launch::await_plan() noexcept {
  int state = 0;
  while ((state = plan_state_.load(std::memory_order_acquire)) == 0)
    sys::raw(SYS_futex, sys::arg(&plan_state_), FUTEX_WAIT_PRIVATE, 0, 0);
  return state > 0;
}

Expected<void> prepare_identity(const Config& config, Launch& l) {
  l.caller_pid = getpid();
  l.caller_pidfd.reset(sys::pidfd_open(l.caller_pid, 0));
  if (!l.caller_pidfd) return sys_error("pidfd_open of this process, for the keeper to watch");
  auto id = plan_identity(config);
  if (!id) return std::move(id).error();
  l.identity = *id;
  return {};
}

Expected<void> prepare_launch(const Config& config, const LimitsSetup& limits, Launch& l,
                              std::vector<std::string>& labels) {
  auto command = prepare_command(config, l);
  if (!command) return command;
  auto mounts = plan_mounts(config, l.identity.drop_from_root);
  if (!mounts) return std::move(mounts).error();
  l.mounts = std::move(*mounts);
  errno = 0;
  const int abi = landlock::probe_abi();
  const int probe_errno = abi == 0 ? errno : 0;
  auto landlock = landlock::prepare_for(abi, probe_errno, landlock_rules(config, l.mounts, abi));
  if (!landlock) return std::move(landlock).error();
  l.landlock = std::move(*landlock);
  auto filter = seccomp::build(config.allow_jit);
  if (!filter) return std::move(filter).error();
  l.filter = std::move(*filter);
  l.rlimits = limits.plan;
  l.ignored_signals = ignored_signals();
  l.watch = limits.watch();
  l.watch.count_network = config.network != Network::host;
  if (config.network == Network::filtered) {
    l.filtered.enabled = true;
    l.filtered.routes = &net::embedded_route_messages();
    l.filtered.ruleset = &net::embedded_ruleset_messages();
  }
  l.dev_null.reset(open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!l.dev_null) return sys_error("open", "/dev/null");

  for (const auto& op : l.mounts.ops) labels.push_back(op.label);
  for (const auto& rule : l.landlock.rules) labels.push_back("Landlock rule " + rule.path);
  l.rlimit_labels = static_cast<int>(labels.size());
  for (std::size_t i = 0; i < l.rlimits.count; ++i)
    labels.push_back(std::string("rlimit ") + rlimits::resource_name(l.rlimits.entries[i].resource));
  return {};
}

}  // namespace chock::sandbox
