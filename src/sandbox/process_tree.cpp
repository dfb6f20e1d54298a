#include "sandbox/process_tree.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "sandbox/capabilities.hpp"
#include "sandbox/clone.hpp"
#include "sandbox/steps.hpp"
#include "sandbox/stuck_watch.hpp"
#include "util/syscalls.hpp"

namespace chock::sandbox {

namespace {

// Signals the keeper passes on to the program. Everything that ends a call
// goes through the pidfd instead.
constexpr int kForwardedSignals[] = {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGWINCH, SIGCONT};

Step landlock_step(const char* step) noexcept {
  if (std::strcmp(step, "landlock_rule") == 0) return Step::landlock_rule;
  if (std::strcmp(step, "landlock_restrict") == 0) return Step::landlock_restrict;
  if (std::strcmp(step, "no_new_privs") == 0) return Step::no_new_privs;
  return Step::landlock_ruleset;
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

// execve resets every caught signal by itself; an ignored one and the mask
// would reach the program, so those are reset here. The raw system call,
// because glibc's sigaction refuses its own two real-time signals, which
// posix_spawn leaves ignored in a child and which would reach the program too.
void reset_signals(std::uint64_t ignored) noexcept {
  struct {
    void (*handler)(int);
    unsigned long flags;
#ifdef SA_RESTORER
    void (*restorer)();
#endif
    std::uint64_t mask;
  } dfl{};
  dfl.handler = SIG_DFL;
  for (int sig = 1; sig <= 64; ++sig) {
    if ((ignored & (1ULL << (sig - 1))) != 0 && sig != SIGKILL && sig != SIGSTOP)
      syscall(SYS_rt_sigaction, sig, &dfl, nullptr, sizeof dfl.mask);
  }
  std::uint64_t none = 0;
  syscall(SYS_rt_sigprocmask, SIG_SETMASK, &none, nullptr, sizeof none);
}

[[noreturn]] void exec_program(Launch& l, int channel) noexcept {
  int saved = ENOENT;
  for (auto& candidate : l.candidates) {
    execve(candidate.c_str(), l.argv.data(), l.envp.data());
    // Like execvp: a missing entry moves on; a refusal is remembered.
    if (errno == EACCES) {
      saved = EACCES;
    } else if (errno != ENOENT && errno != ENOTDIR) {
      saved = errno;
      break;
    }
  }
  Record r;
  r.kind = Record::exec_failed;
  r.error = saved;
  send_record(channel, r);
  _exit(saved == ENOENT || saved == ENOTDIR ? 127 : 126);
}

// `seized`: readable (a byte, or EOF) once the keeper watches this process.
[[noreturn]] void program_main(Launch& l, int seized) noexcept {
  const int channel = l.channel.get();
  StepFailure f;
  prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  if (setsid() < 0) fail_step(channel, {Step::setsid, errno, -1});
  // No process of the call makes a user namespace by any route (unshare,
  // clone, clone3): written while this process still holds its capabilities.
  if (!forbid_nested_user_namespaces()) fail_step(channel, {Step::userns_limit, errno, -1});
  // A call's own loopback reaches only the call: test suites' servers on
  // 127.0.0.1 work; no other interface, route or host is there.
  if ((l.identity.unshare_flags & CLONE_NEWNET) != 0 && !bring_up_loopback())
    fail_step(channel, {Step::loopback, errno, -1});
  if (l.filtered.enabled && !set_up_filtered_network(l.filtered, channel, &f)) fail_step(channel, f);
  if (!build_mount_tree(l.mounts, channel, &f)) fail_step(channel, f);
  if (!l.pass_stdin && dup2(l.dev_null.get(), 0) < 0) fail_step(channel, {Step::stdin, errno, -1});
  l.dev_null.reset();
  if (chdir(l.cwd.c_str()) != 0) fail_step(channel, {Step::chdir, errno, -1});
  if (!clear_capabilities(&f)) fail_step(channel, f);
  landlock::Failure lf{"", 0, -1};
  if (!landlock::apply(l.landlock, &lf)) {
    // A rule's index is reported after the mount labels (see prepare_launch).
    const int detail = lf.rule >= 0 ? static_cast<int>(l.mounts.ops.size()) + lf.rule : -1;
    fail_step(channel, {landlock_step(lf.step), lf.error, detail});
  }
  int error = 0;
  if (!seccomp::join_fresh_session_keyring(&error)) fail_step(channel, {Step::keyring, error, -1});
  reset_signals(l.ignored_signals);
  if (!seccomp::install(l.filter, &error)) fail_step(channel, {Step::seccomp, error, -1});
  char byte = 0;
  while (read(seized, &byte, 1) < 0 && errno == EINTR) {
  }
  close(seized);
  int resource = 0;
  if (int err = rlimits::apply(l.rlimits, &resource); err != 0) {
    int detail = -1;
    for (std::size_t i = 0; i < l.rlimits.count; ++i)
      if (l.rlimits.entries[i].resource == resource) detail = l.rlimit_labels + static_cast<int>(i);
    fail_step(channel, {Step::rlimits, err, detail});
  }
  // The broker at fd 3 (CHOCK_BROKER_FD). The channel is this process's own
  // number here (the keeper, in the same memory, keeps its own), moved first
  // if it is 3.
  int report = channel;
  if (l.broker_fd >= 0) {
    if (report == 3) report = fcntl(3, F_DUPFD_CLOEXEC, 4);
    if (report < 0 || dup2(l.broker_fd, 3) < 0) fail_step(channel, {Step::close_fds, errno, -1});
  }
  exec_program(l, report);
}

// What the program's clone hands it: the keeper's frame outlives it (the
// keeper never returns), and the two share memory until the exec.
struct ProgramStart {
  Launch* launch;
  int seized[2];  // the pipe the keeper writes to once it watches the program
};

int program_entry(void* arg) {
  auto* start = static_cast<ProgramStart*>(arg);
  close(start->seized[1]);  // so a keeper that died before writing reads as EOF
  program_main(*start->launch, start->seized[0]);
}

// The program has ended; what it left behind (a daemon, a stopped child) is
// killed and reaped, so when the keeper reports, it is the call's last
// process. kill(-1) from pid 1 reaches every other process of the namespace;
// an orphan is the keeper's child before its parent can be reaped, so ECHILD
// means none is left. Ptrace stops are only let go: what the keeper kills is
// not evidence.
void end_every_other_process() noexcept {
  kill(-1, SIGKILL);
  for (;;) {
    int status = 0;
    pid_t got = waitpid(-1, &status, __WALL);
    if (got < 0) {
      if (errno == EINTR) continue;
      return;  // ECHILD
    }
    if (WIFSTOPPED(status)) ptrace(PTRACE_CONT, got, nullptr, 0);
  }
}

volatile int g_program_pidfd = -1;
volatile sig_atomic_t g_tick = 0;

void on_timer(int) {
  g_tick = 1;
}

// Every `usec`, from now on: a SIGALRM that interrupts the keeper's wait.
void measure_every(long usec) noexcept {
  itimerval t{};
  t.it_value.tv_sec = usec / 1'000'000;
  t.it_value.tv_usec = usec % 1'000'000;
  t.it_interval = t.it_value;
  setitimer(ITIMER_REAL, &t, nullptr);
}

// The memory limit without a cgroup: measured, and when passed, every
// process of the call but the keeper is killed at once.
void measure_memory_now(exit_watch::Watch& watch) noexcept {
  std::uint64_t used = 0;
  if (exit_watch::measure_memory(watch, &used)) {
    kill(-1, SIGKILL);
    measure_every(0);  // said once; the program's end follows
    watch.memory_limit = 0;
    return;
  }
  measure_every(exit_watch::memory_interval_usec(watch.memory_limit, used));
}

// Once the filter has killed a process, the keeper looks every
// stuck_watch::kIntervalUsec (on the memory watch's ticks when it has them)
// for a call that can never end, and ends it at once.
void watch_for_never_ending(exit_watch::Watch& watch, stuck_watch::Watch& stuck) noexcept {
  if (stuck.armed || stuck.ended || watch.evidence.filter_kill_count == 0) return;
  stuck.armed = true;
  if (watch.memory_limit == 0) measure_every(stuck_watch::kIntervalUsec);
}

void end_if_never_ending(exit_watch::Watch& watch, stuck_watch::Watch& stuck) noexcept {
  if (!stuck_watch::never_ends(stuck, exit_watch::proc_dir(watch))) return;
  stuck.ended = true;
  watch.evidence.never_ending = 1;
  if (watch.memory_limit == 0) measure_every(0);
  kill(-1, SIGKILL);  // the program's end then comes to the loop as any end does
}

// kEndCallSignal: from outside the call's pid namespace, where the sender
// reads as pid 0 (a process of the call cannot send SI_USER with another
// pid than its own). Every other process of the namespace is killed; the
// program's end then comes to the loop below as any end does.
void on_end_call(int, siginfo_t* info, void*) {
  if (info == nullptr || info->si_code != SI_USER || info->si_pid != 0) return;
  const int saved = errno;
  kill(-1, SIGKILL);
  errno = saved;
}

void forward_signal(int sig) {
  int saved = errno;
  sys::pidfd_send_signal(g_program_pidfd, sig);
  errno = saved;
}

[[noreturn]] void keeper_main(Launch& l) noexcept {
  const int channel = l.channel.get();
  // The middle shared the caller's descriptors; the keeper has a copy of
  // them, takes the call's 0, 1 and 2 from where the caller said, and
  // keeps only what the call needs.
  for (int i = 0; i < 3; ++i)
    if (l.stdio[i] != i && dup2(l.stdio[i], i) < 0) fail_step(channel, {Step::close_fds, errno, -1});
  if (!close_all_but(l.keep_fds)) fail_step(channel, {Step::close_fds, errno, -1});
  // The keeper is the caller's child (CLONE_PARENT). If chock died before the
  // death signal was asked for, its pidfd reads as exited. (Not getppid: the
  // caller is outside the keeper's pid namespace, where it reads 0.)
  prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  pollfd p{l.caller_pidfd.get(), POLLIN, 0};
  if (poll(&p, 1, 0) != 0) _exit(125);
  l.caller_pidfd.reset();
  exit_watch::Watch& watch = l.watch;
  watch.find_proc = true;
  stuck_watch::Watch stuck;
  stuck_watch::note_host_pipes(stuck, l.keep_fds.data(), l.keep_fds.size());
  int seized[2];
  if (pipe2(seized, O_CLOEXEC) != 0) fail_step(channel, {Step::clone_program, errno, -1});
  // The program shares the keeper's memory until its exec (CLONE_VM, on a
  // stack of its own): no copy of the address space, no page faults to
  // rebuild it. Neither touches what the other writes.
  int program_pidfd = -1;
  ProgramStart start{&l, {seized[0], seized[1]}};
  // A root caller's middle left this memory not dumpable, which a tracer of
  // another user namespace needs it to be; only for the seize, since this
  // memory is a copy of the caller's.
  if (l.identity.drop_from_root) prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
  const long pid = clone_on_stack(&program_pidfd, -1, CLONE_VM, l.program_stack, program_entry, &start);
  if (pid < 0) fail_step(channel, {Step::clone_program, errno, -1});
  close(seized[0]);
  // Watched before it can exec (it waits for the byte), while both of us
  // still hold the same capabilities; untraced, the naming is only weaker.
  exit_watch::seize(watch, static_cast<pid_t>(pid));
  if (l.identity.drop_from_root) prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  // Its read returns at this byte, or at the close below if the write failed.
  [[maybe_unused]] const ssize_t sent = write(seized[1], "w", 1);
  close(seized[1]);

  // The program holds what it needs; the keeper keeps only the channel.
  for (int fd : l.setup_fds) close(fd);
  StepFailure f;
  if (!clear_capabilities(&f)) {
    sys::pidfd_send_signal(program_pidfd, SIGKILL);
    fail_step(channel, f);
  }
  g_program_pidfd = program_pidfd;
  struct sigaction fwd {};
  fwd.sa_handler = forward_signal;
  sigemptyset(&fwd.sa_mask);
  for (int sig : kForwardedSignals) sigaction(sig, &fwd, nullptr);
  struct sigaction end {};
  end.sa_sigaction = on_end_call;
  end.sa_flags = SA_SIGINFO;  // no SA_RESTART: it interrupts wait4
  sigemptyset(&end.sa_mask);
  sigaction(kEndCallSignal, &end, nullptr);
  struct sigaction alarm {};
  alarm.sa_handler = on_timer;  // no SA_RESTART: it interrupts wait4
  sigemptyset(&alarm.sa_mask);
  sigaction(SIGALRM, &alarm, nullptr);
  if (watch.memory_limit > 0) measure_every(exit_watch::kMemoryIntervalMinUsec);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);

  for (;;) {
    if (g_tick != 0) {
      g_tick = 0;
      if (watch.memory_limit > 0) measure_memory_now(watch);
      if (stuck.armed) end_if_never_ending(watch, stuck);
    }
    int status = 0;
    rusage ru{};
    // Raw: until its exec the program shares this memory, errno included,
    // and a call of its that fails would overwrite an EINTR here.
    const long waited = sys::raw(SYS_wait4, -1, sys::arg(&status), __WALL, sys::arg(&ru));
    if (waited < 0) {
      if (waited == -EINTR) continue;
      // ECHILD: cannot happen while the program is ours to reap; if it
      // does, the caller is told where, not left with a bare 125.
      fail_step(channel, {Step::keeper_wait, static_cast<int>(-waited), -1});
    }
    const auto got = static_cast<pid_t>(waited);
    const bool stop = exit_watch::on_wait(watch, got, status);
    watch_for_never_ending(watch, stuck);
    if (stop) continue;        // a ptrace stop, resumed
    if (got != pid) continue;  // an orphan reparented to us: reaped, nothing more
    Record r;
    r.kind = Record::program_status;
    r.status = status;
    r.user_usec = ru.ru_utime.tv_sec * 1000000L + ru.ru_utime.tv_usec;
    r.system_usec = ru.ru_stime.tv_sec * 1000000L + ru.ru_stime.tv_usec;
    r.max_rss_kib = ru.ru_maxrss;
    measure_every(0);
    exit_watch::read_network_counters(watch);
    r.evidence = watch.evidence;
    end_every_other_process();
    // Only the keeper is left, so the call is over when this arrives: the
    // caller need not wait for the keeper's own exit, which takes the
    // namespaces (mounts, file systems) down with it.
    send_record(channel, r);
    _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
  }
}

}  // namespace

int middle_entry(void* arg) {
  Launch& l = *static_cast<Launch*>(arg);
  const int channel = l.channel.get();
  // Raw system calls only until the keeper is made: the caller may run
  // alongside, in the same memory, so with the same errno. A root caller's
  // middle in that memory is given its id maps by the caller.
  const bool own_maps = !(l.identity.drop_from_root && kMiddleRunsAlongside);
  sys::raw(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL);
  if (sys::raw(SYS_getppid) != l.caller_pid) return 125;
  sys::raw(SYS_setpgid, 0, 0);
  StepFailure f;
  if (!drop_to_identity(l.identity, own_maps, &f)) fail_step(channel, f);
  // A change of uid clears the death signal (commit_creds): set it again, and
  // check that chock did not die in between, or a root caller's call would
  // outlive a SIGKILL to chock.
  sys::raw(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL);
  if (sys::raw(SYS_getppid) != l.caller_pid) return 125;
  if (!enter_namespaces(l.identity, own_maps, &f)) fail_step(channel, f);
  // Said before the capabilities go, so the caller writes the maps while the
  // bounding set is dropped, one capability a call; the plan, which waits for
  // the maps, holds the middle until both are done.
  if (!own_maps) {
    Record r;
    r.kind = Record::entered;
    send_record(channel, r);
  }
  // Once, here: the keeper and the program inherit all of it.
  if (!restrict_inherited_capabilities(&f)) fail_step(channel, f);
  if (!l.await_plan()) return 0;  // the caller gave up and says why itself

  // The keeper is the caller's own child (CLONE_PARENT), in the middle's
  // cgroup, so the middle ends here and the caller goes on. (A failed first
  // clone in a new pid namespace leaves it unable to hold any process: the
  // cgroup was settled with the middle's own clone, by the caller.)
  int keeper_pidfd = -1;
  const long pid = clone_with_pidfd(&keeper_pidfd, -1, CLONE_PARENT);
  if (pid < 0) fail_step(channel, {Step::clone_keeper, static_cast<int>(-pid), -1});
  if (pid == 0) keeper_main(l);

  Record r;
  r.kind = Record::keeper_pidfd;
  send_record(channel, r, keeper_pidfd);
  // The middle may share the caller's descriptor table (CLONE_FILES): what
  // it opened stays open there after it ends, unless it closes it.
  close(keeper_pidfd);
  return 0;
}

}  // namespace chock::sandbox
