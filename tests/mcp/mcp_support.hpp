// The MCP tests drive Chock with real MCP clients nobody here wrote: the
// official TypeScript SDK (clients/sdk_client.mjs) and the MCP Inspector's
// CLI mode, installed from the npm registry by scripts/install-deps.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support.hpp"

namespace chock::test::mcp {

using Json = nlohmann::json;
using ws::describe;
using ws::Fixture;

// Why the clients cannot run on this machine, or "" when they can.
std::string missing_clients();
#define SKIP_WITHOUT_MCP_CLIENTS() \
  if (const std::string why = ::chock::test::mcp::missing_clients(); !why.empty()) GTEST_SKIP() << why

std::string clients_dir();
// The fixture's data, state, config and cache directories, as chock reads them.
RunOptions fixture_env(const Fixture& f);
// {"command": chock, "args": ["mcp", ARGS...], "cwd": project, "steps": steps}
Json chock_mcp_plan(const Fixture& f, const std::vector<std::string>& args, const std::vector<Json>& steps);
// Runs the SDK client on `plan`: one JSON value a step. `raw` gets what it printed;
// `unknown_responses` how many answers came for requests the client had given up on.
std::vector<Json> sdk(const Fixture& f, const Json& plan, Output* raw = nullptr,
                      int* unknown_responses = nullptr);
// `mcp-inspector --cli chock mcp MCP_ARGS... INSPECTOR_ARGS...`: its JSON answer.
Json inspector(const Fixture& f, const std::vector<std::string>& mcp_args,
               const std::vector<std::string>& inspector_args, Output* raw = nullptr);
// The text of a tool result's content, joined.
std::string text_of(const Json& result);
// {"call": NAME, "arguments": ARGS}
Json call(const std::string& name, const Json& arguments = Json::object());
// The raw lines `chock mcp` answers `input` with.
std::vector<Json> raw_mcp(const Fixture& f, const std::string& input);
// clients/raw_client.mjs: `chock ARGS...` (in `cwd`, default the project) is
// sent `lines` as they are; its lines (parsed), stderr and exit status once
// `answers` lines that are not notifications came and its input was closed.
struct Raw {
  std::vector<Json> lines;  // what is not a notification, in order
  std::vector<Json> notifications;
  std::string stderr_text;
  Json status;
  bool timed_out = false;
  Output process;  // the client's own run, for describe()
};
Raw raw_client(const Fixture& f, const std::vector<std::string>& args, const std::vector<std::string>& lines,
               int answers, const std::string& cwd = "");
// {"jsonrpc":"2.0","id":ID,"method":"initialize",...} at `version`, as a line.
std::string initialize_line(int id, const std::string& version, const Json& capabilities = Json::object());
// The answer with this id among `lines` (a batch's answers looked into too), or null.
Json answer_to(const std::vector<Json>& lines, const Json& id);
// The operator file binds the clients' node_modules into calls (read-only, at its own path).
void bind_clients(const Fixture& f);
// A tiny MCP server in JavaScript with no dependency, as an npm package
// would install it (a `#!/usr/bin/env node` script). Like server-memory, it
// keeps what it is told beside its own code (memory.jsonl): its tools are
// `remember {text}` (appends), `recall` (reads, or "nothing") and `where`
// ("tiny, at" its path).
const char* tiny_server_js();

}  // namespace chock::test::mcp
