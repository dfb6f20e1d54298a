// `chock mcp`: Chock as an agent's tools over MCP (stdio). One process
// serves one session, requests at once; every tool call is a sandboxed call
// of its own, run by the session engine in this process (server_impl.hpp),
// or (memory, fetch, apply) a `chock` command (self_call.hpp). Protocol
// messages only on `out`.
#pragma once

#include <string>

#include "config/layers.hpp"
#include "mcp/jsonrpc.hpp"

namespace chock::mcp {

struct ServerOptions {
  std::string chock;    // the chock binary the memory, fetch and apply tools run
  std::string project;  // the project's top level
  std::string session;  // --session; empty: made by the first call that needs a workspace
  config::LayerOptions layers;
};

// Serves until `in` ends; 0.
int serve(const ServerOptions& options, int in, int out);

// The tools, as tools/list gives them (before the policy removes any).
[[nodiscard]] Json tool_definitions();
// tool.<name>, the policy row that can remove one of Chock's tools.
[[nodiscard]] std::string tool_action(const std::string& name);

}  // namespace chock::mcp
