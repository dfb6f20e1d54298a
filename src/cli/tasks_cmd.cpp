// chock tasks list [--session ID] | show ID | wait ID [--timeout S] | cancel ID:
// the background calls of `chock run --background` (tasks.hpp). A task's id
// is "<session>-NN".
#include <sys/file.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "chock/workspace.hpp"
#include "cli/command.hpp"
#include "cli/tasks.hpp"
#include "util/escape.hpp"
#include "util/fd.hpp"
#include "util/syscalls.hpp"
#include "workspace/fs.hpp"

namespace chock::cli {

namespace {

struct Task {
  std::string base;  // <session>/tasks/task-NN
  nlohmann::json state;
};

int fail(const Error& e) {
  std::fprintf(stderr, "chock: tasks: %s\n", e.message().c_str());
  return exit_status_for(e, 2);
}

Expected<Task> find_task(const std::string& id) {
  const auto dash = id.rfind('-');
  if (dash == std::string::npos || dash + 3 != id.size())
    return Error{"a task id looks like SESSION-NN, as chock run --background printed it", id, 0,
                 Errc::bad_config};
  auto s = workspace::load(id.substr(0, dash));
  if (!s) return std::move(s).error();
  const std::string base = workspace::tasks_dir(*s) + "/task-" + id.substr(dash + 1);
  auto text = workspace::fs::read_file_nofollow(base + ".json", 1 << 20);
  if (!text) return Error{"there is no task " + id, "", 0, Errc::bad_config};
  auto state = nlohmann::json::parse(*text, nullptr, false);
  if (!state.is_object()) return Error{"the task's record is damaged", base + ".json"};
  return Task{base, std::move(state)};
}

// Whether the task's runner still holds its lock (it runs).
bool running(const Task& t) {
  UniqueFd lock(::open((t.base + ".lock").c_str(), O_RDONLY | O_CLOEXEC));
  if (!lock) return t.state.value("state", "") == "starting";
  return ::flock(lock.get(), LOCK_SH | LOCK_NB) != 0;
}

void print_output(const Task& t) {
  auto out = workspace::fs::read_file_nofollow(t.base + ".out", kMaxTaskOutput + 4096);
  if (!out) return;
  const std::string shown = ::isatty(STDOUT_FILENO) == 1 ? printable(*out) : *out;
  std::fwrite(shown.data(), 1, shown.size(), stdout);
}

std::string line_of(const nlohmann::json& s) {
  std::string argv;
  for (const auto& a : s.value("argv", nlohmann::json::array()))
    argv += (argv.empty() ? "" : " ") + a.get<std::string>();
  std::string status = s.value("state", "");
  if (s.contains("exit_status")) status += " (" + std::to_string(s.value("exit_status", 0)) + ")";
  return s.value("id", "") + "  " + status + "  " + s.value("started", "") + "  " + printable(argv);
}

// One task as docs/schemas/tasks-list.schema.json has it.
nlohmann::json task_json(const std::string& session, const nlohmann::json& s) {
  auto field = [&s](const char* key) { return s.contains(key) ? s[key] : nlohmann::json(nullptr); };
  return {{"id", s.value("id", "")},
          {"session", session},
          {"state", s.value("state", "")},
          {"argv", field("argv")},
          {"started", field("started")},
          {"ended", field("ended")},
          {"exit_status", field("exit_status")},
          {"dropped_bytes", field("dropped_bytes")}};
}

int list(const std::string& session, bool json) {
  auto sessions = workspace::list();
  if (!sessions) return fail(sessions.error());
  nlohmann::json all = nlohmann::json::array();
  for (const auto& info : *sessions) {
    if (!session.empty() && info.session.id != session) continue;
    for (int n = 1; n <= kMaxTasks; ++n) {
      auto t = find_task(info.session.id + "-" + std::string(n < 10 ? "0" : "") + std::to_string(n));
      if (!t) break;
      if (t->state.value("state", "") == "running" && !running(*t))
        t->state["state"] = "ended without its record";
      if (json)
        all.push_back(task_json(info.session.id, t->state));
      else
        std::printf("%s\n", line_of(t->state).c_str());
    }
  }
  if (json) std::printf("%s\n", all.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  return 0;
}

int show(const std::string& id) {
  auto t = find_task(id);
  if (!t) return fail(t.error());
  std::fprintf(stderr, "chock: %s\n", line_of(t->state).c_str());
  print_output(*t);
  return 0;
}

int wait(const std::string& id, double timeout_s) {
  auto t = find_task(id);
  if (!t) return fail(t.error());
  const auto until =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(static_cast<long>(timeout_s * 1000));
  while (running(*t)) {
    if (timeout_s > 0 && std::chrono::steady_clock::now() >= until) {
      std::fprintf(stderr, "chock: tasks: %s still runs after %g s\n", id.c_str(), timeout_s);
      return 124;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  t = find_task(id);
  if (!t) return fail(t.error());
  print_output(*t);
  std::fprintf(stderr, "chock: %s\n", line_of(t->state).c_str());
  return t->state.value("exit_status", 125);
}

int cancel(const std::string& id) {
  auto t = find_task(id);
  if (!t) return fail(t.error());
  if (!running(*t)) {
    std::fprintf(stderr, "chock: tasks: %s is not running (%s)\n", id.c_str(),
                 t->state.value("state", "").c_str());
    return 1;
  }
  // Pinned: the runner's pidfd is opened first, then its lock must still be
  // held, so the pidfd is the runner's and not a process that took its
  // number after it ended. Its SIGTERM ends the call's whole tree.
  const pid_t pid = t->state.value("pid", 0);
  UniqueFd runner(pid > 0 ? sys::pidfd_open(pid, 0) : -1);
  if (!runner || !running(*t)) {
    std::fprintf(stderr, "chock: tasks: %s is not running (it has just ended)\n", id.c_str());
    return 1;
  }
  if (sys::pidfd_send_signal(runner.get(), SIGTERM) != 0)
    return fail(sys_error("signal the task's runner", id));
  for (int i = 0; i < 500 && running(*t); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  std::printf("chock: task %s cancelled\n", id.c_str());
  return 0;
}

}  // namespace

void add_tasks_command(CLI::App& app, Action& action) {
  auto id = std::make_shared<std::string>();
  auto session = std::make_shared<std::string>();
  auto timeout = std::make_shared<double>(0);
  CLI::App* cmd = app.add_subcommand("tasks", "The background calls of chock run --background");
  cmd->require_subcommand(1);
  CLI::App* l = cmd->add_subcommand("list", "Every task, or a session's");
  l->add_option("--session", *session, "Only this session's tasks");
  auto json = std::make_shared<bool>(false);
  l->add_flag("--json", *json, "Print the tasks as JSON (docs/schemas/tasks-list.schema.json)");
  l->callback([session, json, &action] { action = [session, json] { return list(*session, *json); }; });
  CLI::App* s = cmd->add_subcommand("show", "A task's state on stderr and its output so far on stdout");
  s->add_option("id", *id, "SESSION-NN")->required();
  s->callback([id, &action] { action = [id] { return show(*id); }; });
  CLI::App* w = cmd->add_subcommand("wait", "Wait for a task to end; its output, and its exit status");
  w->add_option("id", *id, "SESSION-NN")->required();
  w->add_option("--timeout", *timeout, "Give up after SECONDS (exit 124)")->check(kPositiveSeconds);
  w->callback([id, timeout, &action] { action = [id, timeout] { return wait(*id, *timeout); }; });
  CLI::App* c = cmd->add_subcommand("cancel", "End a task and every process of its call");
  c->add_option("id", *id, "SESSION-NN")->required();
  c->callback([id, &action] { action = [id] { return cancel(*id); }; });
}

}  // namespace chock::cli
