// Inside a session::Call (chock/session.hpp): what the engine keeps for one
// call, and the seams a background call's runner (tasks.cpp) uses.
#pragma once

#include <atomic>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

#include "chock/sandbox.hpp"
#include "chock/session.hpp"
#include "chock/workspace.hpp"
#include "net/publish.hpp"
#include "util/fd.hpp"

namespace chock::session {

// A background call's runner runs the call as the task it is: its overlays
// beside the session's calls, its output into the task's file, its end in
// the task's record.
struct AsTask {
  std::function<Expected<void>(Config& config)> prepare;  // before the spawn
  // The program runs: the session lock goes; the call's published ports
  // (none yet, perhaps) are served by `publisher` (null: the call has none, --net host).
  std::function<void(workspace::SessionLock& lock, net::Publisher* publisher)> started;
  std::function<void()> drained;                    // its processes have ended: the output is all in
  std::function<void(const Result& result)> ended;  // after the call: the record
};

}  // namespace chock::session

namespace chock {

struct session::Call::Impl {
  Request request;
  Hooks hooks;
  std::optional<session::AsTask> as_task;
  std::optional<Begun> prepared;  // Call::use
  // A task's runner: the ports its caller published, listening already.
  std::vector<net::Published> published;
  UniqueFd cancel_event;  // an eventfd cancel() writes
  UniqueFd cancel_poll;   // an epoll over it and Request::cancel_fd: what Child::wait watches
  std::atomic<bool> cancelled{false};
  std::mutex mutex;
  std::thread thread;
  std::optional<Expected<Outcome>> outcome;  // start()'s, once its thread has it

  Impl(Request r, Hooks h);
  void say(const std::string& line) const {
    if (hooks.say) hooks.say(line);
  }
  // cancel() was called, or Request::cancel_fd is readable.
  [[nodiscard]] bool is_cancelled() const;
  // The call, from the request to its end.
  Expected<Outcome> run();
};

}  // namespace chock
