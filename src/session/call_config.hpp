// A call's sandbox Config, built from its request, the configuration layers
// and its session: the environment, the workspace's mounts, the toolchain,
// devices, limits and the deadline, and what Chock says about each.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "chock/config.hpp"
#include "chock/session.hpp"
#include "chock/workspace.hpp"
#include "config/layers.hpp"
#include "log/events.hpp"
#include "policy/policy.hpp"
#include "session/sentinels.hpp"
#include "toolchain/nix_shell.hpp"

namespace chock::session {

// What one call is decided by, read before its session is opened.
struct CallContext {
  config::Layers layers;
  std::string root;   // the project's top level
  std::string start;  // where the call starts (a host path in the project)
  Network network = Network::none;
  policy::Answer jit;  // sandbox.jit, read before the call: nobody is asked
  std::optional<toolchain::DevShell> shell;
};

struct Built {
  Config config;
  std::string deadline;  // which deadline applies, in words
  // A filtered call's credentials stood for by sentinels in its environment:
  // what the relay puts back on the wire to their hosts.
  std::vector<StoodFor> stood_for;
};

using Say = std::function<void(const std::string& line)>;

// --cwd: a directory of the project, relative to its top or absolute below
// it; only its name is checked here (the call's own tree decides the rest).
[[nodiscard]] Expected<std::string> start_inside(const std::string& root, const std::string& cwd);

// The call's limits, as its Config has them.
[[nodiscard]] Limits call_limits(const config::EffectiveLimits& limits);

// The Config of a call of `session`; devices and the sandbox's opening go
// to the log, its lines to `say`.
[[nodiscard]] Expected<Built> build_config(const Request& request, const CallContext& context,
                                           const workspace::Opened& opened, workspace::Mounter mounter,
                                           log::SessionEvents& events, const Say& say);

// The disk guard of a call whose workspace is in `dir`: what it may write
// (.limits.disk) and the floors its file system keeps. Under the room a
// call needs to start, it is refused.
[[nodiscard]] Expected<DiskGuard> disk_guard(const std::string& dir, std::uint64_t cap);

// The line a new git session says first when the project holds directories
// of workspace::kCarriable that git ignores and the session does not carry:
// which, and the exact .carry row of chock.zon that carries them (the
// project's own rows kept).
[[nodiscard]] std::string uncarried_line(const std::vector<std::string>& uncarried,
                                         const config::ProjectFile& project);

// The session log's fields of a policy answer.
[[nodiscard]] nlohmann::json rule_json(const policy::Answer& answer);

}  // namespace chock::session
