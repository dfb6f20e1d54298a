#include "sandbox/exit_watch.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "sandbox/program_hints.hpp"
#include "sandbox/seccomp.hpp"
#include "util/syscalls.hpp"

#ifndef FSCONFIG_CMD_CREATE
#define FSCONFIG_CMD_CREATE 6
#endif

namespace chock::exit_watch {

static_assert(seccomp::kSanitizerTracerClone == (CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_UNTRACED));

namespace {

// "123/fd" into buf, without snprintf (not async-signal-safe).
void pid_path(char* buf, pid_t pid, const char* leaf) noexcept {
  char digits[16];
  int n = 0;
  auto v = static_cast<unsigned>(pid);
  do {
    digits[n++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0 && n < 15);
  int i = 0;
  while (n > 0) buf[i++] = digits[--n];
  buf[i++] = '/';
  for (const char* p = leaf; *p != '\0'; ++p) buf[i++] = *p;
  buf[i] = '\0';
}

// Bytes read from `path` under proc_fd into buf (NUL-terminated), or -1.
// Raw calls here and in the memory watch: until its exec the program shares
// the keeper's memory, errno included, and checks errno of its own calls.
ssize_t read_at(int proc_fd, const char* path, char* buf, std::size_t size) noexcept {
  const long fd = sys::raw(SYS_openat, proc_fd, sys::arg(path), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  const long n = sys::raw(SYS_read, fd, sys::arg(buf), static_cast<long>(size - 1));
  sys::raw(SYS_close, fd);
  if (n < 0) return -1;
  buf[n] = '\0';
  return n;
}

// The same of /proc/<pid>/<leaf>.
ssize_t read_proc(int proc_fd, pid_t pid, const char* leaf, char* buf, std::size_t size) noexcept {
  char path[48];
  pid_path(path, pid, leaf);
  return read_at(proc_fd, path, buf, size);
}

std::uint32_t count_fds(int proc_fd, pid_t pid) noexcept {
  char path[48];
  pid_path(path, pid, "fd");
  int fd = ::openat(proc_fd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return 0;
  alignas(8) char buf[8192];
  std::uint32_t count = 0;
  for (;;) {
    long n = ::syscall(SYS_getdents64, fd, buf, sizeof buf);
    if (n <= 0) break;
    for (long off = 0; off < n;) {
      auto* d = reinterpret_cast<dirent64*>(buf + off);
      if (d->d_name[0] != '.') ++count;
      off += d->d_reclen;
    }
  }
  ::close(fd);
  return count;
}

std::uint64_t parse_u64(const char* p) noexcept {
  std::uint64_t v = 0;
  while (*p == ' ' || *p == '\t') ++p;
  while (*p >= '0' && *p <= '9') v = v * 10 + static_cast<std::uint64_t>(*p++ - '0');
  return v;
}

// VmData from /proc/<pid>/status, in bytes.
std::uint64_t vm_data(int proc_fd, pid_t pid) noexcept {
  char buf[4096];
  if (read_proc(proc_fd, pid, "status", buf, sizeof buf) < 0) return 0;
  for (const char* p = buf; *p != '\0'; ++p) {
    if ((p == buf || p[-1] == '\n') && p[0] == 'V' && p[1] == 'm' && p[2] == 'D' && p[3] == 'a' &&
        p[4] == 't' && p[5] == 'a' && p[6] == ':')
      return parse_u64(p + 7) * 1024;
  }
  return 0;
}

// utime + stime (fields 14 and 15 of /proc/<pid>/stat), in clock ticks. The
// command name (field 2) may hold spaces and parentheses: count from the last ')'.
std::uint64_t cpu_ticks(int proc_fd, pid_t pid) noexcept {
  char buf[1024];
  ssize_t n = read_proc(proc_fd, pid, "stat", buf, sizeof buf);
  if (n < 0) return 0;
  const char* p = nullptr;
  for (ssize_t i = n - 1; i >= 0; --i)
    if (buf[i] == ')') {
      p = buf + i + 1;
      break;
    }
  if (p == nullptr) return 0;
  // After ')': field 3 (state) is the first; utime is field 14.
  int field = 2;
  std::uint64_t total = 0;
  while (*p != '\0') {
    if (*p == ' ') {
      ++field;
      if (field == 14 || field == 15) total += parse_u64(p + 1);
      if (field > 15) break;
    }
    ++p;
  }
  return total;
}

// The stop's system call returned -EFBIG: the kernel's RLIMIT_FSIZE refusal,
// which a program raising SIGXFSZ on itself does not imitate.
bool syscall_failed_efbig(pid_t pid) noexcept {
#if defined(__x86_64__)
  user_regs_struct regs{};
  if (::ptrace(PTRACE_GETREGS, pid, nullptr, &regs) != 0) return false;
  return static_cast<long>(regs.rax) == -EFBIG;
#else
  (void)pid;
  return false;
#endif
}

void append(char* line, std::size_t& n, std::size_t size, const char* text) noexcept {
  for (; *text != '\0' && n + 1 < size; ++text) line[n++] = *text;
}

// "123" into digits.
void pid_digits(char* digits, pid_t pid) noexcept {
  pid_path(digits, pid, "");
  for (char* d = digits; *d != '\0'; ++d)
    if (*d == '/') *d = '\0';
}

// The base name of /proc/<pid>/exe as the sandbox sees it, printable ASCII
// only ('?' for the rest, and for '`', which would end the name's quotes).
// A thread's own name (comm) is the program's to choose ("CrRendererMain"),
// its executable is not.
void program_name(Watch& w, pid_t pid, char* out, std::size_t size) noexcept {
  out[0] = '\0';
  const int proc = proc_dir(w);
  if (proc < 0) return;
  char path[48];
  pid_path(path, pid, "exe");
  char target[256];
  const long n = sys::raw(SYS_readlinkat, proc, sys::arg(path), sys::arg(target), sizeof target - 1);
  if (n <= 0) return;
  target[n] = '\0';
  const char* base = target;
  for (const char* p = target; *p != '\0'; ++p)
    if (*p == '/') base = p + 1;
  std::size_t i = 0;
  for (; base[i] != '\0' && i + 1 < size; ++i)
    out[i] = base[i] >= 0x20 && base[i] < 0x7f && base[i] != '`' ? base[i] : '?';
  out[i] = '\0';
}

// Answers the stopped system call with -error, never running it. Left as it
// is, the kernel would run the filter again, which answers "allow" to a
// SECCOMP_RET_TRACE on the second pass: a call that cannot be answered is
// killed instead.
bool refuse_stopped_call(pid_t pid, int error) noexcept {
#if defined(__x86_64__)
  user_regs_struct regs{};
  if (::ptrace(PTRACE_GETREGS, pid, nullptr, &regs) == 0) {
    regs.orig_rax = static_cast<unsigned long long>(-1);
    regs.rax = static_cast<unsigned long long>(-error);
    if (::ptrace(PTRACE_SETREGS, pid, nullptr, &regs) == 0) return true;
  }
#else
  (void)error;
#endif
  ::kill(pid, SIGKILL);
  return false;
}

// The first refusal of its kind is said at once on the call's stderr, while
// the program still runs: Chromium under write-xor-execute does not fail, it
// hangs, and the reason must not wait for the deadline. The program's name
// is kept for the end's summary.
void say_first_refusal(Watch& w, pid_t pid, char* program, std::size_t size, const char* what,
                       const char* reason, const char* (*hint)(program_hints::Kind)) noexcept {
  program_name(w, pid, program, size);
  char line[640];
  std::size_t n = 0;
  char digits[16];
  pid_digits(digits, pid);
  append(line, n, sizeof line, "chock: `");
  append(line, n, sizeof line, program[0] != '\0' ? program : "?");
  append(line, n, sizeof line, "` (pid ");
  append(line, n, sizeof line, digits);
  append(line, n, sizeof line, ") was refused ");
  append(line, n, sizeof line, what);
  append(line, n, sizeof line, reason);
  append(line, n, sizeof line, hint(program_hints::kind_of(program)));
  line[n++] = '\n';
  (void)!::write(2, line, n);
}

void on_write_execute(Watch& w, pid_t pid) noexcept {
  if (!refuse_stopped_call(pid, EPERM) || w.evidence.write_execute_refused++ > 0) return;
  say_first_refusal(w, pid, w.evidence.write_execute_program, sizeof w.evidence.write_execute_program,
                    "a writable and executable mapping (write-xor-execute): ", program_hints::kJitReason,
                    program_hints::without_jit);
}

void on_user_namespace(Watch& w, pid_t pid) noexcept {
  if (!refuse_stopped_call(pid, ENOSPC) || w.evidence.user_namespace_refused++ > 0) return;
  say_first_refusal(w, pid, w.evidence.user_namespace_program, sizeof w.evidence.user_namespace_program,
                    "a user namespace (ENOSPC): ", program_hints::kNestedSandboxReason,
                    program_hints::without_own_sandbox);
}

// The filter's SECCOMP_RET_TRACE: memfd_create without MFD_NOEXEC_SEAL (and
// without MFD_EXEC, which the filter refuses). The flag is added in the
// stopped task's registers, which nothing else of the call can touch; the
// kernel runs the filter again on what it will execute, which now allows it.
void on_seccomp_stop(Watch& w, pid_t pid) noexcept {
  unsigned long data = 0;
  if (::ptrace(PTRACE_GETEVENTMSG, pid, nullptr, &data) != 0) return;
  if (data == seccomp::kTraceWriteExecute) return on_write_execute(w, pid);
  if (data == seccomp::kTraceUserNamespace) return on_user_namespace(w, pid);
  if (data == seccomp::kTraceUntracedClone) {
#if defined(__x86_64__)
    user_regs_struct regs{};
    const bool read = ::ptrace(PTRACE_GETREGS, pid, nullptr, &regs) == 0;
    const std::uint64_t flags = read ? regs.rdi & 0xffffffffULL : 0;
#else
    const std::uint64_t flags = 0;
#endif
    if (!refuse_stopped_call(pid, EPERM)) return;
    ++w.evidence.untraced_clone_refused;
    if (flags == seccomp::kSanitizerTracerClone) ++w.evidence.sanitizer_tracer_refused;
    return;
  }
  if (data != seccomp::kTraceMemfdCreate) return;
#if defined(__x86_64__)
  user_regs_struct regs{};
  if (w.seal_memfd && ::ptrace(PTRACE_GETREGS, pid, nullptr, &regs) == 0 &&
      regs.orig_rax == SYS_memfd_create) {
    regs.rsi = (regs.rsi & 0xffffffffULL) | seccomp::kMfdNoexecSeal;
    if (::ptrace(PTRACE_SETREGS, pid, nullptr, &regs) == 0) {
      ++w.evidence.memfd_sealed;
      return;
    }
  }
#endif
  // A kernel without MFD_NOEXEC_SEAL lets the memfd be made as before (said
  // in the result); one with it never lets an unsealed one through.
  if (w.seal_memfd) {
    ::kill(pid, SIGKILL);
    return;
  }
  ++w.evidence.memfd_unsealed;
}

// A task ending in SIGSYS while stopped in a call the filter kills for: the
// filter killed it. Said at once on the call's stderr (a process waiting
// forever for the killed one, as LeakSanitizer waits for its tracer, is
// then explained before the deadline), and kept for the result.
void on_filter_kill(Watch& w, pid_t pid) noexcept {
#if defined(__x86_64__)
  user_regs_struct regs{};
  if (::ptrace(PTRACE_GETREGS, pid, nullptr, &regs) != 0) return;
  const char* call = seccomp::killed_for(static_cast<long>(regs.orig_rax), regs.rdi, regs.r8);
  if (call == nullptr) return;  // SIGSYS from kill(2), or another thread of the killed process
  FilterKill k;
  k.pid = pid;
  for (std::size_t i = 0; call[i] != '\0' && i + 1 < sizeof k.call; ++i) k.call[i] = call[i];
  char comm[32] = {};
  const int proc = proc_dir(w);
  if (proc < 0 || read_proc(proc, pid, "comm", comm, sizeof comm) < 0) comm[0] = '\0';
  for (std::size_t i = 0; comm[i] != '\0' && comm[i] != '\n' && i + 1 < sizeof k.comm; ++i)
    k.comm[i] = comm[i] >= 0x20 && comm[i] < 0x7f && comm[i] != '`' ? comm[i] : '?';
  if (w.evidence.filter_kill_count < kFilterKillsKept)
    w.evidence.filter_kills[w.evidence.filter_kill_count] = k;
  w.evidence.last_filter_kill = k;
  ++w.evidence.filter_kill_count;
  char line[160];
  std::size_t n = 0;
  char digits[16];
  pid_digits(digits, pid);
  append(line, n, sizeof line, "chock: `");
  append(line, n, sizeof line, k.comm);
  append(line, n, sizeof line, "` (pid ");
  append(line, n, sizeof line, digits);
  append(line, n, sizeof line, ") was killed for calling `");
  append(line, n, sizeof line, k.call);
  append(line, n, sizeof line, "`, which the sandbox refuses\n");
  (void)!::write(2, line, n);
#else
  (void)w;
  (void)pid;
#endif
}

void on_exit_stop(Watch& w, pid_t pid) noexcept {
  unsigned long status = 0;
  if (::ptrace(PTRACE_GETEVENTMSG, pid, nullptr, &status) != 0) return;
  int st = static_cast<int>(status);
  if (WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS) on_filter_kill(w, pid);
  bool failed = WIFSIGNALED(st) || (WIFEXITED(st) && WEXITSTATUS(st) != 0);
  if (!failed) return;
  const int proc = proc_dir(w);
  if (proc < 0) return;
  std::uint32_t fds = count_fds(proc, pid);
  if (fds > w.evidence.exit_fds_max) w.evidence.exit_fds_max = fds;
  std::uint64_t data = vm_data(proc, pid);
  if (data > w.evidence.exit_data_max) w.evidence.exit_data_max = data;
}

void on_signal_stop(Watch& w, pid_t pid, int sig) noexcept {
  if (sig == SIGXFSZ && syscall_failed_efbig(pid)) ++w.evidence.xfsz_efbig;
  if (sig == SIGXCPU && w.cpu_soft_ticks > 0 && proc_dir(w) >= 0) {
    // The kernel sends RLIMIT_CPU's SIGXCPU as itself (SI_KERNEL); kill(2)
    // and tgkill(2) say SI_USER and SI_TKILL. It checks tick-sampled time,
    // which on a loaded or virtual machine runs well ahead of the exact
    // runtime /proc reports, so the time is only asked to be half the limit.
    siginfo_t si{};
    bool from_kernel = ::ptrace(PTRACE_GETSIGINFO, pid, nullptr, &si) == 0 && si.si_code == SI_KERNEL;
    std::uint64_t ticks = cpu_ticks(w.proc_fd, pid);
    if (from_kernel && ticks * 2 >= w.cpu_soft_ticks) {
      ++w.evidence.xcpu_over_soft;
      if (ticks > w.evidence.cpu_ticks_max) w.evidence.cpu_ticks_max = ticks;
    }
  }
}

// RssAnon + RssShmem of /proc/<pid>/status, in bytes.
std::uint64_t resident(int proc_fd, pid_t pid) noexcept {
  char buf[4096];
  if (read_proc(proc_fd, pid, "status", buf, sizeof buf) < 0) return 0;
  std::uint64_t kib = 0;
  for (const char* p = buf; *p != '\0'; ++p) {
    if (p != buf && p[-1] != '\n') continue;
    if (p[0] == 'R' && p[1] == 's' && p[2] == 's' && p[3] == 'A' && p[4] == 'n' && p[5] == 'o' &&
        p[6] == 'n' && p[7] == ':')
      kib += parse_u64(p + 8);
    else if (p[0] == 'R' && p[1] == 's' && p[2] == 's' && p[3] == 'S' && p[4] == 'h' && p[5] == 'm' &&
             p[6] == 'e' && p[7] == 'm' && p[8] == ':')
      kib += parse_u64(p + 9);
  }
  return kib * 1024;
}

}  // namespace

namespace {

// The first line of `text` that starts with `prefix`, or nullptr.
const char* line_starting(const char* text, const char* prefix) noexcept {
  for (const char* line = text; *line != '\0';) {
    const char* p = line;
    const char* q = prefix;
    while (*q != '\0' && *p == *q) ++p, ++q;
    if (*q == '\0') return line;
    while (*line != '\n' && *line != '\0') ++line;
    if (*line == '\n') ++line;
  }
  return nullptr;
}

bool ends_token(char c) noexcept {
  return c == ' ' || c == '\t' || c == '\n' || c == '\0';
}

// Past the token at p and the one space after it.
const char* next_token(const char* p) noexcept {
  while (!ends_token(*p)) ++p;
  return *p == ' ' ? p + 1 : p;
}

// The value under `column` in /proc/net/snmp's pair of lines for `table`
// ("Ip: Forwarding ... OutNoRoutes ..." then "Ip: 1 ... 3 ..."), or 0.
std::uint64_t snmp_value(const char* text, const char* table, const char* column) noexcept {
  const char* header = line_starting(text, table);
  const char* values = header == nullptr ? nullptr : line_starting(next_token(header), table);
  if (values == nullptr) return 0;
  for (const char *h = next_token(header), *v = next_token(values); !ends_token(*h) && !ends_token(*v);
       h = next_token(h), v = next_token(v)) {
    const char* c = column;
    const char* p = h;
    while (*c != '\0' && *p == *c) ++p, ++c;
    if (*c == '\0' && ends_token(*p)) return parse_u64(v);
  }
  return 0;
}

// "Ip6OutNoRoutes   3" in /proc/net/snmp6.
std::uint64_t snmp6_value(const char* text, const char* name) noexcept {
  const char* line = line_starting(text, name);
  if (line == nullptr) return 0;
  const char* p = line;
  while (*name != '\0') ++p, ++name;
  return ends_token(*p) ? parse_u64(p) : 0;
}

}  // namespace

void read_network_counters(Watch& w) noexcept {
  const int proc = proc_dir(w);
  if (!w.count_network || proc < 0) return;
  char buf[8192];
  std::uint64_t total = 0;
  if (read_at(proc, "self/net/snmp", buf, sizeof buf) > 0) total += snmp_value(buf, "Ip:", "OutNoRoutes");
  if (read_at(proc, "self/net/snmp6", buf, sizeof buf) > 0) total += snmp6_value(buf, "Ip6OutNoRoutes");
  w.evidence.net_no_route = total;
}

long memory_interval_usec(std::uint64_t limit, std::uint64_t used) noexcept {
  if (used >= limit) return kMemoryIntervalMinUsec;
  const std::uint64_t usec = (limit - used) / (kMemoryFillBytesPerSecond / 1'000'000);
  if (usec < static_cast<std::uint64_t>(kMemoryIntervalMinUsec)) return kMemoryIntervalMinUsec;
  if (usec > static_cast<std::uint64_t>(kMemoryIntervalMaxUsec)) return kMemoryIntervalMaxUsec;
  return static_cast<long>(usec);
}

bool measure_memory(Watch& w, std::uint64_t* used) noexcept {
  *used = 0;
  const int proc = proc_dir(w);
  if (proc < 0 || w.memory_limit == 0) return false;
  const long dir = sys::raw(SYS_openat, proc, sys::arg("."), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return false;
  std::uint64_t sum = 0;
  alignas(8) char buf[8192] = {};  // filled by a raw call, which the analyzer cannot see
  for (;;) {
    const long n = sys::raw(SYS_getdents64, dir, sys::arg(buf), sizeof buf);
    if (n <= 0) break;
    for (long off = 0; off < n;) {
      auto* d = reinterpret_cast<dirent64*>(buf + off);
      off += d->d_reclen;
      if (d->d_name[0] < '1' || d->d_name[0] > '9') continue;
      const auto pid = static_cast<pid_t>(parse_u64(d->d_name));
      if (pid != 1) sum += resident(proc, pid);
    }
  }
  sys::raw(SYS_close, dir);
  *used = sum;
  ++w.evidence.memory_samples;
  if (sum > w.evidence.memory_peak) w.evidence.memory_peak = sum;
  if (sum <= w.memory_limit) return false;
  w.evidence.memory_over = 1;
  return true;
}

int proc_dir(Watch& w) noexcept {
  if (w.proc_fd >= 0 || !w.find_proc) return w.proc_fd;
  const long fd = sys::raw(SYS_openat, AT_FDCWD, sys::arg("/proc"), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return -1;
  char self[16] = {};
  const long n = sys::raw(SYS_readlinkat, fd, sys::arg("self"), sys::arg(self), sizeof self);
  if (n != 1 || self[0] != '1') {
    sys::raw(SYS_close, fd);  // still the host's /proc: the program has not pivoted yet
    return -1;
  }
  w.proc_fd = static_cast<int>(fd);
  w.evidence.proc = 1;
  return w.proc_fd;
}

unsigned long seize_options() noexcept {
  return PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK | PTRACE_O_TRACECLONE | PTRACE_O_TRACEEXIT |
         PTRACE_O_TRACESECCOMP | PTRACE_O_EXITKILL;
}

bool kernel_seals_memfd() noexcept {
  int fd =
      static_cast<int>(::syscall(SYS_memfd_create, "chock-probe", MFD_CLOEXEC | seccomp::kMfdNoexecSeal));
  if (fd < 0) return false;
  ::close(fd);
  return true;
}

int open_private_proc() noexcept {
  int fs = sys::fsopen("proc", FSOPEN_CLOEXEC);
  if (fs < 0) return -1;
  int mnt = -1;
  if (sys::fsconfig(fs, FSCONFIG_CMD_CREATE, nullptr, nullptr, 0) == 0)
    mnt = sys::fsmount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
  int saved = errno;
  ::close(fs);
  errno = saved;
  return mnt;
}

int seize(Watch& w, pid_t pid) noexcept {
  if (::ptrace(PTRACE_SEIZE, pid, nullptr, seize_options()) != 0) return errno;
  w.evidence.traced = 1;
  if (w.proc_fd >= 0) w.evidence.proc = 1;
  w.tasks_live = 1;
  w.evidence.tasks_peak = 1;
  return 0;
}

bool on_wait(Watch& w, pid_t pid, int status) noexcept {
  if (w.evidence.traced == 0) return false;
  if (WIFEXITED(status) || WIFSIGNALED(status)) {
    if (w.tasks_live > 0) --w.tasks_live;
    return false;
  }
  if (!WIFSTOPPED(status)) return false;
  int sig = WSTOPSIG(status);
  int event = status >> 16;
  switch (event) {
    case 0:  // signal-delivery stop: look, then deliver the signal as it was
      on_signal_stop(w, pid, sig);
      ::ptrace(PTRACE_CONT, pid, nullptr, sig);
      return true;
    case PTRACE_EVENT_FORK:
    case PTRACE_EVENT_VFORK:
    case PTRACE_EVENT_CLONE:
      if (++w.tasks_live > w.evidence.tasks_peak) w.evidence.tasks_peak = w.tasks_live;
      ::ptrace(PTRACE_CONT, pid, nullptr, 0);
      return true;
    case PTRACE_EVENT_SECCOMP:
      on_seccomp_stop(w, pid);
      ::ptrace(PTRACE_CONT, pid, nullptr, 0);
      return true;
    case PTRACE_EVENT_EXIT:
      on_exit_stop(w, pid);
      ::ptrace(PTRACE_CONT, pid, nullptr, 0);
      return true;
    case PTRACE_EVENT_STOP:
      // A stop signal means a group stop: keep the task stopped, as it would
      // be untraced. SIGTRAP is a new task's first stop: let it run.
      if (sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU)
        ::ptrace(PTRACE_LISTEN, pid, nullptr, 0);
      else
        ::ptrace(PTRACE_CONT, pid, nullptr, 0);
      return true;
    default:
      ::ptrace(PTRACE_CONT, pid, nullptr, 0);
      return true;
  }
}

}  // namespace chock::exit_watch
