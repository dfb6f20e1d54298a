#include "mcp/self_call.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <string_view>

#include "mcp/ask_channel.hpp"
#include "util/fd.hpp"

extern char** environ;

namespace chock::mcp {

namespace {

struct Pipe {
  UniqueFd read, write;
};

Expected<Pipe> make_pipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return sys_error("pipe, for a tool call");
  return Pipe{UniqueFd(fds[0]), UniqueFd(fds[1])};
}

}  // namespace

Expected<SelfResult> call_self(const SelfCall& call) {
  std::array<Pipe, 3> pipes;  // stdin, stdout, stderr
  const std::size_t used = 3;
  for (std::size_t i = 0; i < used; ++i) {
    auto p = make_pipe();
    if (!p) return std::move(p).error();
    pipes[i] = std::move(*p);
  }
  std::vector<std::string> args{call.chock};
  args.insert(args.end(), call.args.begin(), call.args.end());
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  // The ask channel: the child's end becomes its descriptor 3, named in its environment.
  UniqueFd ask_end, ask_child_end;
  const std::string ask_variable = std::string(kAskChannelVariable) + "=";
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e)
    if (!std::string_view(*e).starts_with(ask_variable)) env_strings.emplace_back(*e);
  if (call.ask) {
    int pair[2];
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0)
      return sys_error("socketpair, for a tool call's questions");
    ask_end.reset(pair[0]);
    ask_child_end.reset(pair[1]);
    env_strings.push_back(std::string(kAskChannelVariable) + "=3");
  }
  std::vector<char*> envp;
  envp.reserve(env_strings.size() + 1);
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  // The child's ends, at 0..3 after the dups.
  const std::size_t placed = call.ask ? 4 : 3;
  std::array<int, 4> child_end{pipes[0].read.get(), pipes[1].write.get(), pipes[2].write.get(),
                               ask_child_end.get()};
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) return sys_error("fork, for a tool call");
  if (pid == 0) {
    // Async-signal-safe calls only. Each end is first moved above 2, so no
    // dup2 below overwrites one still to be placed.
    for (std::size_t i = 0; i < placed; ++i) child_end[i] = ::fcntl(child_end[i], F_DUPFD_CLOEXEC, 10);
    for (std::size_t i = 0; i < placed; ++i)
      if (child_end[i] < 0 || ::dup2(child_end[i], static_cast<int>(i)) < 0) ::_exit(127);
    if (!call.cwd.empty() && ::chdir(call.cwd.c_str()) != 0) ::_exit(127);
    ::setsid();
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(127);
    ::signal(SIGPIPE, SIG_DFL);  // the server ignores it; the command gets its own
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execve(argv[0], argv.data(), envp.data());
    ::_exit(127);
  }
  for (std::size_t i = 0; i < used; ++i) (i == 0 ? pipes[i].read : pipes[i].write).reset();
  ask_child_end.reset();

  SelfResult r;
  std::array<Captured*, 3> into{nullptr, &r.out, &r.err};
  std::size_t written = 0;
  if (call.input.empty())
    pipes[0].write.reset();
  else
    ::fcntl(pipes[0].write.get(), F_SETFL, O_NONBLOCK);
  for (;;) {
    std::vector<pollfd> fds;
    std::vector<std::size_t> which;
    if (pipes[0].write) {
      fds.push_back({pipes[0].write.get(), POLLOUT, 0});
      which.push_back(0);
    }
    for (std::size_t i = 1; i < used; ++i)
      if (pipes[i].read) {
        fds.push_back({pipes[i].read.get(), POLLIN, 0});
        which.push_back(i);
      }
    if (fds.empty()) break;
    if (ask_end) {
      fds.push_back({ask_end.get(), POLLIN, 0});
      which.push_back(3);
    }
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      return sys_error("poll, in a tool call");
    }
    for (std::size_t k = 0; k < fds.size(); ++k) {
      if (fds[k].revents == 0) continue;
      const std::size_t i = which[k];
      if (i == 3) {
        // The command waits for this answer, so its output waits too.
        if (!answer_one(ask_end.get(), call.ask)) ask_end.reset();
        continue;
      }
      if (i == 0) {
        const ssize_t n =
            ::write(pipes[0].write.get(), call.input.data() + written, call.input.size() - written);
        if (n > 0) written += static_cast<std::size_t>(n);
        if ((n < 0 && errno != EAGAIN && errno != EINTR) || written == call.input.size())
          pipes[0].write.reset();
        continue;
      }
      char buf[65536];
      const ssize_t n = ::read(pipes[i].read.get(), buf, sizeof buf);
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n <= 0) {
        pipes[i].read.reset();
        continue;
      }
      Captured& c = *into[i];
      c.total += static_cast<std::uint64_t>(n);
      if (c.head.size() < call.cap)
        c.head.append(buf, std::min(static_cast<std::size_t>(n), call.cap - c.head.size()));
    }
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return sys_error("waitpid, for a tool call");
  r.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

}  // namespace chock::mcp
