#include "cli/fetch_hop.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <vector>

#include "sandbox/fetcher_confinement.hpp"
#include "util/dirs.hpp"
#include "util/fd.hpp"
#include "util/io.hpp"
#include "util/json.hpp"

namespace chock::cli {

namespace {

constexpr const char* kHop = "chock-fetch-hop";

}  // namespace

Expected<std::string> find_hop_program() {
  return companion(kHop);
}

Expected<HopAnswer> run_hop(const std::string& program, const HopRequest& request) {
  // Chock dials the address it checked; the fetcher has no network of its own.
  const auto started = std::chrono::steady_clock::now();
  auto dialled = net::dial(request.address, request.url.port, request.connect_deadline);
  // The fetcher gets what the dial left of the deadline.
  const auto deadline = request.deadline - std::chrono::duration_cast<std::chrono::milliseconds>(
                                               std::chrono::steady_clock::now() - started);
  if (!dialled || deadline.count() <= 0) {
    HopAnswer failed;
    failed.error = !dialled ? dialled.error().message()
                            : "no answer within " + std::to_string(request.deadline.count()) + " ms";
    return failed;
  }
  UniqueFd dialled_fd(*dialled);
  // Above the descriptors the fetcher gets (1, 3, 4, 5), so no dup2 of the
  // spawn overwrites it before its own.
  UniqueFd connected(::fcntl(dialled_fd.get(), F_DUPFD_CLOEXEC, 10));
  if (!connected) return sys_error("fetch: dup the socket");
  dialled_fd.reset();
  int body_pipe[2], meta_pipe[2];
  if (::pipe2(body_pipe, O_CLOEXEC) != 0) return sys_error("fetch: pipe");
  UniqueFd body_read(body_pipe[0]), body_write(body_pipe[1]);
  if (::pipe2(meta_pipe, O_CLOEXEC) != 0) return sys_error("fetch: pipe");
  UniqueFd meta_read(meta_pipe[0]), meta_write(meta_pipe[1]);

  const std::vector<std::string> args = {program,
                                         request.url.text(),
                                         net::address_text(request.address),
                                         std::to_string(request.url.port),
                                         std::to_string(request.max_bytes),
                                         std::to_string(request.connect_deadline.count()),
                                         std::to_string(deadline.count()),
                                         request.text ? "1" : "0",
                                         request.credential.empty() ? "0" : "1"};
  UniqueFd secret_read;
  if (!request.credential.empty()) {
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0) return sys_error("fetch: pipe");
    secret_read.reset(p[0]);
    UniqueFd secret_write(p[1]);
    // Far below a pipe's capacity, so this never blocks.
    if (auto w = write_all(secret_write.get(), request.credential, "the fetcher's credential pipe"); !w)
      return std::move(w).error();
  }
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  char* envp[] = {nullptr};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, body_write.get(), 1);
  posix_spawn_file_actions_adddup2(&actions, meta_write.get(), 3);
  if (secret_read) posix_spawn_file_actions_adddup2(&actions, secret_read.get(), 4);
  posix_spawn_file_actions_adddup2(&actions, connected.get(), sandbox::kFetcherSocketFd);
  pid_t pid = -1;
  const int spawned = ::posix_spawn(&pid, program.c_str(), &actions, nullptr, argv.data(), envp);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) return Error{"fetch: run", program, spawned};
  body_write.reset();
  meta_write.reset();
  secret_read.reset();
  connected.reset();

  HopAnswer answer;
  std::string meta;
  const auto until = std::chrono::steady_clock::now() + deadline + std::chrono::seconds(5);
  bool late = false;
  char buffer[65536];
  for (int open = 2; open > 0;) {
    pollfd fds[2] = {{body_read.get(), POLLIN, 0}, {meta_read.get(), POLLIN, 0}};
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now())
            .count();
    if (left <= 0) {
      late = true;
      break;
    }
    if (::poll(fds, 2, static_cast<int>(left)) < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      const ssize_t n = ::read(fds[i].fd, buffer, sizeof buffer);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        (i == 0 ? body_read : meta_read).reset();
        --open;
        continue;
      }
      // The program keeps to max_bytes; this bounds what a broken one could send.
      std::string& into = i == 0 ? answer.body : meta;
      if (into.size() < request.max_bytes + 65536) into.append(buffer, static_cast<std::size_t>(n));
    }
  }
  if (late) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (late) {
    answer.error = "no answer within " + std::to_string(request.deadline.count()) + " ms";
    answer.body.clear();
    return answer;
  }
  // What the fetcher reports is read as a server's words might be: it parsed them.
  auto parsed = parse_json(meta);
  const nlohmann::json m = parsed ? std::move(*parsed) : nlohmann::json();
  if (!m.is_object()) {
    answer.error = "the fetcher ended without saying what happened (" +
                   std::string(WIFSIGNALED(status) ? "killed by signal " + std::to_string(WTERMSIG(status))
                                                   : "exit " + std::to_string(WEXITSTATUS(status))) +
                   ")";
    answer.body.clear();
    return answer;
  }
  answer.status = m.value("status", 0L);
  answer.content_type = m.value("content_type", std::string());
  answer.location = m.value("location", std::string());
  answer.bytes = m.value("bytes", std::uint64_t{0});
  answer.cut = m.value("cut", false);
  answer.wire_in = m.value("wire_in", std::uint64_t{0});
  answer.wire_out = m.value("wire_out", std::uint64_t{0});
  answer.error = m.value("error", std::string());
  if (!answer.location.empty()) answer.body.clear();
  return answer;
}

}  // namespace chock::cli
