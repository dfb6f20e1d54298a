#include "sandbox/stuck_watch.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>

#include "util/syscalls.hpp"

namespace chock::stuck_watch {

namespace {

// A path under the call's procfs, built without snprintf (not async-signal-safe).
struct Path {
  char text[96];
  std::size_t n = 0;
  Path& add(const char* s) noexcept {
    for (; *s != '\0' && n + 1 < sizeof text; ++s) text[n++] = *s;
    text[n] = '\0';
    return *this;
  }
  Path& add(std::uint64_t v) noexcept {
    char digits[24];
    int d = 0;
    do {
      digits[d++] = static_cast<char>('0' + v % 10);
      v /= 10;
    } while (v != 0);
    while (d > 0 && n + 1 < sizeof text) text[n++] = digits[--d];
    text[n] = '\0';
    return *this;
  }
};

// Bytes read, or -errno.
long read_at(int dir, const char* path, char* buf, std::size_t size) noexcept {
  const long fd = sys::raw(SYS_openat, dir, sys::arg(path), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fd;
  const long n = sys::raw(SYS_read, fd, sys::arg(buf), static_cast<long>(size - 1));
  sys::raw(SYS_close, fd);
  if (n < 0) return n;
  buf[n] = '\0';
  return n;
}

bool is_number(const char* s, std::uint64_t* v) noexcept {
  if (*s < '0' || *s > '9') return false;
  std::uint64_t out = 0;
  for (; *s != '\0'; ++s) {
    if (*s < '0' || *s > '9') return false;
    out = out * 10 + static_cast<std::uint64_t>(*s - '0');
  }
  *v = out;
  return true;
}

// Hex ("0x3") or decimal ("-1", "61") at *p, moving past it and one space.
long long parse_number(const char*& p) noexcept {
  bool negative = false;
  if (*p == '-') {
    negative = true;
    ++p;
  }
  unsigned long long v = 0;
  if (p[0] == '0' && p[1] == 'x') {
    for (p += 2;; ++p) {
      if (*p >= '0' && *p <= '9')
        v = v * 16 + static_cast<unsigned long long>(*p - '0');
      else if (*p >= 'a' && *p <= 'f')
        v = v * 16 + static_cast<unsigned long long>(*p - 'a' + 10);
      else
        break;
    }
  } else {
    for (; *p >= '0' && *p <= '9'; ++p) v = v * 10 + static_cast<unsigned long long>(*p - '0');
  }
  if (*p == ' ') ++p;
  return negative ? -static_cast<long long>(v) : static_cast<long long>(v);
}

enum class Task {
  stuck,      // done, stopped, or waiting on another process of the call
  can_go_on,  // anything else, or what could not be read
};

// "pipe:[123]" made inside the call (not one the host holds the other end of).
bool internal_pipe(const Watch& w, int proc, std::uint64_t pid, long long fd) noexcept {
  if (fd < 0) return false;
  Path link;
  link.add(pid).add("/fd/").add(static_cast<std::uint64_t>(fd));
  char target[64];
  const long n = sys::raw(SYS_readlinkat, proc, sys::arg(link.text), sys::arg(target), sizeof target - 1);
  if (n <= 0) return false;
  target[n] = '\0';
  const char* p = target;
  for (const char* want = "pipe:["; *want != '\0'; ++want, ++p)
    if (*p != *want) return false;
  std::uint64_t ino = 0;
  for (; *p >= '0' && *p <= '9'; ++p) ino = ino * 10 + static_cast<std::uint64_t>(*p - '0');
  if (*p != ']') return false;
  for (std::size_t i = 0; i < w.host_pipe_count; ++i)
    if (w.host_pipes[i] == ino) return false;
  return true;
}

bool has_posix_timers(int proc, std::uint64_t pid) noexcept {
  Path timers;
  timers.add(pid).add("/timers");
  char buf[8];
  const long n = read_at(proc, timers.text, buf, sizeof buf);
  return n != 0;  // unreadable: as if it had one
}

// One task (thread) of process `pid`: "PID/task/TID/".
Task look_at(const Watch& w, int proc, std::uint64_t pid, const Path& task, std::uint64_t* runs) noexcept {
  char buf[512];
  Path stat = task;
  stat.add("stat");
  const long n = read_at(proc, stat.text, buf, sizeof buf);
  if (n == -ENOENT || n == -ESRCH) return Task::stuck;  // reaped since the listing: it ended
  if (n <= 0) return Task::can_go_on;
  char state = '\0';
  for (long i = n - 1; i >= 0; --i)
    if (buf[i] == ')') {
      if (buf[i + 1] == ' ') state = buf[i + 2];
      break;
    }
  Path schedstat = task;
  schedstat.add("schedstat");
  if (read_at(proc, schedstat.text, buf, sizeof buf) > 0) {
    // "run_ns wait_ns timeslices": a task that ran at all between two looks
    // changes the sum.
    const char* p = buf;
    *runs += static_cast<std::uint64_t>(parse_number(p));
    (void)parse_number(p);
    *runs += static_cast<std::uint64_t>(parse_number(p));
  }
  switch (state) {
    case 'Z':
    case 'X':
    case 'x':
    case 'T':
    case 't':
      return Task::stuck;
    case 'S':
      break;
    default:  // R, D, anything newer, or unreadable
      return Task::can_go_on;
  }
  Path syscall = task;
  syscall.add("syscall");
  if (read_at(proc, syscall.text, buf, sizeof buf) <= 0) return Task::can_go_on;
  if (buf[0] < '0' || buf[0] > '9') return Task::can_go_on;  // "running", or -1: not in a call
  const char* p = buf;
  const long long nr = parse_number(p);
  const long long arg0 = parse_number(p);
  switch (nr) {
    case SYS_wait4:
    case SYS_waitid:
      return Task::stuck;
    case SYS_pause:
    case SYS_rt_sigsuspend:
      return has_posix_timers(proc, pid) ? Task::can_go_on : Task::stuck;
    case SYS_read:
    case SYS_readv:
    case SYS_write:
    case SYS_writev:
      return internal_pipe(w, proc, pid, arg0) ? Task::stuck : Task::can_go_on;
    default:
      return Task::can_go_on;
  }
}

struct Look {
  bool stuck = true;
  std::uint64_t runs = 0;
  std::uint64_t tasks = 0;
  std::uint64_t tid_sum = 0;
};

// Each entry of the directory `path` under proc that is a number, to `each`
// until it answers false.
template <typename Each>
bool each_number(int proc, const char* path, Each each) noexcept {
  const long dir = sys::raw(SYS_openat, proc, sys::arg(path), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return false;
  alignas(8) char buf[4096] = {};  // zeroed: the analyser cannot see the kernel fill it
  bool go_on = true;
  while (go_on) {
    const long n = sys::raw(SYS_getdents64, dir, sys::arg(buf), sizeof buf);
    if (n <= 0) break;
    for (long off = 0; off < n && go_on;) {
      auto* d = reinterpret_cast<dirent64*>(buf + off);
      std::uint64_t v = 0;
      if (is_number(d->d_name, &v)) go_on = each(v);
      off += d->d_reclen;
    }
  }
  sys::raw(SYS_close, dir);
  return true;
}

Look look(const Watch& w, int proc) noexcept {
  Look l;
  const bool listed = each_number(proc, ".", [&](std::uint64_t pid) {
    if (pid == 1) return true;  // the keeper
    Path tasks;
    tasks.add(pid).add("/task");
    each_number(proc, tasks.text, [&](std::uint64_t tid) {
      Path task;
      task.add(pid).add("/task/").add(tid).add("/");
      ++l.tasks;
      l.tid_sum += tid;
      if (l.tasks > kMaxTasks || look_at(w, proc, pid, task, &l.runs) != Task::stuck) l.stuck = false;
      return l.stuck;
    });
    return l.stuck;
  });
  if (!listed) l.stuck = false;
  return l;
}

std::uint64_t now_ns() noexcept {
  timespec t{};
  sys::raw(SYS_clock_gettime, CLOCK_MONOTONIC, sys::arg(&t));
  return static_cast<std::uint64_t>(t.tv_sec) * 1'000'000'000ULL + static_cast<std::uint64_t>(t.tv_nsec);
}

}  // namespace

void note_host_pipes(Watch& w, const int* fds, std::size_t count) noexcept {
  for (std::size_t i = 0; i < count && w.host_pipe_count < kHostPipesKept; ++i) {
    struct stat st {};
    if (sys::raw(SYS_fstat, fds[i], sys::arg(&st)) == 0 && S_ISFIFO(st.st_mode))
      w.host_pipes[w.host_pipe_count++] = st.st_ino;
  }
}

bool never_ends(Watch& w, int proc) noexcept {
  if (!w.armed || w.ended || proc < 0) return false;
  const std::uint64_t now = now_ns();
  if (now - w.last_look_ns < static_cast<std::uint64_t>(kIntervalUsec) * 1000 * 9 / 10) return false;
  w.last_look_ns = now;
  // A ptrace stop or an end the keeper has not taken yet: its task reads as
  // stopped, but the keeper is about to let it go on.
  siginfo_t pending{};
  if (sys::raw(SYS_waitid, P_ALL, 0, sys::arg(&pending), WEXITED | WSTOPPED | WNOHANG | WNOWAIT | __WALL,
               0) == 0 &&
      pending.si_pid != 0) {
    w.stuck_before = false;
    return false;
  }
  const Look l = look(w, proc);
  if (!l.stuck) {
    w.stuck_before = false;
    return false;
  }
  // The same tasks, none of them run since the last look.
  const bool again =
      w.stuck_before && l.runs == w.last_runs && l.tasks == w.last_tasks && l.tid_sum == w.last_tid_sum;
  w.stuck_before = true;
  w.last_runs = l.runs;
  w.last_tasks = l.tasks;
  w.last_tid_sum = l.tid_sum;
  return again;
}

}  // namespace chock::stuck_watch
