// Background calls: `chock run --background` starts a call and returns its
// task id at once; a runner process of Chock's (outside the call) writes the
// call's output to <session>/tasks/task-NN.out (at most 8 MiB, what passed
// the cap said) and its end to task-NN.json, holding task-NN.lock while it
// runs. Every call of the session sees the tasks read-only at
// /run/chock/tasks, so an agent reads a task's output and cannot edit it.
#pragma once

#include <string>

#include "chock/config.hpp"
#include "chock/workspace.hpp"
#include "cli/session_events.hpp"

namespace chock::cli {

inline constexpr int kMaxTasks = 32;
inline constexpr std::uint64_t kMaxTaskOutput = 8ULL << 20;

// Starts the task and returns its id ("<session>-NN"); the call runs in a
// runner process of its own, which lets go of the session's lock once the
// call has started.
Expected<std::string> start_task(const workspace::Session& session, Config config,
                                 workspace::SessionLock& lock, SessionEvents& events);

}  // namespace chock::cli
