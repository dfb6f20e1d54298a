// How a call mounts its session's overlays, beside its other calls.
//
// A session that keeps its overlays between calls (a holder, in the
// session's directory, keeps one mount of them: overlay_holder.hpp) has one
// mount for all its calls: a call attaches clones of it, holding the mounts
// lock shared, and no new mount may replace it while any call uses it. A
// call that finds none makes it, holding the lock alone, in the session's
// own work directories, and shares the lock once the holder keeps it. Where
// another call runs on a mount no holder keeps (a session whose overlay is
// not kept between calls), this call waits for it: two mounts of one upper
// layer would not see each other's changes. A task mounts beside the calls
// (in work directories of its own), as it always has.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "chock/config.hpp"
#include "chock/workspace.hpp"
#include "util/fd.hpp"

namespace chock::session {

// How long a call waits for the session's mount before it says so: the
// last call's teardown takes milliseconds, and a call that makes the
// session's mount shares it once the holder has it.
inline constexpr std::chrono::seconds kMountsWaitSaid{2};

struct CallMounts {
  workspace::MountsHold hold;    // kept until the call's sandbox is gone (its teardown's waiter)
  std::vector<UniqueFd> clones;  // attached in place of new mounts; until spawn returns
};

// Decides for `config`'s overlays (as add_to_config made them); `task`: a
// background call, which mounts beside and holds nothing.
[[nodiscard]] Expected<CallMounts> choose_mounts(const workspace::Session& session, Config& config, bool task,
                                                 const std::function<void(const std::string&)>& say);

}  // namespace chock::session
