// The subcommands of `chock`. Each file under src/cli/ adds one to the app
// and sets `action` to what runs once the command line has parsed.
#pragma once

#include <functional>

#include "chock/error.hpp"
#include "cli/flags.hpp"

namespace chock::cli {

using Action = std::function<int()>;

// Exit status for "Chock itself could not do what was asked" (the command
// never ran), as env(1) and timeout(1) use it.
inline constexpr int kExitChockFailed = 125;

// The exit status of a command that failed with `e`: "no such session" is
// kExitChockFailed in every command, so a script tells it apart from a
// refusal; anything else is `otherwise`.
inline int exit_status_for(const Error& e, int otherwise) {
  return e.kind == Errc::no_such_session ? kExitChockFailed : otherwise;
}

void add_sandbox_command(Command app, Action& action);

// `chock run`: one tool call in the project's workspace (run_cmd.cpp).
void add_run_command(Command app, Action& action);
// `chock apply`: a session's commits onto the checked-out branch (apply_cmd.cpp).
void add_apply_command(Command app, Action& action);
// `chock workspace list|remove|clear|adopt` (workspace_cmd.cpp).
void add_workspace_command(Command app, Action& action);
// `chock policy [explain ACTION]` (policy_cmd.cpp).
void add_policy_command(Command app, Action& action);
// `chock sessions verify SESSION` (sessions_cmd.cpp).
void add_sessions_command(Command app, Action& action);
// `chock fetch URL`: fetch_url on the host side, every hop judged (fetch_cmd.cpp).
void add_fetch_command(Command app, Action& action);
// `chock doctor`: each layer tried on this machine, one row a layer (doctor_cmd.cpp).
void add_doctor_command(Command app, Action& action);

// cache_cmd.cpp
void add_cache_command(Command app, Action& action);
// toolchain_cmd.cpp: `toolchain allow|deny|status`
void add_toolchain_command(Command app, Action& action);

// credentials_cmd.cpp
void add_credentials_command(Command app, Action& action);

// memory_cmd.cpp: `memory`, and `memory-tool`, the fixed program of the
// memory tools' own sandboxed call
void add_memory_command(Command app, Action& action);
void add_memory_tool_command(Command app, Action& action);

// tasks_cmd.cpp
void add_tasks_command(Command app, Action& action);

// completion_cmd.cpp: `completion bash|zsh`
void add_completion_command(Command app, Action& action);
// main.cpp: every subcommand, as `chock --help` lists them
void add_every_command(Command app, Action& action);

// mcp_cmd.cpp: `mcp` (and `mcp wrap`)
void add_mcp_command(Command app, Action& action);

}  // namespace chock::cli
