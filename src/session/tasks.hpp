// Background calls: `chock run --background` (and MCP's run_command with
// background) start a call and return its task id at once. The call runs in
// a runner of its own, `chock-helper task` (a companion program, never a
// fork of the caller), which writes the call's output to
// <session>/tasks/task-NN.out (at most 8 MiB, what passed the cap said) and
// its end to task-NN.json. Every call of the session sees the tasks
// read-only at /run/chock/tasks, so an agent reads a task's output and
// cannot edit it.
//
// What decides a task's state is nothing a call can open: the runner holds
// <session>/task-NN.lock (in the session's directory, which no call sees)
// while it runs, and the record names the runner by its pid and the time
// it started, so a signal reaches it and never a process that took its pid.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "chock/session.hpp"
#include "chock/workspace.hpp"
#include "config/layers.hpp"
#include "net/publish.hpp"

namespace chock::session {

inline constexpr int kMaxTasks = 32;
inline constexpr std::uint64_t kMaxTaskOutput = 8ULL << 20;

// Starts task NN of the session for `request` (its project the call's
// starting directory, its network decided) and returns its id
// ("<session>-NN") once the runner is on its way.
// Its published ports, listening already, are the runner's from descriptor 4 on.
[[nodiscard]] Expected<std::string> start_task(const workspace::Session& session, const Request& request,
                                               const std::vector<net::Published>& published);

// The runner's side: `chock-helper task SESSION NN`, the request as JSON on
// stdin, the task's lock (held) on descriptor 3 and the published ports'
// listeners from 4 on. Its exit status.
[[nodiscard]] int run_task(const std::string& session, int number);

struct Task {
  std::string id;
  std::string base;  // <session>/tasks/task-NN
  std::string lock;  // <session>/task-NN.lock
  nlohmann::json state;
};

// The task of an id as `start_task` gave it.
[[nodiscard]] Expected<Task> find_task(const std::string& id);
// Whether its runner still runs (holds its lock).
[[nodiscard]] bool task_running(const Task& task);
// Its output so far (at most kMaxTaskOutput and the line that says what passed it).
[[nodiscard]] Expected<std::string> task_output(const Task& task);
// "<id>  <state> (<exit status>)  <started>  <argv>", escaped: one line of `chock tasks list`.
[[nodiscard]] std::string task_line(const nlohmann::json& state);
// Ends the task's call (SIGTERM to its runner, pinned); false with a reason
// when it was not running.
[[nodiscard]] Expected<bool> cancel_task(const Task& task, std::string* why);

// `chock tasks publish ID [HOST_PORT:]CALL_PORT`: the port of a running task
// published, decided by the policy of the task's project (`options` name the
// bundle and the person's rows), listening here, then served by the task's
// runner for as long as the task runs. The ports, or an Error saying why not.
[[nodiscard]] Expected<net::PortSpec> publish_to_task(const Task& task, const std::string& spec,
                                                      config::LayerOptions options, const Hooks::Ask& ask);

}  // namespace chock::session
