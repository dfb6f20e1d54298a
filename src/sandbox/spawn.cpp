// The caller's side of a call: spawn() builds the Launch and makes the first
// process; Child waits on pidfds, reads the report channel, and ends the
// whole tree on a cancel or a timeout. The processes themselves are in
// process_tree.cpp.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "chock/sandbox.hpp"
#include "sandbox/clone.hpp"
#include "sandbox/launch.hpp"
#include "sandbox/limits.hpp"
#include "sandbox/process_tree.hpp"
#include "sandbox/steps.hpp"
#include "util/fd.hpp"
#include "util/syscalls.hpp"

namespace chock {

using sandbox::Record;

// ---- the caller's side -----------------------------------------------------------

struct Child::State {
  UniqueFd keeper;  // none when the middle failed before making it
  UniqueFd channel;
  std::chrono::steady_clock::time_point start;
  std::optional<std::chrono::milliseconds> timeout;
  std::vector<std::string> labels;  // what a failed step's detail index names
  std::optional<LimitsSetup> limits;
  exit_watch::Evidence evidence;
  Result result;
  bool waited = false;
  bool reaped = false;  // the keeper is gone (or, detached, no longer ours to wait for)
  bool killed = false;
  bool got_status = false;

  void kill_tree() noexcept {
    // SIGKILL to pid 1 of the namespace ends every process in it.
    if (keeper) sys::pidfd_send_signal(keeper.get(), SIGKILL);
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
        evidence = r.evidence;
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
  if (state_ && state_->keeper && !state_->reaped) {
    if (!state_->waited) state_->kill_tree();
    siginfo_t info{};
    waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(state_->keeper.get()), &info, WEXITED);
  }
}

void Child::detach() noexcept {
  if (state_ && state_->waited) state_->reaped = true;
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
  // Until the keeper reports the program's end, which it does once it has
  // ended every other process of the call, or until its pidfd reads as exited
  // (killed, or failed before the program ran), which pid 1's exit does only
  // once it has taken every other process of its namespace.
  while (s.keeper && !s.got_status) {
    pollfd fds[3] = {{s.keeper.get(), POLLIN, 0},
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
  siginfo_t info{};
  if (s.keeper) {
    // After a report the keeper's own exit, the teardown of the namespaces it
    // held, is left to finish on its own (the destructor reaps it), unless a
    // cgroup must be emptied and removed after it.
    const bool cgroup = s.limits && (s.limits->supplied || s.limits->managed.state() == CgroupState::ok);
    const int flags = s.got_status && !cgroup ? WEXITED | WNOHANG : WEXITED;
    if (waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(s.keeper.get()), &info, flags) == 0 &&
        info.si_pid != 0)
      s.reaped = true;
  }
  s.waited = true;
  s.result.duration = std::chrono::steady_clock::now() - s.start;
  if (s.keeper && !s.got_status && !s.result.setup_failure && !s.result.exec_error) {
    // Killed before the keeper could say anything (a cancel, a timeout).
    if (info.si_code == CLD_KILLED || info.si_code == CLD_DUMPED)
      s.result.signal = info.si_status;
    else if (s.killed)
      s.result.signal = SIGKILL;
    else
      s.result.exit_code = info.si_status;
  }
  if (s.limits) finish_limits(*s.limits, s.result, s.evidence);
  return s.result;
}

Expected<Child> spawn(const Config& config) {
  auto limits = prepare_limits(config);
  if (!limits) return std::move(limits).error();
  auto state = std::make_unique<Child::State>();
  sandbox::Launch l;
  if (auto prepared = sandbox::prepare_launch(config, *limits, l, state->labels); !prepared)
    return std::move(prepared).error();

  int pair[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0)
    return sys_error("socketpair for the report channel");
  state->channel.reset(pair[0]);
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

  state->timeout = config.timeout;
  state->result.write_execute_relaxed = config.allow_jit;
  state->result.landlock = landlock::report(l.landlock);
  state->start = std::chrono::steady_clock::now();
  // The middle shares this process's memory (CLONE_VM: nothing is copied to
  // make it) on a stack of its own, and CLONE_VFORK holds this thread until
  // it has made the keeper (or failed) and ended. Made inside the cgroup, if
  // any, so nothing of the call is ever outside it.
  int middle_pidfd = -1;
  constexpr std::uint64_t kMiddle = CLONE_VM | CLONE_VFORK;
  long middle = sandbox::clone_on_stack(&middle_pidfd, limits->clone_cgroup_fd, kMiddle, l.middle_stack,
                                        sandbox::middle_entry, &l);
  if (middle < 0 && limits->clone_cgroup_fd >= 0) {
    // A supplied cgroup refuses rather than runs outside it; a managed one is
    // dropped (and says why) and the call runs under the rlimit floor.
    if (auto refused = limits->placement_failed(errno)) return *std::move(refused);
    middle = sandbox::clone_on_stack(&middle_pidfd, -1, kMiddle, l.middle_stack, sandbox::middle_entry, &l);
  }
  if (middle < 0) return sys_error("clone the sandbox's first process");
  UniqueFd middle_fd(middle_pidfd);
  // Every record the middle sent (the keeper's pidfd, or why it failed) is in
  // the channel once it has ended.
  siginfo_t ended{};
  waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(middle_fd.get()), &ended, WEXITED);
  while (state->read_record()) {
  }
  state->limits = std::move(*limits);
  return Child(std::move(state));
}

Expected<Result> run(const Config& config, int cancel_fd) {
  auto child = spawn(config);
  if (!child) return std::move(child).error();
  return child->wait(cancel_fd);
}

}  // namespace chock
