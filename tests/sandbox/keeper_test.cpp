// The keeper is chock's own child (CLONE_PARENT) and asks for its death
// signal only once it runs. If chock dies between the keeper's birth and
// that request, the death signal would never come: the keeper checks chock's
// pidfd after asking, and ends instead of running the program. A tracer
// holds the keeper at its birth while chock is killed, so the window is
// there on every run.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <set>
#include <string>

#include "process.hpp"

namespace chock {
namespace {

constexpr unsigned kCloneEvents = PTRACE_O_TRACECLONE | PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK;

bool is_clone_event(int status) {
  const int event = status >> 16;
  return event == PTRACE_EVENT_CLONE || event == PTRACE_EVENT_FORK || event == PTRACE_EVENT_VFORK;
}

TEST(ProcessTree, AKeeperBornAsChockDiesEndsWithoutRunningTheProgram) {
  test::TempDir dir;
  ASSERT_EQ(chmod(dir.path().c_str(), 0777), 0);
  const std::string ran = dir / "ran";
  const std::string chock_path = test::chock_binary();
  const std::string script = "touch " + ran + "; sleep 3";
  pid_t chock = fork();
  if (chock == 0) {
    int null = open("/dev/null", O_RDWR);
    dup2(null, 0);
    dup2(null, 1);
    dup2(null, 2);
    ptrace(PTRACE_TRACEME, 0, nullptr, nullptr);
    raise(SIGSTOP);
    execl(chock_path.c_str(), chock_path.c_str(), "sandbox", "--rw", dir.path().c_str(), "--", "/bin/sh",
          "-c", script.c_str(), nullptr);
    _exit(127);
  }
  ASSERT_GT(chock, 0);
  int status = 0;
  ASSERT_EQ(waitpid(chock, &status, 0), chock);
  ASSERT_TRUE(WIFSTOPPED(status));
  ASSERT_EQ(ptrace(PTRACE_SETOPTIONS, chock, nullptr, kCloneEvents), 0);
  ASSERT_EQ(ptrace(PTRACE_CONT, chock, nullptr, 0), 0);

  // chock makes the middle, the middle makes the keeper: both come to this
  // tracer. Every other stop is let go with its signal.
  pid_t middle = 0;
  pid_t keeper = 0;
  std::set<pid_t> held;  // new tracees at their first stop, not yet let go
  auto release = [&](pid_t pid) {
    if (held.erase(pid) != 0) ptrace(PTRACE_CONT, pid, nullptr, 0);
  };
  while (keeper == 0 || held.count(keeper) == 0) {
    const pid_t got = waitpid(-1, &status, __WALL);
    ASSERT_GT(got, 0) << "the tree ended before the keeper was made";
    if (!WIFSTOPPED(status)) {
      ASSERT_NE(got, chock) << "chock ended before making the keeper: " << status;
      continue;
    }
    if (is_clone_event(status)) {
      unsigned long child = 0;
      ptrace(PTRACE_GETEVENTMSG, got, nullptr, &child);
      if (got == chock && middle == 0) {
        middle = static_cast<pid_t>(child);
        release(middle);
      } else if (got == middle && keeper == 0) {
        keeper = static_cast<pid_t>(child);
        continue;  // the middle stays stopped until chock's death ends it
      }
      ptrace(PTRACE_CONT, got, nullptr, 0);
      continue;
    }
    if (got == keeper || (got != chock && got != middle && WSTOPSIG(status) == SIGSTOP)) {
      held.insert(got);  // a first stop, perhaps before its parent's event
      continue;
    }
    const int sig = WSTOPSIG(status);
    ptrace(PTRACE_CONT, got, nullptr, sig == SIGTRAP || sig == SIGSTOP ? 0 : sig);
  }

  // chock dies while the keeper has not run a single instruction.
  const int keeper_fd = static_cast<int>(syscall(SYS_pidfd_open, keeper, 0));
  ASSERT_GE(keeper_fd, 0);
  kill(chock, SIGKILL);
  while (waitpid(chock, &status, __WALL) == chock && !WIFSIGNALED(status) && !WIFEXITED(status)) {
  }
  ASSERT_EQ(ptrace(PTRACE_DETACH, keeper, nullptr, 0), 0);
  pollfd p{keeper_fd, POLLIN, 0};
  const int ended = poll(&p, 1, 10000);
  if (ended == 0) syscall(SYS_pidfd_send_signal, keeper_fd, SIGKILL, nullptr, 0);
  close(keeper_fd);
  while (waitpid(-1, &status, __WALL | WNOHANG) > 0) {
  }
  EXPECT_EQ(ended, 1) << "the keeper outlived chock by 10 s";
  EXPECT_NE(access(ran.c_str(), F_OK), 0) << "the program ran after chock had died";
}

}  // namespace
}  // namespace chock
