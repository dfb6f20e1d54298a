// The subcommands of `chock`. Each file under src/cli/ adds one to the app
// and sets `action` to what runs once the command line has parsed.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

namespace chock::cli {

using Action = std::function<int()>;

// Exit status for "Chock itself could not do what was asked" (the command
// never ran), as env(1) and timeout(1) use it.
inline constexpr int kExitChockFailed = 125;

void add_sandbox_command(CLI::App& app, Action& action);

}  // namespace chock::cli
