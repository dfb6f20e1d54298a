// `chock mcp wrap NAME -- CMD`: a third-party MCP server inside a sandbox
// (a call of the session engine: a session of one call), in a session's
// workspace, with Chock between it and the client. The relay
// reads every message: tools the policy denies (mcp.<NAME>.tool.<tool>) are
// taken out of tools/list answers and refused in tools/call; everything else
// passes as it came. The server's network is none unless
// mcp.<NAME>.network = allow (then filtered); a net.connect row of its that
// asks is asked of the person through the client (questions.hpp) when the
// client declared elicitation, and refused otherwise.
//
// Its session: a new one of one call, removed at the end of the run when it
// left no work (no commit, changed path or, in a git session, uncommitted
// change: a server never commits), so sessions do not pile up; `keep`
// keeps a new one, and `session` continues one, so that what the server
// keeps in its workspace (an index, a memory graph) lasts across its runs.
// When the run ends, the client is told (notifications/message, logger
// "chock") the session, what it holds and how to take that back.
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
  std::string session;       // continue this session; empty: a new one
  bool keep = false;         // the new session lasts, work or none
  bool allow_dirty = false;  // a new git session starts from the uncommitted work too
  int cancel_fd = -1;        // readable: end the server (the CLI's SIGTERM, SIGINT, SIGHUP); borrowed
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

// The relay's own lines to the client: notifications/message (logger
// "chock") at or above the level the client set with logging/setLevel
// (info until then). A server that declared no `logging` capability gets
// it declared in its initialize answer, and the relay answers the client's
// logging/setLevel itself; otherwise that request goes to the server, and
// the relay reads the level from it too.
class RelayLogging {
 public:
  // A message from the client: the answer to give it instead of passing it
  // on (logging/setLevel, where the relay declared logging), else nullopt.
  std::optional<Json> from_client(const Message& m);
  // A message from the server: the message to pass on in its place (an
  // initialize answer with `logging` declared), else nullopt.
  std::optional<Json> from_server(const Message& m);
  // The notification of `line` at `level`, or nullopt below the client's level.
  [[nodiscard]] std::optional<Json> message(const std::string& level, const std::string& line) const;

 private:
  std::vector<std::string> initializing_;  // ids (dumped) of the client's initialize requests in flight
  bool declared_ = false;                  // the relay declared logging for the server
  int threshold_ = 1;                      // "info"
};

}  // namespace chock::mcp
