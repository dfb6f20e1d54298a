// The end of a session of one call, and the sweeper that deletes what a
// removal let go.
#pragma once

#include <functional>
#include <string>

#include "chock/workspace.hpp"

namespace chock::session {

// Removes the session when its call left nothing to keep, else keeps it
// with a line that says what it holds and how to get it back. True: removed.
bool end_one_call(const workspace::Session& session, const std::function<void(const std::string&)>& say);

// Starts the trash's sweeper (chock-helper sweep: a session of its own,
// stdio on /dev/null, niced), not waited for. One that cannot start is
// said; what is in the trash waits for the next.
void start_sweeper(const std::function<void(const std::string&)>& say);

}  // namespace chock::session
