#include "sandbox/teardown.hpp"

#include <linux/futex.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <ctime>
#include <new>

#include "sandbox/clone.hpp"
#include "util/syscalls.hpp"

namespace chock::sandbox {

namespace {

struct Waiter {
  int keeper = -1;
  int held = -1;
  // 1 once the waiter holds nothing but those two: until then its copies of
  // the caller's descriptors would keep what the caller lets go (the
  // session's lock) held. A futex word.
  std::atomic<int> closed{0};
  std::atomic<bool> started{false};  // hand_teardown cloned it
};

// The waiter: raw system calls only, since it shares the caller's memory and
// errno while the caller goes on to exit.
int wait_for_keeper(void* arg) {
  auto* w = static_cast<Waiter*>(arg);
  // Signals are the caller's business (a ^C after its exit finds nobody here).
  sigset_t all;
  sigfillset(&all);
  sys::raw(SYS_rt_sigprocmask, SIG_SETMASK, sys::arg(&all), 0, sizeof(std::uint64_t));
  // Every other descriptor closed: whoever reads the caller's output sees its
  // end when the caller exits, not when the teardown does.
  const int low = std::min(w->keeper, w->held), high = std::max(w->keeper, w->held);
  if (low > 0) sys::raw(SYS_close_range, 0, low - 1, 0);
  if (high > low + 1) sys::raw(SYS_close_range, low + 1, high - 1, 0);
  sys::raw(SYS_close_range, high + 1, ~0U, 0);
  w->closed.store(1);
  sys::raw(SYS_futex, sys::arg(&w->closed), FUTEX_WAKE_PRIVATE, 1);
  pollfd exited{w->keeper, POLLIN, 0};
  while (sys::raw(SYS_ppoll, sys::arg(&exited), 1, 0, 0, 0) == -EINTR) {
  }
  return 0;
}

Waiter waiter;

}  // namespace

bool hand_teardown(int keeper_pidfd, int held_fd) noexcept {
  static std::atomic<bool> claimed{false};  // the one waiter's stack and record: once a process
  if (keeper_pidfd < 0 || held_fd < 0) {
    errno = EBADF;
    return false;
  }
  if (claimed.exchange(true)) {
    errno = EBUSY;
    return false;
  }
  waiter.keeper = keeper_pidfd;
  waiter.held = held_fd;
  // Never freed: the waiter runs on it after the caller's exit has run its destructors.
  static const CloneStack* stack = []() -> const CloneStack* {
    try {
      return new CloneStack(std::size_t{16} << 10);
    } catch (const std::bad_alloc&) {
      return nullptr;
    }
  }();
  if (stack == nullptr) {
    errno = ENOMEM;
    return false;
  }
  int pidfd = -1;
  if (clone_on_stack(&pidfd, -1, CLONE_VM, *stack, wait_for_keeper, &waiter) < 0) return false;
  ::close(pidfd);
  waiter.started.store(true);
  return true;
}

void settle_teardown() noexcept {
  if (!waiter.started.load()) return;
  // A bounded wait: the waiter is a few system calls away from it, and has
  // most likely been there since the program started.
  const timespec step{0, 100'000'000};
  for (int i = 0; i < 50 && waiter.closed.load() == 0; ++i)
    sys::raw(SYS_futex, sys::arg(&waiter.closed), FUTEX_WAIT_PRIVATE, 0, sys::arg(&step));
}

}  // namespace chock::sandbox
