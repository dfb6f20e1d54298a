// The attack on a host-side write by pid number: the process ends, is
// reaped, and another takes its number before /proc/<number> is opened (a
// root caller's id maps are written there). Pinned by the first's pidfd, the
// open is refused with ESRCH where a bare open reaches the second process.
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "util/syscalls.hpp"

namespace {

enum Outcome {
  kPassed = 0,
  kNoNamespaces = 70,  // this machine gives no user and pid namespaces
  kNoProc,
  kNoReuse,  // the kernel would not hand out the same number again
  kBareOpenFailed,
  kPinnedOpenedTheNewcomer,
  kPinnedFailedOtherwise,
  kPinnedRefusedTheLiving,
  kCrashed,
};

const char* describe(int outcome) {
  switch (outcome) {
    case kNoProc:
      return "could not mount /proc for the new pid namespace";
    case kNoReuse:
      return "ns_last_pid did not give the dead process's number to the next one";
    case kBareOpenFailed:
      return "a bare open of /proc/<number> failed, so the number was not taken again";
    case kPinnedOpenedTheNewcomer:
      return "the pinned open returned the directory of the process that took the number";
    case kPinnedFailedOtherwise:
      return "the pinned open failed, but not with ESRCH";
    case kPinnedRefusedTheLiving:
      return "the pinned open refused a living process";
    default:
      return "the test's process crashed";
  }
}

pid_t sleeper() {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::pause();
    ::_exit(0);
  }
  return pid;
}

void end(pid_t pid) {
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
}

// Pid 1 of a new pid namespace: numbers there are ours to steer.
int first_of_namespace() {
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
      ::mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0)
    return kNoProc;
  const pid_t first = sleeper();
  const int first_fd = chock::sys::pidfd_open(first, 0);
  end(first);  // reaped: its number is free
  const std::string last = std::to_string(first - 1);
  const int ns_last_pid = ::open("/proc/sys/kernel/ns_last_pid", O_WRONLY | O_CLOEXEC);
  if (ns_last_pid < 0 || ::write(ns_last_pid, last.data(), last.size()) != static_cast<ssize_t>(last.size()))
    return kNoReuse;
  const pid_t newcomer = sleeper();
  if (newcomer != first) {
    end(newcomer);
    return kNoReuse;
  }
  const int newcomer_fd = chock::sys::pidfd_open(newcomer, 0);
  int outcome = kPassed;
  const int bare = ::open(("/proc/" + std::to_string(first)).c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  errno = 0;
  const int pinned = chock::sys::open_proc_pinned(first, first_fd);
  const int living = chock::sys::open_proc_pinned(newcomer, newcomer_fd);
  if (bare < 0)
    outcome = kBareOpenFailed;
  else if (pinned >= 0)
    outcome = kPinnedOpenedTheNewcomer;
  else if (errno != ESRCH)
    outcome = kPinnedFailedOtherwise;
  else if (living < 0)
    outcome = kPinnedRefusedTheLiving;
  end(newcomer);
  return outcome;
}

TEST(ProcPin, ADeadProcessWhoseNumberWasTakenIsNeverOpened) {
  const pid_t outer = ::fork();
  ASSERT_GE(outer, 0) << std::strerror(errno);
  if (outer == 0) {
    if (::unshare(CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS) != 0) ::_exit(kNoNamespaces);
    const pid_t init = ::fork();
    if (init == 0) ::_exit(first_of_namespace());
    int status = 0;
    if (init < 0 || ::waitpid(init, &status, 0) != init || !WIFEXITED(status)) ::_exit(kCrashed);
    ::_exit(WEXITSTATUS(status));
  }
  int status = 0;
  ASSERT_EQ(::waitpid(outer, &status, 0), outer);
  ASSERT_TRUE(WIFEXITED(status)) << "the test's process was killed by signal " << WTERMSIG(status);
  if (WEXITSTATUS(status) == kNoNamespaces) GTEST_SKIP() << "needs user and pid namespaces (unshare refused)";
  EXPECT_EQ(WEXITSTATUS(status), kPassed) << describe(WEXITSTATUS(status));
}

}  // namespace
