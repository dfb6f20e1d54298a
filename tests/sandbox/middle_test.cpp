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

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "process.hpp"
#include "sandbox/namespaces.hpp"

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

// The whole call: while root runs `chock sandbox` again and again, a process
// of the call's uid looks for each call's middle (a chock of that uid in the
// host's pid namespace, where the keeper is pid 1 of its own) and tries to
// attach to it. Before the fix it did, within a few calls.
TEST(Middle, ItsUidNeverAttachesToTheMiddleOfARootCallersCall) {
  if (!test::running_as_root()) GTEST_SKIP() << "the root caller's promise; this run is unprivileged";
  int report[2];
  ASSERT_EQ(pipe(report), 0);
  int stop[2];
  ASSERT_EQ(pipe(stop), 0);
  pid_t hunter = fork();
  if (hunter == 0) {
    close(report[0]);
    close(stop[1]);
    if (setgroups(0, nullptr) != 0 || setresgid(kCallUid, kCallUid, kCallUid) != 0 ||
        setresuid(kCallUid, kCallUid, kCallUid) != 0)
      _exit(120);
    // Each call takes a few pids in a row (chock, its middle, the keeper, the
    // program): the newest ones are watched, not the whole of /proc.
    pid_t last_tried = 0;
    for (;;) {
      pollfd p{stop[0], POLLIN, 0};
      if (poll(&p, 1, 0) != 0) break;
      const pid_t newest = static_cast<pid_t>(std::atoi(read_small("/proc/sys/kernel/ns_last_pid").c_str()));
      for (pid_t pid = newest - 3; pid <= newest; ++pid) {
        if (pid <= last_tried) continue;
        const std::string status = read_small("/proc/" + std::to_string(pid) + "/status");
        if (status.find("Name:\tchock\n") == std::string::npos) continue;
        if (status.find("\nUid:\t65534\t") == std::string::npos) continue;
        const auto nspid = status.find("\nNSpid:\t");
        if (nspid == std::string::npos) continue;
        const std::string line = status.substr(nspid + 8, status.find('\n', nspid + 8) - nspid - 8);
        if (line.find('\t') != std::string::npos) continue;  // a keeper: pid 1 of its own namespace
        last_tried = pid;
        // One byte a middle: 'a' attached, 's' only seen.
        const bool attached = ptrace(PTRACE_ATTACH, pid, nullptr, nullptr) == 0;
        if (attached) {
          waitpid(pid, nullptr, __WALL);
          ptrace(PTRACE_DETACH, pid, nullptr, nullptr);
        }
        (void)!write(report[1], attached ? "a" : "s", 1);
      }
    }
    _exit(0);
  }
  close(report[1]);
  close(stop[0]);
  // Calls until the hunter has tried 20 middles, or 1000 calls.
  int seen = 0;
  int attached = 0;
  for (int i = 0; i < 1000 && seen < 20; ++i) {
    test::Output o = test::run_process({test::chock_binary(), "sandbox", "--", "/bin/true"});
    ASSERT_EQ(o.status, 0) << o.err;
    pollfd p{report[0], POLLIN, 0};
    char got[64];
    while (poll(&p, 1, 0) > 0) {
      const ssize_t n = read(report[0], got, sizeof got);
      if (n <= 0) break;
      for (ssize_t k = 0; k < n; ++k) {
        ++seen;
        if (got[k] == 'a') ++attached;
      }
    }
  }
  close(stop[1]);
  close(report[0]);
  waitpid(hunter, nullptr, 0);
  EXPECT_EQ(attached, 0) << "attached to " << attached << " of " << seen << " middles tried";
  // The hunt must have found middles to try, or it proved nothing.
  EXPECT_GE(seen, 20) << "too few middles seen to try";
}

}  // namespace
}  // namespace chock
