// A call's published ports (Request::publish): decided by the policy table's
// net.publish.<call port> row, bound on the host's loopback by the call that
// was asked (so a port taken is a refusal before anything starts), and
// handed to a background call's runner as descriptors; the relay runs for as
// long as the call's program does (net/publish.hpp).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "chock/session.hpp"
#include "net/publish.hpp"
#include "policy/policy.hpp"
#include "session/call_config.hpp"

namespace chock::session {

// Each "[HOST_PORT:]CALL_PORT" (Request::publish), decided and listening;
// an Error names the spec, the rule that refused it, or the port taken.
[[nodiscard]] Expected<std::vector<net::Published>> open_published(const std::vector<std::string>& specs,
                                                                   Network network,
                                                                   const policy::Table& table,
                                                                   const Hooks::Ask& ask);

// {"url", "host_port", "call_port"}: a port as `chock tasks list` shows it.
[[nodiscard]] nlohmann::json published_entry(const net::Published& port);
// Every port's entry.
[[nodiscard]] nlohmann::json published_json(const std::vector<net::Published>& ports);

}  // namespace chock::session
