// chock tasks list [--session ID] | show ID | wait ID [--timeout S] | cancel ID
// | publish ID [HOST_PORT:]CALL_PORT: the background calls of `chock run
// --background` (tasks.hpp). A task's id is "<session>-NN".
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
#include "cli/layer_flags.hpp"
#include "session/tasks.hpp"
#include "util/escape.hpp"

namespace chock::cli {

namespace {

using session::Task;

int fail(const Error& e) {
  std::fprintf(stderr, "chock: tasks: %s\n", e.message().c_str());
  return exit_status_for(e, 2);
}

void print_output(const Task& t) {
  auto out = session::task_output(t);
  if (!out) return;
  const std::string shown = ::isatty(STDOUT_FILENO) == 1 ? printable(*out) : *out;
  std::fwrite(shown.data(), 1, shown.size(), stdout);
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
          {"dropped_bytes", field("dropped_bytes")},
          // Open only while the task runs; the ports it had, after.
          {"published", s.value("published", nlohmann::json::array())}};
}

int list(const std::string& session, bool json) {
  auto sessions = workspace::list();
  if (!sessions) return fail(sessions.error());
  nlohmann::json all = nlohmann::json::array();
  for (const auto& info : *sessions) {
    if (!session.empty() && info.session.id != session) continue;
    for (int n = 1; n <= session::kMaxTasks; ++n) {
      auto t = session::find_task(info.session.id + "-" + std::string(n < 10 ? "0" : "") + std::to_string(n));
      if (!t) break;
      if (t->state.value("state", "") == "running" && !session::task_running(*t))
        t->state["state"] = "ended without its record";
      if (json)
        all.push_back(task_json(info.session.id, t->state));
      else
        std::printf("%s\n", session::task_line(t->state).c_str());
    }
  }
  if (json) std::printf("%s\n", all.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  return 0;
}

int show(const std::string& id) {
  auto t = session::find_task(id);
  if (!t) return fail(t.error());
  std::fprintf(stderr, "chock: %s\n", session::task_line(t->state).c_str());
  print_output(*t);
  return 0;
}

int wait(const std::string& id, double timeout_s) {
  auto t = session::find_task(id);
  if (!t) return fail(t.error());
  const auto until =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(static_cast<long>(timeout_s * 1000));
  while (session::task_running(*t)) {
    if (timeout_s > 0 && std::chrono::steady_clock::now() >= until) {
      std::fprintf(stderr, "chock: tasks: %s still runs after %g s\n", id.c_str(), timeout_s);
      return 124;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  t = session::find_task(id);
  if (!t) return fail(t.error());
  print_output(*t);
  std::fprintf(stderr, "chock: %s\n", session::task_line(t->state).c_str());
  return t->state.value("exit_status", 125);
}

int cancel(const std::string& id) {
  auto t = session::find_task(id);
  if (!t) return fail(t.error());
  std::string why;
  auto cancelled = session::cancel_task(*t, &why);
  if (!cancelled) return fail(cancelled.error());
  if (!*cancelled) {
    std::fprintf(stderr, "chock: tasks: %s %s\n", id.c_str(), why.c_str());
    return 1;
  }
  std::printf("chock: task %s cancelled\n", id.c_str());
  return 0;
}

int publish(const std::string& id, const std::string& spec, const config::LayerOptions& options) {
  auto t = session::find_task(id);
  if (!t) return fail(t.error());
  auto port = session::publish_to_task(*t, spec, options, person_ask());
  if (!port) return fail(port.error());
  std::printf("http://127.0.0.1:%u/\n", static_cast<unsigned>(port->host_port));
  std::fprintf(stderr,
               "chock: published http://127.0.0.1:%u/ -> task %s's 127.0.0.1:%u (the host's loopback only; "
               "it closes when the task ends)\n",
               static_cast<unsigned>(port->host_port), id.c_str(), static_cast<unsigned>(port->call_port));
  return 0;
}

}  // namespace

void add_tasks_command(Command app, Action& action) {
  auto id = std::make_shared<std::string>();
  auto session = std::make_shared<std::string>();
  auto timeout = std::make_shared<double>(0);
  Command cmd = app.add_subcommand("tasks", "The background calls of chock run --background");
  cmd.require_subcommand(1);
  Command l = cmd.add_subcommand("list", "Every task, or a session's");
  l.add_option("--session", *session, "Only this session's tasks");
  auto json = std::make_shared<bool>(false);
  l.add_flag("--json", *json, "Print the tasks as JSON (docs/schemas/tasks-list.schema.json)");
  l.callback([session, json, &action] { action = [session, json] { return list(*session, *json); }; });
  Command s = cmd.add_subcommand("show", "A task's state on stderr and its output so far on stdout");
  s.add_option("id", *id, "SESSION-NN").required();
  s.callback([id, &action] { action = [id] { return show(*id); }; });
  Command w = cmd.add_subcommand("wait", "Wait for a task to end; its output, and its exit status");
  w.add_option("id", *id, "SESSION-NN").required();
  w.add_option("--timeout", *timeout, "Give up after SECONDS (exit 124)").check(Check::positive_seconds());
  w.callback([id, timeout, &action] { action = [id, timeout] { return wait(*id, *timeout); }; });
  Command c = cmd.add_subcommand("cancel", "End a task and every process of its call");
  c.add_option("id", *id, "SESSION-NN").required();
  c.callback([id, &action] { action = [id] { return cancel(*id); }; });
  auto spec = std::make_shared<std::string>();
  auto layers = std::make_shared<config::LayerOptions>();
  Command p = cmd.add_subcommand("publish", "Publish a port of a running task on the host's loopback");
  p.add_option("id", *id, "SESSION-NN").required();
  p.add_option("port", *spec, "[HOST_PORT:]CALL_PORT").required();
  add_layer_flags(p, *layers);
  p.callback(
      [id, spec, layers, &action] { action = [id, spec, layers] { return publish(*id, *spec, *layers); }; });
}

}  // namespace chock::cli
