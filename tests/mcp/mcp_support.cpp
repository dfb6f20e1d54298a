#include "mcp_support.hpp"

#include <sys/stat.h>

#include <cstdlib>
#include <sstream>

namespace chock::test::mcp {

std::string clients_dir() {
  return CHOCK_MCP_CLIENTS_DIR;
}

std::string missing_clients() {
  Output v = run_process({"node", "--version"});
  if (v.status != 0) return "node is not installed (scripts/install-deps installs it)";
  if (std::atoi(v.out.c_str() + (v.out.starts_with("v") ? 1 : 0)) < 20)
    return "the MCP Inspector 1.0 needs Node.js 20 or later; this machine has " + v.out;
  for (const char* package : {"sdk", "inspector", "server-filesystem", "server-everything"})
    if (!exists(clients_dir() + "/node_modules/@modelcontextprotocol/" + package + "/package.json"))
      return std::string(
                 "the MCP client packages are not installed in tests/mcp/clients (scripts/install-deps "
                 "runs npm ci there); missing @modelcontextprotocol/") +
             package;
  return "";
}

RunOptions fixture_env(const Fixture& f) {
  RunOptions o;
  o.cwd = f.project();
  o.env = {{"XDG_DATA_HOME", f.data()},
           {"XDG_STATE_HOME", f.state()},
           {"XDG_CONFIG_HOME", f.config()},
           {"XDG_CACHE_HOME", f.cache()}};
  o.timeout = std::chrono::minutes(5);
  return o;
}

Json chock_mcp_plan(const Fixture& f, const std::vector<std::string>& args, const std::vector<Json>& steps) {
  // A vector, not a Json: a braced list of one Json would be that value, not an array of it.
  Json a = Json::array({"mcp"});
  for (const auto& x : args) a.push_back(x);
  Json s = Json::array();
  for (const auto& x : steps) s.push_back(x);
  return Json{{"command", chock_binary()}, {"args", a}, {"cwd", f.project()}, {"steps", s}};
}

std::vector<Json> sdk(const Fixture& f, const Json& plan, Output* raw, int* unknown_responses) {
  TempDir dir("chock-mcp-plan");
  write_file(dir / "plan.json", plan.dump());
  Output o = run_process({"node", clients_dir() + "/sdk_client.mjs", dir / "plan.json"}, fixture_env(f));
  if (raw != nullptr) *raw = o;
  std::vector<Json> steps;
  std::istringstream lines(o.out);
  for (std::string line; std::getline(lines, line);) steps.push_back(Json::parse(line, nullptr, false));
  // The client's own last line: answers to requests it had given up on.
  if (!steps.empty() && steps.back().is_object() && steps.back().contains("unknown_responses")) {
    if (unknown_responses != nullptr) *unknown_responses = steps.back()["unknown_responses"].get<int>();
    steps.pop_back();
  }
  return steps;
}

Json inspector(const Fixture& f, const std::vector<std::string>& mcp_args,
               const std::vector<std::string>& inspector_args, Output* raw) {
  std::vector<std::string> argv{
      "node", clients_dir() + "/node_modules/@modelcontextprotocol/inspector/cli/build/cli.js", "--cli",
      chock_binary(), "mcp"};
  argv.insert(argv.end(), mcp_args.begin(), mcp_args.end());
  argv.insert(argv.end(), inspector_args.begin(), inspector_args.end());
  Output o = run_process(argv, fixture_env(f));
  if (raw != nullptr) *raw = o;
  return Json::parse(o.out, nullptr, false);
}

std::string text_of(const Json& result) {
  std::string all;
  if (result.is_object() && result.contains("content"))
    for (const auto& c : result["content"]) all += c.value("text", "") + "\n";
  return all;
}

Json call(const std::string& name, const Json& arguments) {
  return Json{{"call", name}, {"arguments", arguments}};
}

std::vector<Json> raw_mcp(const Fixture& f, const std::string& input) {
  RunOptions o = fixture_env(f);
  o.stdin_data = input;
  Output out = run_process({chock_binary(), "mcp"}, o);
  std::vector<Json> lines;
  std::istringstream in(out.out);
  for (std::string line; std::getline(in, line);) lines.push_back(Json::parse(line, nullptr, false));
  return lines;
}

Raw raw_client(const Fixture& f, const std::vector<std::string>& args, const std::vector<std::string>& lines,
               int answers, const std::string& cwd) {
  Json a = Json::array();
  for (const auto& x : args) a.push_back(x);
  Json l = Json::array();
  for (const auto& x : lines) l.push_back(x);
  const Json plan{{"command", chock_binary()},
                  {"args", a},
                  {"cwd", cwd.empty() ? f.project() : cwd},
                  {"lines", l},
                  {"answers", answers},
                  {"timeout_ms", 120000}};
  TempDir dir("chock-mcp-raw");
  write_file(dir / "plan.json", plan.dump());
  Raw r;
  r.process = run_process({"node", clients_dir() + "/raw_client.mjs", dir / "plan.json"}, fixture_env(f));
  const Json out = Json::parse(r.process.out, nullptr, false);
  if (!out.is_object()) return r;
  for (const auto& line : out["lines"]) {
    const bool notification = line.is_object() && line.contains("method") && !line.contains("id");
    (notification ? r.notifications : r.lines).push_back(line);
  }
  r.stderr_text = out.value("stderr", "");
  r.status = out["status"];
  r.timed_out = out.value("timed_out", false);
  return r;
}

std::string initialize_line(int id, const std::string& version, const Json& capabilities) {
  return Json{{"jsonrpc", "2.0"},
              {"id", id},
              {"method", "initialize"},
              {"params",
               {{"protocolVersion", version},
                {"capabilities", capabilities},
                {"clientInfo", {{"name", "chock-test-raw"}, {"version", "1"}}}}}}
      .dump();
}

Json answer_to(const std::vector<Json>& lines, const Json& id) {
  for (const auto& line : lines) {
    if (line.is_object() && line.contains("id") && line["id"] == id && !line.contains("method")) return line;
    if (line.is_array())
      for (const auto& item : line)
        if (item.is_object() && item.contains("id") && item["id"] == id) return item;
  }
  return nullptr;
}

void bind_clients(const Fixture& f) {
  ::mkdir((f.config() + "/chock").c_str(), 0700);
  write_file(f.config() + "/chock/config.zon",
             ".{ .toolchain_paths = .{ \"" + clients_dir() + "/node_modules\" } }\n");
}

const char* tiny_server_js() {
  return R"js(#!/usr/bin/env node
const fs = require("fs");
const memory = require("path").join(__dirname, "memory.jsonl");
const rl = require("readline").createInterface({ input: process.stdin });
rl.on("line", (line) => {
  const m = JSON.parse(line);
  if (m.id === undefined) return;
  let result;
  if (m.method === "initialize")
    result = { protocolVersion: m.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: "tiny", version: "1" } };
  else if (m.method === "tools/list")
    result = { tools: ["where", "remember", "recall"].map((name) => ({ name, inputSchema: { type: "object" } })) };
  else if (m.method === "tools/call") {
    let text = "tiny, at " + __filename;
    if (m.params.name === "remember") fs.appendFileSync(memory, JSON.stringify(m.params.arguments.text) + "\n");
    if (m.params.name === "recall") text = fs.existsSync(memory) ? fs.readFileSync(memory, "utf8") : "nothing";
    result = { content: [{ type: "text", text }] };
  }
  const answer = result ? { jsonrpc: "2.0", id: m.id, result } : { jsonrpc: "2.0", id: m.id, error: { code: -32601, message: "no" } };
  process.stdout.write(JSON.stringify(answer) + "\n");
});
)js";
}

}  // namespace chock::test::mcp
