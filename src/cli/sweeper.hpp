// The trash's sweeper: after a removal, `chock workspace sweep` deletes what
// the removal renamed into the trash, in a process of its own (a new
// session, stdio on /dev/null, niced), so the person does not wait.
// It also removes the shared bases no session has used for a week.
#pragma once

#include <CLI/CLI.hpp>

#include "cli/command.hpp"

namespace chock::cli {

// Starts the sweeper (a spawn of chock, not waited for) and returns. A
// sweeper that cannot start is said once; what is in the trash waits for
// the next one.
void start_sweeper();

// The hidden `chock workspace sweep` under `workspace`.
void add_sweep_command(CLI::App& workspace, Action& action);

}  // namespace chock::cli
