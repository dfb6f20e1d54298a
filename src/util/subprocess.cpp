#include "util/subprocess.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>

#include "util/fd.hpp"
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

}  // namespace

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

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in_r.get(), 0);
  posix_spawn_file_actions_adddup2(&actions, out_w.get(), 1);
  posix_spawn_file_actions_adddup2(&actions, err_w.get(), 2);
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
  if (argv.empty()) return Error{"run a program: no program named", "", EINVAL};
  auto c_argv = c_strings(argv);
  auto c_env = c_strings(envv);
  pid_t pid = -1;
  int rc = ::posix_spawnp(&pid, argv.front().c_str(), &actions, &attr, c_argv.data(), c_env.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  in_r.reset();
  out_w.reset();
  err_w.reset();
  if (rc != 0) return Error{"run " + argv.front(), env.cwd, rc};

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
