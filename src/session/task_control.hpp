// A running task's door for the person: `chock tasks publish TASK PORT`
// publishes a port of a task that is running already. The command decides
// the policy row and binds the host's loopback itself (so a port taken, or a
// refusal, is said at once, in its own terminal), then hands the listeners
// to the task's runner, which serves them as it serves those it started with.
//
// The door is a Unix socket beside the task's lock, in the session's
// directory, which no call sees; the runner answers only a peer of its own
// uid (or root), and only while the call runs: it closes before the
// runner's published ports do.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "chock/error.hpp"
#include "net/publish.hpp"
#include "util/fd.hpp"

namespace chock::session {

// The door's path for the task whose lock is `lock` (<session>/task-NN.lock).
[[nodiscard]] std::string control_path(const std::string& lock);

// The runner's side: answers each request by `serve` (the port listening
// already), until stop() or destruction.
class TaskControl {
 public:
  using Serve = std::function<Expected<void>(net::Published port)>;
  [[nodiscard]] static Expected<std::unique_ptr<TaskControl>> open(const std::string& path, Serve serve);
  TaskControl(const TaskControl&) = delete;
  TaskControl& operator=(const TaskControl&) = delete;
  ~TaskControl();
  // Closes the door (its file goes) and joins its thread; idempotent.
  void stop() noexcept;

 private:
  TaskControl() = default;
  void serve_loop();
  void answer(int client);
  std::string path_;
  Serve serve_;
  UniqueFd listener_;
  UniqueFd stop_;  // eventfd
  std::thread loop_;
};

// The command's side: hands `port` (listening) to the runner at `path`;
// the runner's refusal, or that no runner answers, is an Error.
[[nodiscard]] Expected<void> hand_to_runner(const std::string& path, const net::Published& port);

}  // namespace chock::session
