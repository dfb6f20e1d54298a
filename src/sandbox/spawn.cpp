// The process tree of a call and the fixed order of its layers.
//
//   caller (chock)      clone3(CLONE_PIDFD) -> middle; waits on the pidfd
//    └─ middle          drops a root caller's uid, closes inherited fds,
//        │              unshare(USER|NS|PID|IPC[|NET]) in one call, id maps
//        └─ keeper      pid 1 of the new pid namespace: reaps, forwards
//            │          signals, exits with the program's status
//            └─ program pid 2: setsid, mount tree, pivot_root, capabilities,
//                       no_new_privs, (Landlock, keyring, seccomp, rlimits), exec
//
// Everything that allocates is built in spawn() before the first clone; the
// three processes after it make system calls only.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "chock/sandbox.hpp"
#include "sandbox/capabilities.hpp"
#include "sandbox/landlock.hpp"
#include "sandbox/mount_tree.hpp"
#include "sandbox/namespaces.hpp"
#include "sandbox/seccomp.hpp"
#include "sandbox/steps.hpp"
#include "util/fd.hpp"
#include "util/syscalls.hpp"

extern char** environ;

namespace chock {

using sandbox::Record;
using sandbox::Step;
using sandbox::StepFailure;

namespace {

// Signals the keeper passes on to the program. Everything that ends a call
// goes through the pidfd instead.
constexpr int kForwardedSignals[] = {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGWINCH, SIGCONT};

// Everything the three processes need, built before the first clone.
struct Launch {
  sandbox::Identity identity;
  sandbox::MountPlan mounts;
  std::vector<std::string> argv_storage;
  std::vector<std::string> env_storage;
  std::vector<std::string> candidates;  // where argv[0] may be, in PATH order
  std::vector<char*> argv;
  std::vector<char*> envp;
  std::string cwd;
  bool pass_stdin = false;
  UniqueFd dev_null;
  UniqueFd channel;            // the child's end of the report channel
  std::vector<int> keep_fds;   // sorted: what the middle keeps open
  std::vector<int> setup_fds;  // what the keeper closes once the program has it
  pid_t caller_pid = 0;
  landlock::Prepared landlock;
  seccomp::Program filter;
};

// The Landlock rules of a call, from its mount plan: a bind's grant set, /tmp
// and /dev/shm read-write, /proc read-only, each device node what a device
// needs, and "/" read_dir alone so `ls /` works. Config::landlock_grants, when
// given, replaces the rules of the caller's own binds (never the toolchain's,
// /dev's, /proc's or /tmp's).
std::vector<landlock::Rule> landlock_rules(const Config& config, const sandbox::MountPlan& plan, int abi) {
  std::vector<std::string> caller_targets;
  if (config.landlock_grants) {
    for (const Bind& b : config.binds) {
      caller_targets.push_back(sandbox::normalize_absolute(b.target.empty() ? b.source : b.target));
    }
  }
  std::vector<landlock::Rule> rules = {{"/", landlock::right::read_dir}};
  for (const auto& op : plan.ops) {
    const std::string path = "/" + op.target;
    const bool device = op.kind == sandbox::MountOp::Kind::devpts ||
                        (op.kind == sandbox::MountOp::Kind::bind && op.step == Step::dev && !op.landlock);
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

Step landlock_step(const char* step) noexcept {
  if (std::strcmp(step, "landlock_rule") == 0) return Step::landlock_rule;
  if (std::strcmp(step, "landlock_restrict") == 0) return Step::landlock_restrict;
  if (std::strcmp(step, "no_new_privs") == 0) return Step::no_new_privs;
  return Step::landlock_ruleset;
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
  l.candidates = exec_candidates(config.argv[0], l.env_storage);
  for (auto& a : l.argv_storage) l.argv.push_back(a.data());
  l.argv.push_back(nullptr);
  for (auto& e : l.env_storage) l.envp.push_back(e.data());
  l.envp.push_back(nullptr);
  l.cwd = sandbox::normalize_absolute(config.cwd);
  if (l.cwd.empty())
    return Error{"--cwd " + config.cwd + ": needs an absolute path", "", 0, Errc::bad_config};
  l.pass_stdin = config.pass_stdin;
  return {};
}

// ---- after the fork ----------------------------------------------------------

void report_failure(int channel, const StepFailure& f) noexcept {
  sandbox::fail_step(channel, f);
}

// Closes every descriptor but those in the sorted `keep` list.
bool close_all_but(const std::vector<int>& keep) noexcept {
  unsigned next = 0;
  for (int fd : keep) {
    if (static_cast<unsigned>(fd) > next && sys::close_range(next, static_cast<unsigned>(fd) - 1, 0) != 0)
      return false;
    next = static_cast<unsigned>(fd) + 1;
  }
  return sys::close_range(next, ~0U, 0) == 0;
}

void reset_signals() noexcept {
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig != SIGKILL && sig != SIGSTOP) sigaction(sig, &dfl, nullptr);
  }
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
}

[[noreturn]] void exec_program(Launch& l) noexcept {
  int saved = ENOENT;
  for (auto& candidate : l.candidates) {
    execve(candidate.c_str(), l.argv.data(), l.envp.data());
    // Like execvp: a missing entry moves on; a refusal is remembered.
    if (errno == EACCES)
      saved = EACCES;
    else if (errno != ENOENT && errno != ENOTDIR) {
      saved = errno;
      break;
    }
  }
  Record r;
  r.kind = Record::exec_failed;
  r.error = saved;
  sandbox::send_record(l.channel.get(), r);
  _exit(saved == ENOENT || saved == ENOTDIR ? 127 : 126);
}

[[noreturn]] void program_main(Launch& l) noexcept {
  const int channel = l.channel.get();
  StepFailure f;
  prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  if (setsid() < 0) report_failure(channel, {Step::setsid, errno, -1});
  if (!sandbox::build_mount_tree(l.mounts, &f)) report_failure(channel, f);
  if (!l.pass_stdin && dup2(l.dev_null.get(), 0) < 0) report_failure(channel, {Step::stdin, errno, -1});
  l.dev_null.reset();
  if (chdir(l.cwd.c_str()) != 0) report_failure(channel, {Step::chdir, errno, -1});
  if (!sandbox::drop_capabilities(&f)) report_failure(channel, f);
  if (!sandbox::set_no_new_privs(&f)) report_failure(channel, f);
  landlock::Failure lf{"", 0, -1};
  if (!landlock::apply(l.landlock, &lf)) {
    // A rule's index is reported after the mount labels (see spawn()).
    const int detail = lf.rule >= 0 ? static_cast<int>(l.mounts.ops.size()) + lf.rule : -1;
    report_failure(channel, {landlock_step(lf.step), lf.error, detail});
  }
  int error = 0;
  if (!seccomp::join_fresh_session_keyring(&error)) report_failure(channel, {Step::keyring, error, -1});
  reset_signals();
  if (!seccomp::install(l.filter, &error)) report_failure(channel, {Step::seccomp, error, -1});
  exec_program(l);
}

volatile int g_program_pidfd = -1;

void forward_signal(int sig) {
  int saved = errno;
  sys::pidfd_send_signal(g_program_pidfd, sig);
  errno = saved;
}

[[noreturn]] void keeper_main(Launch& l, int middle_pidfd) noexcept {
  const int channel = l.channel.get();
  // If the middle is gone already, the death signal was sent before we asked for it.
  prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  pollfd p{middle_pidfd, POLLIN, 0};
  if (poll(&p, 1, 0) != 0) _exit(125);
  close(middle_pidfd);

  int program_pidfd = -1;
  sys::CloneArgs args;
  args.flags = CLONE_PIDFD;
  args.pidfd = reinterpret_cast<std::uint64_t>(&program_pidfd);
  args.exit_signal = SIGCHLD;
  long pid = sys::clone3(&args);
  if (pid < 0) report_failure(channel, {Step::clone_program, errno, -1});
  if (pid == 0) program_main(l);

  // The program holds what it needs; the keeper keeps only the channel.
  for (int fd : l.setup_fds) close(fd);
  StepFailure f;
  if (!sandbox::drop_capabilities(&f) || !sandbox::set_no_new_privs(&f)) {
    sys::pidfd_send_signal(program_pidfd, SIGKILL);
    report_failure(channel, f);
  }
  g_program_pidfd = program_pidfd;
  struct sigaction fwd {};
  fwd.sa_handler = forward_signal;
  sigemptyset(&fwd.sa_mask);
  for (int sig : kForwardedSignals) sigaction(sig, &fwd, nullptr);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);

  for (;;) {
    int status = 0;
    rusage ru{};
    pid_t got = wait4(-1, &status, __WALL, &ru);
    if (got < 0) {
      if (errno == EINTR) continue;
      _exit(125);  // ECHILD: cannot happen while the program is ours to reap
    }
    if (got != pid) continue;  // an orphan reparented to us: reaped, nothing more
    Record r;
    r.kind = Record::program_status;
    r.status = status;
    r.user_usec = ru.ru_utime.tv_sec * 1000000L + ru.ru_utime.tv_usec;
    r.system_usec = ru.ru_stime.tv_sec * 1000000L + ru.ru_stime.tv_usec;
    r.max_rss_kib = ru.ru_maxrss;
    sandbox::send_record(channel, r);
    // Exiting as pid 1 takes every other process of the namespace with us.
    _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
  }
}

[[noreturn]] void middle_main(Launch& l) noexcept {
  const int channel = l.channel.get();
  prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  if (getppid() != l.caller_pid) _exit(125);
  setpgid(0, 0);
  if (!close_all_but(l.keep_fds)) report_failure(channel, {Step::close_fds, errno, -1});
  StepFailure f;
  if (!sandbox::drop_to_identity(l.identity, &f)) report_failure(channel, f);
  if (!sandbox::enter_namespaces(l.identity, &f)) report_failure(channel, f);

  int self = sys::pidfd_open(getpid(), 0);
  if (self < 0) report_failure(channel, {Step::clone_keeper, errno, -1});
  int keeper_pidfd = -1;
  sys::CloneArgs args;
  args.flags = CLONE_PIDFD;
  args.pidfd = reinterpret_cast<std::uint64_t>(&keeper_pidfd);
  args.exit_signal = SIGCHLD;
  long pid = sys::clone3(&args);
  if (pid < 0) report_failure(channel, {Step::clone_keeper, errno, -1});
  if (pid == 0) keeper_main(l, self);
  close(self);

  Record r;
  r.kind = Record::keeper_pidfd;
  sandbox::send_record(channel, r, keeper_pidfd);
  close(keeper_pidfd);
  for (int fd : l.setup_fds) close(fd);
  close(channel);
  if (!sandbox::drop_capabilities(&f) || !sandbox::set_no_new_privs(&f)) _exit(125);

  int status = 0;
  while (waitpid(static_cast<pid_t>(pid), &status, __WALL) < 0) {
    if (errno != EINTR) _exit(125);
  }
  _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
}

}  // namespace

// ---- the caller's side -----------------------------------------------------------

struct Child::State {
  UniqueFd middle;
  UniqueFd keeper;
  UniqueFd channel;
  std::chrono::steady_clock::time_point start;
  std::optional<std::chrono::milliseconds> timeout;
  std::vector<std::string> labels;  // mount operations, by index, for messages
  Result result;
  bool waited = false;
  bool killed = false;
  bool got_status = false;

  void kill_tree() noexcept {
    // SIGKILL to pid 1 of the namespace ends every process in it, and the
    // middle then exits on its own. Before the keeper's pidfd has arrived,
    // the middle's death takes the keeper with it (its death signal).
    if (keeper) {
      sys::pidfd_send_signal(keeper.get(), SIGKILL);
    } else if (middle) {
      sys::pidfd_send_signal(middle.get(), SIGKILL);
    }
    killed = true;
  }

  void take(const Record& r) {
    switch (r.kind) {
      case Record::setup_failed: {
        SetupFailure f{sandbox::step_name(r.step), r.error, {}};
        if (r.detail >= 0 && static_cast<size_t>(r.detail) < labels.size()) f.detail = labels[r.detail];
        if (!result.setup_failure) result.setup_failure = f;
        break;
      }
      case Record::exec_failed:
        result.exec_error = r.error;
        break;
      case Record::program_status:
        got_status = true;
        if (WIFEXITED(r.status)) result.exit_code = WEXITSTATUS(r.status);
        if (WIFSIGNALED(r.status)) result.signal = WTERMSIG(r.status);
        break;
      default:
        break;
    }
  }

  // Reads one record; false when the channel has nothing more right now.
  bool read_record() {
    Record r;
    iovec iov{&r, sizeof r};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    ssize_t n = recvmsg(channel.get(), &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (n <= 0) return false;
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
        int fd = -1;
        std::memcpy(&fd, CMSG_DATA(c), sizeof fd);
        if (r.kind == Record::keeper_pidfd && !keeper) {
          keeper.reset(fd);
          if (killed) sys::pidfd_send_signal(fd, SIGKILL);
        } else {
          close(fd);
        }
      }
    }
    if (static_cast<size_t>(n) == sizeof r) take(r);
    return true;
  }
};

Child::Child(std::unique_ptr<State> state) : state_(std::move(state)) {}
Child::Child(Child&&) noexcept = default;
Child& Child::operator=(Child&&) noexcept = default;

Child::~Child() {
  if (state_ && !state_->waited) {
    state_->kill_tree();
    siginfo_t info{};
    waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(state_->middle.get()), &info, WEXITED);
  }
}

void Child::cancel() noexcept {
  if (state_) state_->kill_tree();
}

void Child::signal(int sig) noexcept {
  if (state_ && state_->keeper) sys::pidfd_send_signal(state_->keeper.get(), sig);
}

Result Child::wait(int cancel_fd) {
  State& s = *state_;
  if (s.waited) return s.result;
  auto deadline = s.timeout ? std::optional(s.start + *s.timeout) : std::nullopt;
  bool channel_open = true;
  for (;;) {
    pollfd fds[3] = {{s.middle.get(), POLLIN, 0},
                     {channel_open ? s.channel.get() : -1, POLLIN, 0},
                     {cancel_fd, POLLIN, 0}};
    int wait_ms = -1;
    if (deadline && !s.killed) {
      auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(*deadline - std::chrono::steady_clock::now());
      wait_ms = static_cast<int>(std::max<long long>(0, left.count() + 1));
    }
    int n = poll(fds, cancel_fd >= 0 ? 3 : 2, wait_ms);
    if (n < 0 && errno == EINTR) continue;
    if (n == 0 && deadline && !s.killed) {
      s.result.timed_out = true;
      s.kill_tree();
      continue;
    }
    if (fds[1].revents != 0) {
      if (!s.read_record() && (fds[1].revents & (POLLHUP | POLLERR)) != 0) channel_open = false;
    }
    if (cancel_fd >= 0 && fds[2].revents != 0 && !s.killed) {
      s.result.cancelled = true;
      s.kill_tree();
    }
    if (fds[0].revents != 0) break;
  }
  while (s.read_record()) {
  }
  if (s.keeper) {
    // The keeper's pidfd reads as exited only once pid 1's exit has taken
    // every other process of its namespace: after this, nothing of the call runs.
    pollfd keeper{s.keeper.get(), POLLIN, 0};
    while (poll(&keeper, 1, -1) < 0 && errno == EINTR) {
    }
  }
  siginfo_t info{};
  waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(s.middle.get()), &info, WEXITED);
  s.waited = true;
  s.result.duration = std::chrono::steady_clock::now() - s.start;
  if (!s.got_status && !s.result.setup_failure && !s.result.exec_error) {
    // Killed before the keeper could say anything (a cancel, a timeout).
    if (info.si_code == CLD_KILLED || info.si_code == CLD_DUMPED)
      s.result.signal = info.si_status;
    else if (s.killed)
      s.result.signal = SIGKILL;
    else
      s.result.exit_code = info.si_status;
  }
  return s.result;
}

Expected<Child> spawn(const Config& config) {
  Launch l;
  l.caller_pid = getpid();
  auto id = sandbox::plan_identity(config);
  if (!id) return std::move(id).error();
  l.identity = *id;
  auto command = prepare_command(config, l);
  if (!command) return std::move(command).error();
  auto mounts = sandbox::plan_mounts(config, l.identity.drop_from_root);
  if (!mounts) return std::move(mounts).error();
  l.mounts = std::move(*mounts);
  const int abi = landlock::probe_abi();
  auto landlock = landlock::prepare(landlock_rules(config, l.mounts, abi));
  if (!landlock) return std::move(landlock).error();
  l.landlock = std::move(*landlock);
  auto filter = seccomp::build(config.allow_jit);
  if (!filter) return std::move(filter).error();
  l.filter = std::move(*filter);
  l.dev_null.reset(open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!l.dev_null) return sys_error("open", "/dev/null");

  int pair[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0)
    return sys_error("socketpair for the report channel");
  UniqueFd parent_end(pair[0]);
  l.channel.reset(pair[1]);

  l.keep_fds = {0, 1, 2, l.channel.get(), l.dev_null.get()};
  l.setup_fds = {l.dev_null.get()};
  for (auto& op : l.mounts.ops) {
    if (op.detached) {
      l.keep_fds.push_back(op.detached.get());
      l.setup_fds.push_back(op.detached.get());
    }
  }
  std::sort(l.keep_fds.begin(), l.keep_fds.end());
  l.keep_fds.erase(std::unique(l.keep_fds.begin(), l.keep_fds.end()), l.keep_fds.end());

  auto state = std::make_unique<Child::State>();
  state->timeout = config.timeout;
  for (const auto& op : l.mounts.ops) state->labels.push_back(op.label);
  for (const auto& rule : l.landlock.rules) state->labels.push_back("Landlock rule " + rule.path);
  state->result.write_execute_relaxed = config.allow_jit;
  state->result.landlock = landlock::report(l.landlock);

  int middle_pidfd = -1;
  sys::CloneArgs args;
  args.flags = CLONE_PIDFD;
  args.pidfd = reinterpret_cast<std::uint64_t>(&middle_pidfd);
  args.exit_signal = SIGCHLD;
  state->start = std::chrono::steady_clock::now();
  long pid = sys::clone3(&args);
  if (pid < 0) return sys_error("clone3 the sandbox's first process");
  if (pid == 0) middle_main(l);
  state->middle.reset(middle_pidfd);
  state->channel = std::move(parent_end);
  return Child(std::move(state));
}

Expected<Result> run(const Config& config, int cancel_fd) {
  auto child = spawn(config);
  if (!child) return std::move(child).error();
  return child->wait(cancel_fd);
}

}  // namespace chock
