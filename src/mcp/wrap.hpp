// `chock mcp wrap NAME -- CMD`: a third-party MCP server inside a sandbox
// (a call of the session engine: a session of one call), in a session's
// workspace, with Chock between it and the client. The relay
// reads every message: tools the policy denies (mcp.<NAME>.tool.<tool>) are
// taken out of tools/list answers and refused in tools/call; everything else
// passes as it came. The server's network is none unless
// mcp.<NAME>.network = allow (then filtered); a net.connect row of its that
// asks is asked of the person through the client (questions.hpp) when the
// client declared elicitation, and refused otherwise.
#pragma once

#include <string>
#include <vector>

#include "config/layers.hpp"
#include "mcp/jsonrpc.hpp"
#include "policy/policy.hpp"

namespace chock::mcp {

struct WrapOptions {
  std::string name;  // the server's name in the policy
  std::string project;
  std::vector<std::string> env;  // K=V for the server
  std::vector<std::string> argv;
  config::LayerOptions layers;
};

int wrap(const WrapOptions& options);

// The relay's reading of one message each way, apart from its descriptors
// (and so tested alone).
class ToolFilter {
 public:
  ToolFilter(std::string server, policy::Table table)
      : server_(std::move(server)), table_(std::move(table)) {}
  // A message from the client: the error to answer it with instead of
  // passing it on (a denied tools/call), else nullopt.
  std::optional<Json> from_client(const Message& m);
  // A message from the server: the message to pass on in its place (a
  // tools/list answer without the denied tools), else nullopt (as it came).
  std::optional<Json> from_server(const Message& m);
  [[nodiscard]] bool denied(const std::string& tool) const;

 private:
  std::string server_;
  policy::Table table_;
  std::vector<std::string> listing_;  // ids (dumped) of the client's tools/list requests in flight
};

}  // namespace chock::mcp
