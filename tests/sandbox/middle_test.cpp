// A root caller's middle shares root's memory (CLONE_VM) while it already
// runs as the call's uid. A process of that uid that could trace it could
// write into root's memory; these are the attacks, and what stops them: the
// middle is never dumpable, so tracing it needs CAP_SYS_PTRACE on the host.
#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "chock/sandbox.hpp"
#include "process.hpp"
#include "sandbox/capabilities.hpp"
#include "sandbox/clone.hpp"
#include "sandbox/namespaces.hpp"
#include "sandbox/steps.hpp"

namespace chock {
namespace {

constexpr uid_t kCallUid = 65534;

// With Yama at 1 or more only a tracer's descendants can be traced, which
// would stop the neighbour below for a reason of its own.
bool yama_restricts_ptrace() {
  std::ifstream in("/proc/sys/kernel/yama/ptrace_scope");
  int scope = 0;
  return in >> scope && scope > 0;
}

// Forks a process of the call's uid that tries PTRACE_ATTACH on `pid`;
// returns 0 when it attached, else its errno.
int attach_as_call_uid(pid_t pid) {
  pid_t attacker = fork();
  if (attacker == 0) {
    if (setgroups(0, nullptr) != 0 || setresgid(kCallUid, kCallUid, kCallUid) != 0 ||
        setresuid(kCallUid, kCallUid, kCallUid) != 0)
      _exit(120);
    if (ptrace(PTRACE_ATTACH, pid, nullptr, nullptr) != 0) _exit(errno);
    waitpid(pid, nullptr, __WALL);
    ptrace(PTRACE_DETACH, pid, nullptr, nullptr);
    _exit(0);
  }
  int status = 0;
  waitpid(attacker, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// A /proc file, or "" once its process is gone (no exceptions: this runs in
// a forked child).
std::string read_small(const std::string& path) {
  char buf[4096];
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  const ssize_t n = read(fd, buf, sizeof buf);
  close(fd);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string{};
}

struct MiddleLike {
  int ready[2];
  int go[2];
  bool stay_dumpable;
  sandbox::Identity identity;
};

int middle_like(void* arg) {
  auto* m = static_cast<MiddleLike*>(arg);
  sandbox::StepFailure f;
  const char ok = sandbox::drop_to_identity(m->identity, m->stay_dumpable, &f) ? 'y' : 'n';
  (void)!write(m->ready[1], &ok, 1);
  char c = 0;
  (void)!read(m->go[0], &c, 1);
  return 0;
}

// drop_to_identity as the middle calls it: in a child sharing this (root)
// process's memory, then traced by a process of the uid it dropped to.
// The neighbour, a drop that stays dumpable (what a process that writes its
// own maps does), can be traced: the test can tell the two apart.
TEST(Middle, ItsUidCannotTraceARootCallersMiddleThatSharesRootsMemory) {
  if (!test::running_as_root()) GTEST_SKIP() << "the root caller's promise; this run is unprivileged";
  for (bool stay_dumpable : {false, true}) {
    if (stay_dumpable && yama_restricts_ptrace()) continue;
    MiddleLike m{};
    ASSERT_EQ(pipe(m.ready), 0);
    ASSERT_EQ(pipe(m.go), 0);
    m.stay_dumpable = stay_dumpable;
    m.identity.uid = kCallUid;
    m.identity.gid = kCallUid;
    m.identity.drop_from_root = true;
    auto stack = std::make_unique<char[]>(64 << 10);
    const pid_t child = clone(middle_like, stack.get() + (64 << 10), CLONE_VM | SIGCHLD, &m);
    ASSERT_GT(child, 0) << std::strerror(errno);
    char ok = 0;
    ASSERT_EQ(read(m.ready[0], &ok, 1), 1);
    ASSERT_EQ(ok, 'y');
    const int attached = attach_as_call_uid(child);
    (void)!write(m.go[1], "g", 1);
    waitpid(child, nullptr, 0);
    // Dumpable is the memory's, so this process's too: given back.
    prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
    for (int fd : {m.ready[0], m.ready[1], m.go[0], m.go[1]}) close(fd);
    if (stay_dumpable)
      EXPECT_EQ(attached, 0) << "a dumpable process of the call's uid should be traceable: " << attached;
    else
      EXPECT_EQ(attached, EPERM) << "the middle was traced by uid " << kCallUid << ": " << attached;
  }
}

// A process of the call's uid that watches the newest pids (each call takes
// a few in a row: chock, its middle, the keeper, the program) for a middle:
// named `comm`, of that uid, in the host's pid namespace (the keeper is pid 1
// of its own), and tries to attach to each one once.
class Hunter {
 public:
  explicit Hunter(const std::string& comm) {
    if (pipe(report_) != 0 || pipe(stop_) != 0) return;
    pid_ = fork();
    if (pid_ == 0) hunt("Name:\t" + comm + "\n");
  }
  ~Hunter() {
    close(stop_[1]);
    close(report_[0]);
    if (pid_ > 0) waitpid(pid_, nullptr, 0);
  }
  // Middles tried so far, and how many of them it attached to.
  void count(int& seen, int& attached) {
    pollfd p{report_[0], POLLIN, 0};
    char got[64];
    while (poll(&p, 1, 0) > 0) {
      const ssize_t n = read(report_[0], got, sizeof got);
      if (n <= 0) break;
      for (ssize_t k = 0; k < n; ++k) {
        ++seen;
        if (got[k] == 'a') ++attached;
      }
    }
  }

 private:
  [[noreturn]] void hunt(const std::string& name) {
    close(report_[0]);
    close(stop_[1]);
    if (setgroups(0, nullptr) != 0 || setresgid(kCallUid, kCallUid, kCallUid) != 0 ||
        setresuid(kCallUid, kCallUid, kCallUid) != 0)
      _exit(120);
    pid_t last_tried = 0;
    for (;;) {
      pollfd p{stop_[0], POLLIN, 0};
      if (poll(&p, 1, 0) != 0) break;
      const pid_t newest = static_cast<pid_t>(std::atoi(read_small("/proc/sys/kernel/ns_last_pid").c_str()));
      for (pid_t pid = newest - 3; pid <= newest; ++pid) {
        if (pid <= last_tried) continue;
        const std::string status = read_small("/proc/" + std::to_string(pid) + "/status");
        if (status.find(name) == std::string::npos) continue;
        if (status.find("\nUid:\t65534\t") == std::string::npos) continue;
        const auto nspid = status.find("\nNSpid:\t");
        if (nspid == std::string::npos) continue;
        const std::string line = status.substr(nspid + 8, status.find('\n', nspid + 8) - nspid - 8);
        if (line.find('\t') != std::string::npos) continue;  // a keeper
        last_tried = pid;
        // One byte a middle: 'a' attached, 's' only seen.
        const bool attached = ptrace(PTRACE_ATTACH, pid, nullptr, nullptr) == 0;
        if (attached) {
          waitpid(pid, nullptr, __WALL);
          ptrace(PTRACE_DETACH, pid, nullptr, nullptr);
        }
        (void)!write(report_[1], attached ? "a" : "s", 1);
      }
    }
    _exit(0);
  }

  int report_[2] = {-1, -1};
  int stop_[2] = {-1, -1};
  pid_t pid_ = -1;
};

// The whole call: while root runs `chock sandbox` again and again, the
// hunter tries each call's middle. Before the fix it attached to every one.
TEST(Middle, ItsUidNeverAttachesToTheMiddleOfARootCallersCall) {
  if (!test::running_as_root()) GTEST_SKIP() << "the root caller's promise; this run is unprivileged";
  Hunter hunter("chock");
  int seen = 0;
  int attached = 0;
  // Until the hunter has tried 20 middles, or 60 s of calls: on a loaded
  // machine (CI runs two suites at once) the hunter catches fewer a call.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (int i = 0; i < 20000 && seen < 20 && std::chrono::steady_clock::now() < until; ++i) {
    test::Output o = test::run_process({test::chock_binary(), "sandbox", "--", "/bin/true"});
    ASSERT_EQ(o.status, 0) << o.err;
    hunter.count(seen, attached);
  }
  EXPECT_EQ(attached, 0) << "attached to " << attached << " of " << seen << " middles tried";
  // The hunt must have found middles to try, or it proved nothing.
  EXPECT_GE(seen, 20) << "too few middles seen to try";
}

// Two threads of one root process make calls through the library at once:
// one call's end must not make the memory dumpable again while the other's
// middle still shares it.
TEST(Middle, ItsUidNeverAttachesToAMiddleWhileAnotherThreadsCallEnds) {
  if (!test::running_as_root()) GTEST_SKIP() << "the root caller's promise; this run is unprivileged";
  std::string comm = read_small("/proc/self/comm");
  if (!comm.empty() && comm.back() == '\n') comm.pop_back();
  Hunter hunter(comm);
  std::atomic<bool> done{false};
  std::atomic<int> failures{0};
  std::mutex first_lock;
  std::string first_failure;  // what the first failed call said, for the report
  auto calls = [&] {
    Config c;
    c.argv = {"/bin/true"};
    while (!done.load()) {
      auto r = run(c);
      if (r && r->exit_status() == 0) continue;
      failures.fetch_add(1);
      std::lock_guard<std::mutex> hold(first_lock);
      if (first_failure.empty()) first_failure = r ? r->to_json() : r.error().message();
    }
  };
  std::thread a(calls);
  std::thread b(calls);
  int seen = 0;
  int attached = 0;
  // Until 150 middles were tried, or 90 s: with another suite beside it
  // (ctest -j2, the cgroup VM) a hunt of 20 s saw only 100.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(90);
  while (seen < 150 && std::chrono::steady_clock::now() < until) {
    usleep(5000);
    hunter.count(seen, attached);
  }
  done = true;
  a.join();
  b.join();
  hunter.count(seen, attached);
  EXPECT_EQ(failures.load(), 0) << "the first: " << first_failure;
  EXPECT_EQ(attached, 0) << "attached to " << attached << " of " << seen << " middles tried";
  EXPECT_GE(seen, 150) << "too few middles seen to try";
}

// The keeper is a copy of root chock's memory, made dumpable only while it
// seizes the program. During the call a process of the call's uid cannot
// attach to it, nor to the command (the keeper traces it); a plain process
// of that uid it can (the neighbour that shows the attack works).
TEST(Middle, ItsUidCannotTraceARootCallersKeeperDuringTheCall) {
  if (!test::running_as_root()) GTEST_SKIP() << "the root caller's promise; this run is unprivileged";
  if (yama_restricts_ptrace()) GTEST_SKIP() << "Yama restricts ptrace: the neighbour could not be attached";
  pid_t chock = fork();
  if (chock == 0) {
    const std::string path = test::chock_binary();
    execl(path.c_str(), path.c_str(), "sandbox", "--", "/bin/sleep", "5", nullptr);
    _exit(127);
  }
  ASSERT_GT(chock, 0);
  // The keeper is chock's child (pid 1 of its namespace), the program the
  // keeper's (pid 2), both of the call's uid.
  auto first_child = [](pid_t pid) {
    const std::string p = std::to_string(pid);
    return static_cast<pid_t>(std::atoi(read_small("/proc/" + p + "/task/" + p + "/children").c_str()));
  };
  pid_t keeper = 0;
  pid_t program = 0;
  for (int i = 0; i < 500 && program == 0; ++i) {
    usleep(10000);
    keeper = first_child(chock);
    const pid_t child = keeper > 0 ? first_child(keeper) : 0;
    if (child > 0 && read_small("/proc/" + std::to_string(child) + "/comm") == "sleep\n") program = child;
  }
  pid_t plain = fork();
  if (plain == 0) {
    if (setgroups(0, nullptr) != 0 || setresgid(kCallUid, kCallUid, kCallUid) != 0 ||
        setresuid(kCallUid, kCallUid, kCallUid) != 0)
      _exit(120);
    execl("/bin/sleep", "sleep", "5", nullptr);
    _exit(127);
  }
  usleep(50000);  // past its exec
  int keeper_attach = -1;
  int program_attach = -1;
  const int plain_attach = attach_as_call_uid(plain);
  if (program != 0) {
    keeper_attach = attach_as_call_uid(keeper);
    program_attach = attach_as_call_uid(program);
  }
  kill(plain, SIGKILL);
  waitpid(plain, nullptr, 0);
  kill(chock, SIGTERM);
  waitpid(chock, nullptr, 0);
  ASSERT_NE(program, 0) << "the call's keeper and program were not found";
  EXPECT_EQ(plain_attach, 0) << "the neighbour: a plain process of uid " << kCallUid
                             << " should be traceable";
  EXPECT_EQ(keeper_attach, EPERM) << "uid " << kCallUid << " attached to the keeper: " << keeper_attach;
  EXPECT_EQ(program_attach, EPERM) << "uid " << kCallUid << " attached to the command: " << program_attach;
}

// The middle shares the caller's errno while the caller runs too, so what it
// calls reports a failure by value and never writes errno: each call below
// fails (EINVAL, EPERM, EBADF) and errno keeps a value none of them sets.
TEST(Middle, WhatTheMiddleCallsFailsWithoutTouchingErrno) {
  pid_t child = fork();
  if (child == 0) {
    constexpr int kSentinel = 4242;
    errno = kSentinel;
    sandbox::StepFailure f;
    sandbox::Identity bad_flags;
    bad_flags.unshare_flags = 1;  // not a namespace: EINVAL
    if (sandbox::enter_namespaces(bad_flags, true, &f) || f.error != EINVAL) _exit(10);
    if (errno != kSentinel) _exit(11);
    // This process's own maps are written already (it is in its first user
    // namespace): the write fails.
    const int self = open("/proc/self", O_PATH | O_DIRECTORY | O_CLOEXEC);
    errno = kSentinel;
    if (sandbox::write_maps(self, bad_flags, &f) || f.error == 0) _exit(12);
    if (errno != kSentinel) _exit(13);
    int pidfd = -1;
    const long pid = sandbox::clone_with_pidfd(&pidfd, -1, CLONE_PARENT | CLONE_THREAD);  // EINVAL
    if (pid != -EINVAL) _exit(14);
    if (errno != kSentinel) _exit(15);
    sandbox::Record r;
    sandbox::send_record(-1, r);  // EBADF
    if (errno != kSentinel) _exit(16);
    if (!test::running_as_root()) {
      sandbox::Identity drop;
      drop.drop_from_root = true;  // setgroups as an unprivileged process: EPERM
      if (sandbox::drop_to_identity(drop, false, &f) || f.error != EPERM) _exit(17);
      if (errno != kSentinel) _exit(18);
      // PR_SET_SECUREBITS needs CAP_SETPCAP: EPERM
      if (sandbox::restrict_inherited_capabilities(&f) || f.error != EPERM) _exit(19);
      if (errno != kSentinel) _exit(20);
    }
    _exit(0);
  }
  ASSERT_GT(child, 0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "check " << WEXITSTATUS(status)
                                    << " failed (see the test's _exit codes)";
}

}  // namespace
}  // namespace chock
