#include "cli/tasks.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <thread>

#include "chock/sandbox.hpp"
#include "cli/outcome.hpp"
#include "sandbox/kill_naming.hpp"
#include "util/fd.hpp"
#include "util/io.hpp"
#include "workspace/fs.hpp"

namespace chock::cli {

namespace {

std::string two_digits(int n) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%02d", n);
  return buf;
}

// The next task number of the session, or an Error past kMaxTasks.
Expected<int> next_task(const std::string& dir) {
  int highest = 0;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d)) {
      int n = 0;
      if (std::sscanf(e->d_name, "task-%d.json", &n) == 1 && n > highest) highest = n;
    }
    ::closedir(d);
  }
  if (highest >= kMaxTasks)
    return Error{
        "the session has " + std::to_string(kMaxTasks) + " tasks, the most it keeps: start a new session", "",
        0, Errc::bad_config};
  return highest + 1;
}

std::string now_text() {
  char when[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  return when;
}

// Copies the call's output into the task's file up to the cap; past it, the
// rest is read and counted, never kept.
std::uint64_t keep_output(int from, int file) {
  std::uint64_t kept = 0, dropped = 0;
  char buf[65536];
  for (ssize_t n; (n = ::read(from, buf, sizeof buf)) != 0;) {
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    const auto got = static_cast<std::uint64_t>(n);
    const std::uint64_t room = kMaxTaskOutput > kept ? kMaxTaskOutput - kept : 0;
    const std::uint64_t take = std::min(room, got);
    if (take > 0 && write_all(file, std::string_view(buf, take), "task output")) kept += take;
    dropped += got - take;
  }
  return dropped;
}

// The task's lock was taken before the fork: the runner holds it (the same
// open file) until it exits, so a task is never seen as ended before it ran.
[[noreturn]] void run_task(const std::string& base, Config config, workspace::SessionLock& lock,
                           SessionEvents& events, nlohmann::json state) {
  ::setsid();
  const int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  for (int fd = 0; fd < 3; ++fd) ::dup2(null, fd);
  UniqueFd out(::open((base + ".out").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  int pipe[2];
  if (!out || ::pipe2(pipe, O_CLOEXEC) != 0) ::_exit(125);
  UniqueFd out_read(pipe[0]), out_write(pipe[1]);
  config.stdio = {null, out_write.get(), out_write.get()};
  config.pass_stdin = false;
  state["pid"] = ::getpid();
  state["state"] = "running";
  (void)workspace::fs::write_file_atomic(base + ".json", state.dump() + "\n");
  CancelSignals cancel;  // `chock tasks cancel` sends SIGTERM: the call's whole tree ends
  auto child = spawn(config);
  out_write.reset();
  // Started: later calls of the session run while this one does.
  lock = workspace::SessionLock();
  if (!child) {
    (void)write_all(out.get(), "chock: the task could not start: " + child.error().message() + "\n",
                    "task output");
    state["state"] = "failed";
    state["error"] = child.error().message();
    (void)workspace::fs::write_file_atomic(base + ".json", state.dump() + "\n");
    ::_exit(125);
  }
  std::uint64_t dropped = 0;
  std::thread copying([&] { dropped = keep_output(out_read.get(), out.get()); });
  const Result r = child->wait(cancel.fd());
  child->detach();
  copying.join();
  if (dropped > 0)
    (void)write_all(out.get(),
                    "\nchock: the task's output passed its cap of 8 MiB; " + std::to_string(dropped) +
                        " bytes more were dropped\n",
                    "task output");
  if (const std::string why = kill_message(r.limits); !why.empty())
    (void)write_all(out.get(), why + "\n", "task output");
  state["state"] = r.cancelled ? "cancelled" : "exited";
  state["exit_status"] = r.exit_status();
  state["ended"] = now_text();
  state["dropped_bytes"] = dropped;
  (void)workspace::fs::write_file_atomic(base + ".json", state.dump() + "\n");
  events.add("tool.result", r.json());
  ::_exit(0);
}

}  // namespace

Expected<std::string> start_task(const workspace::Session& s, Config config, workspace::SessionLock& lock,
                                 SessionEvents& events) {
  const std::string dir = workspace::tasks_dir(s);
  if (auto made = workspace::fs::make_dirs(dir, 0755); !made) return std::move(made).error();
  auto n = next_task(dir);
  if (!n) return std::move(n).error();
  const std::string base = dir + "/task-" + two_digits(*n);
  const std::string id = s.id + "-" + two_digits(*n);
  UniqueFd task_lock(::open((base + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
  if (!task_lock || ::flock(task_lock.get(), LOCK_EX) != 0) return sys_error("lock the task", base + ".lock");
  nlohmann::json state = {{"id", id}, {"argv", config.argv}, {"started", now_text()}, {"state", "starting"}};
  if (auto w = workspace::fs::write_file_atomic(base + ".json", state.dump() + "\n"); !w)
    return std::move(w).error();
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) return sys_error("fork the task's runner");
  if (pid == 0) run_task(base, std::move(config), lock, events, std::move(state));
  return id;  // our copy of the lock's descriptor closes here; the runner's holds it
}

}  // namespace chock::cli
