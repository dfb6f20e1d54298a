// The caller's side of a call: spawn() builds the Launch and makes the first
// process; Child waits on pidfds, reads the report channel, and ends the
// whole tree on a cancel or a timeout. The processes themselves are in
// process_tree.cpp.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <mutex>
#include <optional>

#include "chock/net.hpp"
#include "chock/sandbox.hpp"
#include "net/relay.hpp"
#include "sandbox/clone.hpp"
#include "sandbox/directory_cap.hpp"
#include "sandbox/exit_watch.hpp"
#include "sandbox/launch.hpp"
#include "sandbox/limits.hpp"
#include "sandbox/overlay_holder.hpp"
#include "sandbox/process_tree.hpp"
#include "sandbox/steps.hpp"
#include "sandbox/teardown.hpp"
#include "util/fd.hpp"
#include "util/fd_passing.hpp"
#include "util/size.hpp"
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
  bool handed = false;  // its end is a waiter's to see (hand_teardown_to): once waited, not ours
  // What spawn built and no longer needs (its plan, the middle's stack):
  // let go while the program starts, when this process only waits.
  std::shared_ptr<void> leftover;
  bool killed = false;
  // Chock's own end of the call: the keeper was asked then (kEndCallSignal)
  // to end it and report; past the grace, killed.
  std::optional<std::chrono::steady_clock::time_point> end_asked;
  bool got_status = false;
  bool middle_entered = false;  // a root caller's middle waits for its id maps
  std::optional<DiskGuard> disk;
  std::uint64_t disk_used_at_start = 0;
  std::uint64_t disk_free_at_start = 0;
  std::uint64_t inodes_free_at_start = 0;
  std::string disk_stop;  // why the disk guard stopped the call, or empty
  std::optional<DirectoryCap> dir_cap;
  std::uint64_t dir_known = 0;       // the directory's size when last counted
  std::uint64_t dir_fs_used_at = 0;  // its file system's use then
  std::chrono::steady_clock::time_point dir_next{};
  std::string dir_stop;  // why the directory's cap stopped the call, or empty
  std::chrono::steady_clock::time_point disk_next{};
  // Network::filtered: the sockets the program sends out, the broker's host
  // end, and the relay that serves them from the moment the stub's arrives.
  std::shared_ptr<net::Judge> judge;
  std::array<UniqueFd, sandbox::kNetSocketCount> net_sockets;
  UniqueFd broker;
  std::unique_ptr<net::Relay> relay;
  sandbox::PendingHolds holds;  // overlays kept mounted for the session's next call

  void take_net_socket(int which, int fd) {
    if (which < 0 || which >= sandbox::kNetSocketCount || relay) {
      close(fd);
      return;
    }
    net_sockets[which].reset(fd);
    if (which != sandbox::kStubSocket) return;
    net::RelaySockets sockets{std::move(net_sockets[sandbox::kStubSocket]),
                              std::move(net_sockets[sandbox::kRelay4Socket]),
                              std::move(net_sockets[sandbox::kRelay6Socket]), std::move(broker)};
    try {
      relay = std::make_unique<net::Relay>(judge, std::move(sockets));
    } catch (const std::exception&) {
      // Without its relay a filtered call would hang on every connect.
      if (!result.setup_failure)
        result.setup_failure = SetupFailure{"net_relay", errno != 0 ? errno : ENOMEM, {}};
      kill_tree();
    }
  }

  void stop_relay() noexcept {
    if (!relay) return;
    relay->stop();
    try {
      result.network_refusals = relay->refusals();
    } catch (...) {
    }
  }

  // The file system's use, free space and free inodes now; false when unknown.
  bool disk_now(std::uint64_t* used, std::uint64_t* free_bytes, std::uint64_t* free_inodes) const {
    struct statvfs v {};
    if (!disk || ::statvfs(disk->path.c_str(), &v) != 0) return false;
    *used = (static_cast<std::uint64_t>(v.f_blocks) - v.f_bfree) * v.f_frsize;
    *free_bytes = static_cast<std::uint64_t>(v.f_bavail) * v.f_frsize;
    *free_inodes = v.f_files == 0 ? ~0ULL : static_cast<std::uint64_t>(v.f_favail);
    return true;
  }

  // While the call runs: its writes against the cap, the file system against
  // its floors, every 50 ms and down to every 2 ms as the room left shrinks
  // (a write at memory speed, 4 GiB/s, fills half of it in that time: this
  // process wakes late on a loaded machine, and a ctest -j2 run beside a VM
  // saw a 400 MiB dd take 23 MiB past the floor at a quarter).
  // Passed: the whole call is stopped.
  void check_disk() {
    if (!disk || killed) return;
    const auto now = std::chrono::steady_clock::now();
    if (now < disk_next) return;
    std::uint64_t used = 0, free_bytes = 0, free_inodes = 0;
    if (!disk_now(&used, &free_bytes, &free_inodes)) {
      disk_next = now + std::chrono::milliseconds(50);
      return;
    }
    const std::uint64_t wrote = used > disk_used_at_start ? used - disk_used_at_start : 0;
    const std::uint64_t room = std::min(disk->cap_bytes > wrote ? disk->cap_bytes - wrote : 0,
                                        free_bytes > disk->floor_bytes ? free_bytes - disk->floor_bytes : 0);
    // Files are made at up to 100,000 a second, and this process may wake
    // late on a loaded machine: 2 µs an inode of room (a CI run where other
    // builds ran lost the race at 10 µs), down to 250 µs near the floor (a
    // 2 ms floor here let a shell loop make a few hundred files between two
    // looks, and CI saw the inodes run out).
    const std::uint64_t inodes_room =
        disk->floor_inodes == 0 ? ~0ULL / 100
                                : (free_inodes > disk->floor_inodes ? free_inodes - disk->floor_inodes : 0);
    disk_next =
        now + std::chrono::microseconds(std::min(std::clamp<std::uint64_t>(room / 8192, 2000, 50000),
                                                 std::clamp<std::uint64_t>(inodes_room * 2, 250, 50000)));
    if (wrote > disk->cap_bytes)
      disk_stop = "the call wrote " + format_size(wrote / (1 << 20) * (1 << 20)) + " to the file system of " +
                  disk->path + ", past its disk limit of " + format_size(disk->cap_bytes);
    // Under a floor, a call is stopped once it takes more (a call after one
    // stopped at the floor may still run, and write a little).
    else if (free_bytes < disk->floor_bytes && free_bytes + (1 << 20) < disk_free_at_start)
      disk_stop = "the file system of " + disk->path + " had " +
                  format_size(free_bytes / (1 << 20) * (1 << 20)) + " free, under its floor of " +
                  format_size(disk->floor_bytes);
    else if (disk->floor_inodes > 0 && free_inodes < disk->floor_inodes &&
             free_inodes + 100 < inodes_free_at_start)
      disk_stop = "the file system of " + disk->path + " had " + std::to_string(free_inodes) +
                  " free inodes, under its floor of " + std::to_string(disk->floor_inodes);
    if (!disk_stop.empty()) end_call();
  }

  static bool fs_used(const std::string& path, std::uint64_t* used) {
    struct statvfs v {};
    if (::statvfs(path.c_str(), &v) != 0) return false;
    *used = (static_cast<std::uint64_t>(v.f_blocks) - v.f_bfree) * v.f_frsize;
    return true;
  }

  void count_directory(std::uint64_t used) {
    dir_known = sandbox::directory_bytes(dir_cap->path);
    dir_fs_used_at = used;
    if (!dir_cap->record.empty())
      sandbox::keep_directory_count(dir_cap->record,
                                    {dir_known, used, static_cast<std::int64_t>(std::time(nullptr))});
  }

  // Where a call starts: the count kept by an earlier one, grown by what the
  // file system has gained since, while that stays under the cap; else a
  // count of its own (a walk of the whole directory), kept for the next.
  void count_directory_at_start(std::uint64_t used) {
    const std::int64_t now = std::time(nullptr);
    if (auto last = sandbox::read_directory_count(dir_cap->record);
        last && now >= last->at && now - last->at < sandbox::kDirectoryCountMaxAgeSeconds &&
        used >= last->fs_used) {
      const std::uint64_t bound = last->bytes + (used - last->fs_used);
      if (bound >= last->bytes && bound <= dir_cap->cap_bytes) {
        dir_known = bound;
        dir_fs_used_at = used;
        return;
      }
    }
    count_directory(used);
  }

  // The directory can have grown by no more than its file system's use has
  // since it was last counted: it is counted again only when that bound
  // passes the cap (and at most every 100 ms), and the call is stopped when
  // the count does.
  void check_directory_cap() {
    if (!dir_cap || killed) return;
    const auto now = std::chrono::steady_clock::now();
    std::uint64_t used = 0;
    if (now < dir_next || !fs_used(dir_cap->path, &used)) return;
    const std::uint64_t grown = used > dir_fs_used_at ? used - dir_fs_used_at : 0;
    if (dir_known + grown <= dir_cap->cap_bytes) return;
    count_directory(used);
    dir_next = now + std::chrono::milliseconds(100);
    if (dir_known <= dir_cap->cap_bytes) return;
    dir_stop = dir_cap->name + " held " + format_size(dir_known / (1 << 20) * (1 << 20)) +
               ", past its cap of " + format_size(dir_cap->cap_bytes);
    end_call();
  }

  void kill_tree() noexcept {
    // SIGKILL to pid 1 of the namespace ends every process in it.
    if (keeper) sys::pidfd_send_signal(keeper.get(), SIGKILL);
    killed = true;
  }

  // A timeout, a cancel, a limit of Chock's: the keeper ends the call and
  // reports what it counted (refusals, filter kills, memory), so the result
  // says the same whichever way the call ended (issue 53).
  void end_call() noexcept {
    if (killed) return;
    if (!keeper || sys::pidfd_send_signal(keeper.get(), sandbox::kEndCallSignal) != 0) return kill_tree();
    end_asked = std::chrono::steady_clock::now();
    killed = true;
  }

  [[nodiscard]] std::optional<std::chrono::steady_clock::time_point> end_grace_over() const {
    if (!end_asked) return std::nullopt;
    return *end_asked + std::chrono::milliseconds(sandbox::kEndCallGraceMs);
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
      case Record::entered:
        middle_entered = true;
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
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    FdControl control;
    expect_fd(msg, control);
    ssize_t n = recvmsg(channel.get(), &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (n <= 0) return false;
    if (const int fd = received_fd(msg); fd >= 0) {
      if (r.kind == Record::keeper_pidfd && !keeper) {
        keeper.reset(fd);
      } else if (r.kind == Record::net_socket && static_cast<size_t>(n) == sizeof r) {
        take_net_socket(r.detail, fd);
      } else if (r.kind == Record::held_overlay && static_cast<size_t>(n) == sizeof r) {
        holds.offer(r.detail, UniqueFd(fd));
        holds.start_ready();
      } else {
        close(fd);
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
  if (state_ && state_->handed) sandbox::settle_teardown();
  if (state_ && state_->keeper && !state_->reaped && !(state_->handed && state_->waited)) {
    if (!state_->waited) state_->kill_tree();
    siginfo_t info{};
    waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(state_->keeper.get()), &info, WEXITED);
  }
}

void Child::detach() noexcept {
  if (state_ && state_->waited) state_->reaped = true;
}

bool Child::hand_teardown_to(int held_fd) noexcept {
  if (!state_ || state_->handed || state_->reaped || !state_->keeper) return true;
  if (!sandbox::hand_teardown(state_->keeper.get(), held_fd)) return false;
  state_->handed = true;
  return true;
}

void Child::cancel() noexcept {
  if (state_) state_->kill_tree();
}

int Child::keeper_pidfd() const noexcept {
  return state_ && state_->keeper ? state_->keeper.get() : -1;
}

void Child::signal(int sig) noexcept {
  if (state_ && state_->keeper) sys::pidfd_send_signal(state_->keeper.get(), sig);
}

Result Child::wait(int cancel_fd) {
  State& s = *state_;
  if (s.waited) return s.result;
  const bool has_deadline = s.timeout.has_value();
  const auto deadline = has_deadline ? s.start + *s.timeout : std::chrono::steady_clock::time_point::max();
  bool channel_open = true;
  // Until the keeper reports the program's end, which it does once it has
  // ended every other process of the call, or until its pidfd reads as exited
  // (killed, or failed before the program ran), which pid 1's exit does only
  // once it has taken every other process of its namespace.
  s.leftover.reset();
  while (s.keeper && !s.got_status) {
    pollfd fds[3] = {{s.keeper.get(), POLLIN, 0},
                     {channel_open ? s.channel.get() : -1, POLLIN, 0},
                     {s.killed ? -1 : cancel_fd, POLLIN, 0}};  // heard once; it stays readable
    // The next look: to the microsecond (poll's milliseconds, rounded up,
    // kept the disk guard a millisecond and more behind its interval).
    using std::chrono::microseconds;
    std::optional<microseconds> wait;
    const auto until = [](std::chrono::steady_clock::time_point t) {
      return std::max(microseconds(0), std::chrono::ceil<microseconds>(t - std::chrono::steady_clock::now()));
    };
    if (has_deadline && !s.killed) wait = until(deadline);
    if (s.disk && !s.killed) wait = std::min(wait.value_or(microseconds::max()), until(s.disk_next));
    if (s.dir_cap && !s.killed) wait = std::min(wait.value_or(microseconds::max()), microseconds(50000));
    const auto grace = s.end_grace_over();
    if (grace) wait = std::min(wait.value_or(microseconds::max()), until(*grace));
    timespec wait_ts{};
    if (wait) {
      wait_ts.tv_sec = static_cast<time_t>(wait->count() / 1000000);
      wait_ts.tv_nsec = static_cast<long>(wait->count() % 1000000) * 1000;
    }
    int n = ppoll(fds, cancel_fd >= 0 ? 3 : 2, wait ? &wait_ts : nullptr, nullptr);
    if (n < 0 && errno == EINTR) continue;
    s.check_disk();
    s.check_directory_cap();
    if (n == 0 && has_deadline && !s.killed && std::chrono::steady_clock::now() >= deadline) {
      s.result.timed_out = true;
      s.end_call();
      continue;
    }
    if (grace && std::chrono::steady_clock::now() >= *grace) {
      s.kill_tree();  // the keeper did not answer in time: what it counted is lost
      s.end_asked.reset();
    }
    if (fds[1].revents != 0) {
      if (!s.read_record() && (fds[1].revents & (POLLHUP | POLLERR)) != 0) channel_open = false;
    }
    if (cancel_fd >= 0 && fds[2].revents != 0 && !s.killed) {
      s.result.cancelled = true;
      s.end_call();
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
  // Before the caller lets go of its locks and output, which the waiter's
  // copies of its descriptors would hold on to.
  if (s.handed) sandbox::settle_teardown();
  s.stop_relay();
  s.result.duration = std::chrono::steady_clock::now() - s.start;
  if (s.keeper && !s.got_status && !s.result.setup_failure && !s.result.exec_error) {
    // Killed before the keeper could say anything (a cancel, a timeout).
    if (info.si_code == CLD_KILLED || info.si_code == CLD_DUMPED)
      s.result.signal = info.si_status;
    else if (s.killed)
      s.result.signal = SIGKILL;
    else {
      s.result.exit_code = info.si_status;
      s.result.report_lost = true;
    }
  }
  if (s.limits) finish_limits(*s.limits, s.result, s.evidence);
  if (!s.disk_stop.empty()) {
    s.result.limits.killed_by = "disk";
    s.result.limits.killed_by_limit = s.disk->cap_bytes;
    s.result.limits.disk_reason = s.disk_stop;
  }
  if (!s.dir_stop.empty()) {
    s.result.limits.killed_by = "cache";
    s.result.limits.killed_by_limit = s.dir_cap->cap_bytes;
    s.result.limits.disk_reason = s.dir_stop;
  }
  return s.result;
}

namespace {

// A root caller's middle makes this process's memory not dumpable (see
// drop_to_identity): dumpable is the memory's, so one call's end must not
// give it back while another root middle of this process (another thread's
// call) still shares it. The last one to end gives back what the first found.
class RootMiddles {
 public:
  static void starting() {
    std::lock_guard lock(mutex_);
    if (live_++ == 0) saved_ = prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);
  }
  static void ended() noexcept {
    std::lock_guard lock(mutex_);
    if (--live_ == 0 && saved_ > 0) prctl(PR_SET_DUMPABLE, saved_, 0, 0, 0);
  }

 private:
  static inline std::mutex mutex_;
  static inline int live_ = 0;
  static inline int saved_ = -1;
};

// The middle, from its clone until it has ended: however spawn() leaves, the
// middle hears whether there is a plan and is reaped before the Launch it
// reads and runs on goes away.
class Middle {
 public:
  explicit Middle(sandbox::Launch& l) : l_(l) {}
  Middle(const Middle&) = delete;
  Middle& operator=(const Middle&) = delete;
  ~Middle() { finish(false); }

  Expected<void> start(LimitsSetup& limits) {
    root_ = l_.identity.drop_from_root && sandbox::kMiddleRunsAlongside;
    if (root_) RootMiddles::starting();
    auto made = make(limits);
    if (!made && root_) {
      RootMiddles::ended();
      root_ = false;
    }
    return made;
  }

  // A root caller's middle shares this memory, so it may not write its own id
  // maps (see drop_to_identity): once it says it is in its namespaces, this
  // process writes them. False when it did not get that far (its record says
  // why) or the maps failed (a setup failure in `state`).
  bool write_maps(Child::State& state) {
    while (!state.middle_entered) {
      pollfd fds[2] = {{state.channel.get(), POLLIN, 0}, {fd_.get(), POLLIN, 0}};
      if (poll(fds, 2, -1) < 0) {
        if (errno == EINTR) continue;
        return failed(state, sandbox::Step::uid_map, errno);
      }
      while (state.read_record()) {
      }
      if (!state.middle_entered && fds[1].revents != 0) return false;  // it ended
    }
    // Pinned to the middle by its pidfd: a program that ignores SIGCHLD has
    // its children reaped at once, and their numbers taken again.
    UniqueFd proc(sys::open_proc_pinned(pid_, fd_.get()));
    if (!proc) return failed(state, sandbox::Step::uid_map, errno);
    sandbox::StepFailure f;
    if (!sandbox::write_maps(proc.get(), l_.identity, &f)) return failed(state, f.step, f.error);
    return true;
  }

  // Whether it has said it is in its namespaces: what the channel holds
  // now, without waiting.
  bool entered(Child::State& state) {
    while (!state.middle_entered && state.read_record()) {
    }
    return state.middle_entered;
  }

  // Hands over the plan (or says there is none) and waits for the middle to
  // end: by then every record it sent (the keeper's pidfd, or why it failed)
  // is in the channel.
  void finish(bool plan) noexcept {
    if (!fd_) return;
    l_.publish_plan(plan);
    siginfo_t ended{};
    waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(fd_.get()), &ended, WEXITED);
    fd_.reset();
    if (root_) RootMiddles::ended();
  }

 private:
  // Made inside the cgroup, if any, so nothing of the call is ever outside
  // it. It shares this process's memory and descriptors (CLONE_VM,
  // CLONE_FILES: nothing is copied to make it) on a stack of its own; where
  // it cannot run alongside, it shares nothing and holds this thread.
  Expected<void> make(LimitsSetup& limits) {
    constexpr std::uint64_t kFlags = sandbox::kMiddleRunsAlongside ? CLONE_VM | CLONE_FILES : CLONE_VFORK;
    int pidfd = -1;
    long pid = sandbox::clone_on_stack(&pidfd, limits.clone_cgroup_fd, kFlags, l_.middle_stack,
                                       sandbox::middle_entry, &l_);
    if (pid < 0 && limits.clone_cgroup_fd >= 0) {
      // A supplied cgroup refuses rather than runs outside it; a managed one
      // is dropped (and says why) and the call runs under the rlimit floor.
      if (auto refused = limits.placement_failed(errno)) return *std::move(refused);
      pid = sandbox::clone_on_stack(&pidfd, -1, kFlags, l_.middle_stack, sandbox::middle_entry, &l_);
    }
    if (pid < 0) return sys_error("clone the sandbox's first process");
    fd_.reset(pidfd);
    pid_ = static_cast<pid_t>(pid);
    return {};
  }

  static bool failed(Child::State& state, sandbox::Step step, int error) {
    Record r;
    r.kind = Record::setup_failed;
    r.step = step;
    r.error = error;
    state.take(r);
    return false;
  }

  sandbox::Launch& l_;
  UniqueFd fd_;
  pid_t pid_ = 0;
  bool root_ = false;  // counted in RootMiddles
};

// The plan: everything the keeper and the program need, and what the caller
// keeps to name a failed step.
Expected<void> prepare_plan(const Config& config, const LimitsSetup& limits, sandbox::Launch& l,
                            Child::State& state) {
  // Before any overlay is made: a change to a watched lower layer after it is one the holder lets go for.
  timespec before{};
  ::clock_gettime(CLOCK_REALTIME, &before);
  if (auto prepared = sandbox::prepare_launch(config, limits, l, state.labels); !prepared)
    return std::move(prepared).error();
  state.holds.plan(config, l.mounts,
                   static_cast<std::int64_t>(before.tv_sec) * 1'000'000'000 + before.tv_nsec);
  l.keep_fds = {0, 1, 2, l.channel.get(), l.dev_null.get(), l.caller_pidfd.get()};
  l.setup_fds = {l.dev_null.get()};
  if (l.broker_fd >= 0) {
    l.keep_fds.push_back(l.broker_fd);
    l.setup_fds.push_back(l.broker_fd);
  }
  for (auto& op : l.mounts.ops) {
    if (op.detached) {
      l.keep_fds.push_back(op.detached.get());
      l.setup_fds.push_back(op.detached.get());
    }
  }
  std::sort(l.keep_fds.begin(), l.keep_fds.end());
  l.keep_fds.erase(std::unique(l.keep_fds.begin(), l.keep_fds.end()), l.keep_fds.end());
  state.result.write_execute_relaxed = config.allow_jit;
  state.result.landlock = landlock::report(l.landlock);
  return {};
}

}  // namespace

// What begin() starts and spawn() finishes. Never moved (the middle reads
// `l`); `middle` is declared after `l`, so it is reaped before `l` goes.
struct Begun::Impl {
  Config early;  // user, network, limits and containment: what the middle was started for
  std::optional<LimitsSetup> limits;
  std::unique_ptr<Child::State> state = std::make_unique<Child::State>();
  sandbox::Launch l;
  Middle middle{l};

  // Whether `config` asks for the sandbox this one was begun as.
  [[nodiscard]] bool fits(const Config& config) const {
    auto id = sandbox::plan_identity(config);
    return id && id->uid == l.identity.uid && id->gid == l.identity.gid &&
           id->unshare_flags == l.identity.unshare_flags && id->drop_from_root == l.identity.drop_from_root &&
           config.limits == early.limits && config.containment.kind == early.containment.kind &&
           config.containment.cgroup_fd == early.containment.cgroup_fd;
  }
};

Begun::Begun(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Begun::Begun(Begun&&) noexcept = default;
Begun& Begun::operator=(Begun&&) noexcept = default;
Begun::~Begun() = default;

Expected<Begun> begin(const Config& early) {
  auto b = std::make_unique<Begun::Impl>();
  b->early.user = early.user;
  b->early.network = early.network;
  b->early.limits = early.limits;
  b->early.containment = early.containment;
  auto limits = prepare_limits(early);
  if (!limits) return std::move(limits).error();
  b->limits = std::move(*limits);
  if (auto identity = sandbox::prepare_identity(early, b->l); !identity) return std::move(identity).error();
  int pair[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0)
    return sys_error("socketpair for the report channel");
  b->state->channel.reset(pair[0]);
  b->l.channel.reset(pair[1]);
  // Where it can, the middle enters the namespaces (most of a call's
  // start-up, in the kernel) while this process goes on; where it cannot run
  // alongside, it holds this process until it ends, so it waits for the plan.
  if constexpr (sandbox::kMiddleRunsAlongside) {
    if (auto started = b->middle.start(*b->limits); !started) return std::move(started).error();
  }
  return Begun(std::move(b));
}

Expected<Child> spawn(const Config& config) {
  auto begun = begin(config);
  if (!begun) return std::move(begun).error();
  return spawn(config, std::move(*begun));
}

Expected<Child> spawn(const Config& config, Begun begun) {
  if (!begun.impl_ || !begun.impl_->fits(config)) {
    begun = Begun(nullptr);  // its middle hears there is no plan, and ends
    auto fresh = begin(config);
    if (!fresh) return std::move(fresh).error();
    begun = std::move(*fresh);
  }
  Begun::Impl& b = *begun.impl_;
  Child::State* state = b.state.get();
  LimitsSetup& limits = *b.limits;
  sandbox::Launch& l = b.l;
  state->timeout = config.timeout;
  state->disk = config.disk;
  UniqueFd broker_inside;  // the keeper takes its copy; ours goes when spawn returns
  if (config.network == Network::filtered) {
    state->result.network_filtered = true;
    state->judge = config.judge;
    if (!state->judge)
      state->judge = std::make_shared<net::Judge>([](const std::string& action) {
        return net::Ruling{false, "deny", "", action + " is refused: this call was given no judge"};
      });
    int broker[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, broker) != 0)
      return sys_error("socketpair for the network broker");
    refuse_passed_fds(broker[0]);  // before the program can send anything into it (issue 53)
    state->broker.reset(broker[0]);
    broker_inside.reset(broker[1]);
    l.broker_fd = broker[1];
  }
  if (state->disk) {
    if (!state->disk_now(&state->disk_used_at_start, &state->disk_free_at_start,
                         &state->inodes_free_at_start))
      return sys_error("statvfs, for the disk limit", state->disk->path);
  }
  if (config.directory_cap) {
    state->dir_cap = config.directory_cap;
    std::uint64_t used = 0;
    if (!Child::State::fs_used(state->dir_cap->path, &used))
      return sys_error("statvfs, for the cap of " + state->dir_cap->name, state->dir_cap->path);
    state->count_directory_at_start(used);
  }
  state->start = std::chrono::steady_clock::now();

  if constexpr (!sandbox::kMiddleRunsAlongside) {
    if (auto plan = prepare_plan(config, limits, l, *state); !plan) return std::move(plan).error();
    if (config.while_entering) config.while_entering();
    l.publish_plan(true);
    if (auto started = b.middle.start(limits); !started) return std::move(started).error();
  }
  bool go = true;
  if constexpr (sandbox::kMiddleRunsAlongside) {
    // A middle begun a while ago is in its namespaces by now: given its maps
    // first, it drops its capabilities while the plan is built.
    bool maps_written = false;
    if (l.identity.drop_from_root && b.middle.entered(*state)) {
      go = b.middle.write_maps(*state);
      maps_written = true;
    }
    if (auto plan = prepare_plan(config, limits, l, *state); !plan) return std::move(plan).error();
    if (l.identity.drop_from_root && !maps_written) go = b.middle.write_maps(*state);
    // The caller's own work goes while the middle makes the keeper, which
    // this thread would only wait for.
    l.publish_plan(go);
    if (config.while_entering) config.while_entering();
  }
  b.middle.finish(go);
  while (state->read_record()) {
  }
  state->limits = std::move(limits);
  state->holds.start_ready();  // a root caller's: the program is on its way
  std::unique_ptr<Child::State> made = std::move(b.state);
  made->leftover = std::shared_ptr<Begun::Impl>(std::move(begun.impl_));
  return Child(std::move(made));
}

Expected<Result> run(const Config& config, int cancel_fd) {
  auto child = spawn(config);
  if (!child) return std::move(child).error();
  return child->wait(cancel_fd);
}

}  // namespace chock
