#include "util/subprocess.hpp"

#include <fcntl.h>
#include <linux/capability.h>
#include <linux/seccomp.h>
#include <linux/securebits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>

#include "util/fd.hpp"
#include "util/split.hpp"
#include "util/syscalls.hpp"

extern char** environ;

namespace chock {

namespace {

std::vector<char*> c_strings(std::vector<std::string>& v) {
  std::vector<char*> out;
  out.reserve(v.size() + 1);
  for (auto& s : v) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// posix_spawn: the program's own process group, default SIGPIPE, nothing blocked.
Expected<pid_t> spawn(const ProgramRun& env, const int (&fds)[3]) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  for (int i = 0; i < 3; ++i) posix_spawn_file_actions_adddup2(&actions, fds[i], i);
  if (!env.cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, env.cwd.c_str());
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setpgroup(&attr, 0);  // its own group: a deadline ends it and all it started
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
  std::vector<std::string> argv = env.argv;
  std::vector<std::string> envv = env.env;
  auto c_argv = c_strings(argv);
  auto c_env = c_strings(envv);
  pid_t pid = -1;
  int rc = ::posix_spawnp(&pid, argv.front().c_str(), &actions, &attr, c_argv.data(), c_env.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) return Error{"run " + argv.front(), env.cwd, rc};
  return pid;
}

// The credentials of RunAs, then exec; any failure's errno goes to `report`.
[[noreturn]] void become_and_exec(const RunAs& as, const int (&fds)[3], const char* cwd, const char* program,
                                  char* const* argv, char* const* envp, int report) noexcept {
  // The real uid stays root's (RunAs, subprocess.hpp).
  long rc = sys::raw(SYS_prctl, PR_SET_SECUREBITS, SECBIT_NOROOT | SECBIT_NOROOT_LOCKED);
  if (rc >= 0) rc = sys::raw(SYS_prctl, PR_SET_KEEPCAPS, 1);
  if (rc >= 0) rc = sys::raw(SYS_setgroups, 0, 0);
  if (rc >= 0) rc = sys::raw(SYS_setresgid, as.gid, as.gid, as.gid);
  if (rc >= 0) rc = sys::raw(SYS_setresuid, -1, as.uid, as.uid);
  if (rc >= 0) {
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
    data[0].effective = data[0].permitted = data[0].inheritable = 1U << CAP_DAC_READ_SEARCH;
    rc = sys::raw(SYS_capset, sys::arg(&header), sys::arg(data));
  }
  if (rc >= 0) rc = sys::raw(SYS_prctl, PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_DAC_READ_SEARCH);
  if (rc >= 0) rc = sys::raw(SYS_setpgid, 0, 0);  // its own group: a deadline ends it and all it started
  for (int i = 0; i < 3 && rc >= 0; ++i)
    rc = fds[i] == i ? sys::raw(SYS_fcntl, i, F_SETFD, 0) : sys::raw(SYS_dup2, fds[i], i);
  if (rc >= 0 && cwd != nullptr) rc = sys::raw(SYS_chdir, sys::arg(cwd));
  if (rc >= 0) {
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    sigset_t none;
    sigemptyset(&none);
    if (::sigaction(SIGPIPE, &dfl, nullptr) != 0 || ::sigprocmask(SIG_SETMASK, &none, nullptr) != 0)
      rc = -errno;
  }
  if (rc >= 0) rc = sys::raw(SYS_prctl, PR_SET_NO_NEW_PRIVS, 1);
  if (rc >= 0) {
    sock_fprog filter{static_cast<unsigned short>(as.keep_uid.size()),
                      const_cast<sock_filter*>(as.keep_uid.data())};
    rc = sys::raw(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, sys::arg(&filter));
  }
  if (rc >= 0) rc = sys::raw(SYS_execve, sys::arg(program), sys::arg(argv), sys::arg(envp));
  const int error = static_cast<int>(-rc);
  (void)sys::raw(SYS_write, report, sys::arg(&error), sizeof error);
  sys::raw(SYS_exit_group, 127);
  __builtin_unreachable();
}

// fork, then become RunAs in the child before exec. An Error (with the
// child's errno) when it could not: EPERM where this process lacks the
// capabilities to give.
Expected<pid_t> spawn_as(const ProgramRun& env, const RunAs& as, const int (&fds)[3]) {
  if (as.keep_uid.empty() || as.keep_uid.size() > BPF_MAXINSNS)
    return Error{
        "run " + env.argv.front() + " as uid " + std::to_string(as.uid) + ": no filter to keep it there",
        env.cwd, EINVAL};
  // Resolved before the fork: the child only makes system calls.
  const std::string program =
      env.argv.front().find('/') != std::string::npos ? env.argv.front() : find_on_path(env.argv.front());
  if (program.empty()) return Error{"run " + env.argv.front() + ": not found on PATH", env.cwd, ENOENT};
  std::vector<std::string> argv = env.argv;
  std::vector<std::string> envv = env.env;
  auto c_argv = c_strings(argv);
  auto c_env = c_strings(envv);
  int report[2];
  if (::pipe2(report, O_CLOEXEC) != 0) return sys_error("pipe");
  UniqueFd report_r(report[0]), report_w(report[1]);
  const pid_t pid = ::fork();
  if (pid < 0) return sys_error("fork", program);
  if (pid == 0)
    become_and_exec(as, fds, env.cwd.empty() ? nullptr : env.cwd.c_str(), program.c_str(), c_argv.data(),
                    c_env.data(), report_w.get());
  report_w.reset();
  int error = 0;
  ssize_t n = 0;
  while ((n = ::read(report_r.get(), &error, sizeof error)) < 0 && errno == EINTR) {
  }
  if (n == static_cast<ssize_t>(sizeof error)) {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return Error{"run " + env.argv.front() + " as uid " + std::to_string(as.uid), env.cwd, error};
  }
  return pid;
}

}  // namespace

std::string find_on_path(const std::string& name) {
  const char* path = ::getenv("PATH");
  for (const auto& dir : split_nonempty(path != nullptr ? path : "/usr/bin:/bin", ':')) {
    if (!dir.starts_with('/')) continue;
    std::string candidate = dir;
    candidate.append("/").append(name);
    struct stat st {};
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(candidate.c_str(), X_OK) == 0)
      return candidate;
  }
  return {};
}

std::vector<std::string> current_environment() {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
  return env;
}

Expected<ProgramOutput> run_program(const ProgramRun& env) {
  int in[2], out[2], err[2];
  if (::pipe2(in, O_CLOEXEC) != 0) return sys_error("pipe");
  UniqueFd in_r(in[0]), in_w(in[1]);
  if (::pipe2(out, O_CLOEXEC) != 0) return sys_error("pipe");
  UniqueFd out_r(out[0]), out_w(out[1]);
  if (::pipe2(err, O_CLOEXEC) != 0) return sys_error("pipe");
  UniqueFd err_r(err[0]), err_w(err[1]);

  if (env.argv.empty()) return Error{"run a program: no program named", "", EINVAL};
  const std::vector<std::string>& argv = env.argv;
  const int fds[3] = {in_r.get(), out_w.get(), err_w.get()};
  auto started = env.as ? spawn_as(env, *env.as, fds) : spawn(env, fds);
  in_r.reset();
  out_w.reset();
  err_w.reset();
  if (!started) return std::move(started).error();
  const pid_t pid = *started;

  // Feed stdin while draining both outputs, so a large pack cannot deadlock.
  ::fcntl(in_w.get(), F_SETFL, O_NONBLOCK);
  std::size_t written = 0;
  if (env.stdin_data.empty()) in_w.reset();
  ProgramOutput o;
  char buf[65536];
  const auto deadline = std::chrono::steady_clock::now() + env.deadline;
  bool late = false;
  while (out_r || err_r) {
    pollfd fds[3] = {{out_r.get(), POLLIN, 0}, {err_r.get(), POLLIN, 0}, {in_w.get(), POLLOUT, 0}};
    auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      late = true;
      break;
    }
    int ready = ::poll(fds, 3, static_cast<int>(std::min<std::int64_t>(left.count(), 60000)));
    if (ready < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (ready == 0) continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        (i == 0 ? o.out : o.err).append(buf, static_cast<std::size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        (i == 0 ? out_r : err_r).reset();
      }
    }
    if (fds[2].fd >= 0 && fds[2].revents != 0) {
      ssize_t n = ::write(in_w.get(), env.stdin_data.data() + written, env.stdin_data.size() - written);
      if (n > 0) written += static_cast<std::size_t>(n);
      if ((n < 0 && errno != EAGAIN && errno != EINTR) || written == env.stdin_data.size()) in_w.reset();
    }
  }
  in_w.reset();
  // A program that closed its output but has not exited is waited for until the same deadline.
  int status = 0;
  if (!late) {
    UniqueFd exited(sys::pidfd_open(pid, 0));
    for (;;) {
      auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        late = true;
        break;
      }
      pollfd p{exited.get(), POLLIN, 0};
      int ready = exited ? ::poll(&p, 1, static_cast<int>(std::min<std::int64_t>(left.count(), 60000))) : 1;
      if (ready < 0 && errno != EINTR) return sys_error("wait for", argv.front());
      if (ready > 0) break;
    }
  }
  if (!late) {
    while (::waitpid(pid, &status, 0) < 0) {
      if (errno != EINTR) return sys_error("wait for", argv.front());
    }
  }
  if (late) {
    ::kill(-pid, SIGKILL);
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return Error{argv.front() + (argv.size() > 1 ? " " + argv[1] : std::string()) +
                     " did not finish within " + std::to_string(env.deadline.count()) + " s and was stopped",
                 env.cwd, ETIMEDOUT};
  }
  o.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return o;
}

}  // namespace chock
