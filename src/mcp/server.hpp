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
  std::string chock;         // the chock binary the memory, fetch and apply tools run
  std::string project;       // the project's top level
  std::string session;       // --session; empty: made by the first call that needs a workspace
  bool allow_dirty = false;  // the session made starts from the project's uncommitted work too
  config::LayerOptions layers;
  // Neither --project nor --session: when the client declares `roots`, the
  // first root that is a directory Chock can open is the project instead.
  bool project_from_roots = false;
  // Set: why the server cannot serve (as `chock: mcp: ...` says it). It
  // still answers initialize and ping, so that the client hears this
  // reason as the error of every other request rather than a closed
  // connection; a root the client gives may still set it right.
  std::string failure;
};

// Serves until `in` ends: 0, or 2 when it could never serve (`failure`).
int serve(const ServerOptions& options, int in, int out);
// A server that can only say why it cannot serve (`chock mcp wrap` whose
// project or chock.zon is wrong): initialize answered, every other request
// this error, the reason on stderr. 125, as a wrapped server's failed start.
int serve_failure(const std::string& reason, int in, int out);

// The tools, as tools/list gives them (before the policy removes any).
[[nodiscard]] Json tool_definitions();
// tool.<name>, the policy row that can remove one of Chock's tools.
[[nodiscard]] std::string tool_action(const std::string& name);

}  // namespace chock::mcp
