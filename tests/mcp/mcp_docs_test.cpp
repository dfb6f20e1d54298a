// docs/agents.md works as written: its client configurations start Chock's
// server and a wrapped server, and its Inspector lines list and call tools.
// Only what this machine has in another place is put in its place: the
// chock binary of this build, the npm packages of tests/mcp/clients, the
// project's path.
#include <sys/stat.h>
#include <unistd.h>

#include <sstream>

#include "mcp_support.hpp"

namespace chock::test::mcp {
namespace {

struct Block {
  std::string info;  // json, toml, sh, zig
  std::string text;
};

std::vector<Block> fenced_blocks(const std::string& markdown) {
  std::vector<Block> blocks;
  std::istringstream in(markdown);
  std::optional<Block> open;
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("```")) {
      if (open) {
        blocks.push_back(*open);
        open.reset();
      } else {
        open = Block{line.substr(3), ""};
      }
    } else if (open) {
      open->text += line + "\n";
    }
  }
  return blocks;
}

const std::vector<Block>& agents_page() {
  static const std::vector<Block> blocks =
      fenced_blocks(read_file(std::string(CHOCK_DOCS_DIR) + "/agents.md"));
  return blocks;
}

// A server entry's command line with this machine's stand-ins.
std::vector<std::string> resolved(const Fixture& f, const std::string& command, const Json& args) {
  std::vector<std::string> argv{command == "chock" ? chock_binary() : command};
  for (const auto& a : args) {
    const std::string s = a;
    if (s == "mcp-server-filesystem") {
      argv.push_back("node");
      argv.push_back(clients_dir() + "/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
    } else {
      argv.push_back(s == "/path/to/project" ? f.project() : s);
    }
  }
  return argv;
}

Json plan_for(const Fixture& f, const std::vector<std::string>& argv, const std::vector<Json>& steps) {
  Json plan = chock_mcp_plan(f, {}, steps);
  plan["command"] = argv[0];
  plan["args"] = std::vector<std::string>(argv.begin() + 1, argv.end());
  return plan;
}

// {"command", "args"} of each [mcp_servers.NAME] table of a TOML block.
std::map<std::string, Json> toml_servers(const std::string& toml) {
  std::map<std::string, Json> servers;
  std::istringstream in(toml);
  std::string name;
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("[mcp_servers."))
      name = line.substr(13, line.size() - 14);
    else if (line.starts_with("command = "))
      servers[name]["command"] = Json::parse(line.substr(10));
    else if (line.starts_with("args = "))
      servers[name]["args"] = Json::parse(line.substr(7));
  }
  return servers;
}

// Words of a shell line: blanks split, '...' quotes, a trailing \ joins lines.
std::vector<std::string> shell_words(const std::string& line) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false, quoted = false;
  for (char c : line) {
    if (quoted) {
      if (c == '\'')
        quoted = false;
      else
        word += c;
    } else if (c == '\'') {
      quoted = in_word = true;
    } else if (c == ' ' || c == '\n' || c == '\\') {
      if (in_word) words.push_back(word);
      word.clear();
      in_word = false;
    } else {
      word += c;
      in_word = true;
    }
  }
  if (in_word) words.push_back(word);
  return words;
}

TEST(McpDocs, TheClaudeCodeAndCodexEntriesStartChocksServer) {
  SKIP_WITHOUT_MCP_CLIENTS();
  Fixture f;
  f.init_git();
  int started = 0;
  for (const auto& b : agents_page()) {
    std::vector<std::vector<std::string>> entries;
    if (b.info == "json" && b.text.find("mcpServers") != std::string::npos) {
      const Json j = Json::parse(b.text);
      if (j["mcpServers"].contains("chock"))
        entries.push_back(resolved(f, j["mcpServers"]["chock"]["command"], j["mcpServers"]["chock"]["args"]));
    } else if (b.info == "toml") {
      auto servers = toml_servers(b.text);
      if (servers.contains("chock"))
        entries.push_back(resolved(f, servers["chock"]["command"], servers["chock"]["args"]));
    }
    for (const auto& argv : entries) {
      Output raw;
      auto steps = sdk(
          f, plan_for(f, argv, {{{"list", true}}, call("run_command", {{"argv", {"cat", "a.txt"}}})}), &raw);
      ASSERT_EQ(steps.size(), 2U) << describe(raw);
      EXPECT_EQ(steps[0]["tools"].size(), 13U);
      EXPECT_EQ(steps[1]["result"]["structuredContent"]["stdout"], "alpha\n") << steps[1].dump();
      ++started;
    }
  }
  EXPECT_EQ(started, 2);  // .mcp.json and config.toml
}

TEST(McpDocs, TheWrappedFilesystemEntriesRunItUnderTheProjectsRules) {
  SKIP_WITHOUT_MCP_CLIENTS();
  Fixture f;
  f.init_git();
  for (const auto& b : agents_page())
    if (b.info == "zig") write_file(f.file("chock.zon"), b.text);
  ASSERT_TRUE(exists(f.file("chock.zon")));
  f.commit_all("the page's chock.zon");
  bind_clients(f);
  int wrapped = 0;
  for (const auto& b : agents_page()) {
    std::vector<std::vector<std::string>> entries;
    if (b.info == "json" && b.text.find("\"wrap\"") != std::string::npos &&
        Json::parse(b.text)["mcpServers"].contains("filesystem")) {
      const Json s = Json::parse(b.text)["mcpServers"]["filesystem"];
      entries.push_back(resolved(f, s["command"], s["args"]));
    } else if (b.info == "toml") {
      auto servers = toml_servers(b.text);
      if (servers.contains("filesystem"))
        entries.push_back(resolved(f, servers["filesystem"]["command"], servers["filesystem"]["args"]));
    }
    for (const auto& argv : entries) {
      Output raw;
      auto steps = sdk(f,
                       plan_for(f, argv,
                                {{{"list", true}},
                                 call("read_text_file", {{"path", "a.txt"}}),
                                 call("write_file", {{"path", "x.txt"}, {"content", "x"}})}),
                       &raw);
      ASSERT_EQ(steps.size(), 3U) << describe(raw);
      const Json& tools = steps[0]["tools"];
      EXPECT_NE(std::find(tools.begin(), tools.end(), "read_text_file"), tools.end()) << steps[0].dump();
      EXPECT_EQ(std::find(tools.begin(), tools.end(), "write_file"), tools.end()) << steps[0].dump();
      EXPECT_NE(text_of(steps[1]["result"]).find("alpha"), std::string::npos) << steps[1].dump();
      EXPECT_NE(steps[2].dump().find("mcp.filesystem.tool.write_file = deny"), std::string::npos)
          << steps[2].dump();
      ++wrapped;
    }
  }
  EXPECT_EQ(wrapped, 2);
}

// The memory server installed in the project's node_modules, run from
// there through .carry in a session made to last, as the page says; a
// stand-in that keeps its memory beside its code as server-memory does
// (which is not installed here) takes its place in node_modules.
TEST(McpDocs, TheMemoryEntryRunsAServerOfTheProjectsNodeModulesInALastingSession) {
  SKIP_WITHOUT_MCP_CLIENTS();
  Fixture f;
  f.init_git();
  write_file(f.file(".gitignore"), "node_modules/\n");
  std::string zon;
  for (const auto& b : agents_page())
    if (b.info == "zig") zon = b.text;
  ASSERT_EQ(zon.rfind(".{\n", 0), 0U) << zon;
  write_file(f.file("chock.zon"), ".{\n    .carry = .{ \"node_modules\" }," + zon.substr(2));
  f.commit_all("the page's chock.zon, carrying node_modules");
  const std::string dist = "node_modules/@modelcontextprotocol/server-memory/dist";
  for (const std::string& d : std::vector<std::string>{"node_modules", "node_modules/@modelcontextprotocol",
                                                       "node_modules/@modelcontextprotocol/server-memory",
                                                       dist, "node_modules/.bin"})
    ::mkdir(f.file(d).c_str(), 0755);
  write_file(f.file(dist + "/index.js"), tiny_server_js());
  ::chmod(f.file(dist + "/index.js").c_str(), 0755);
  ASSERT_EQ(::symlink("../@modelcontextprotocol/server-memory/dist/index.js",
                      f.file("node_modules/.bin/mcp-server-memory").c_str()),
            0);
  Output made = f.chock({"run", "--keep", "--", "true"});
  const std::string id = ws::session_id(made);
  ASSERT_FALSE(id.empty()) << describe(made);
  int ran = 0;
  for (const auto& b : agents_page()) {
    if (b.info != "json" || b.text.find("\"memory\"") == std::string::npos) continue;
    const Json entry = Json::parse(b.text)["mcpServers"]["memory"];
    std::vector<std::string> argv{entry["command"] == "chock" ? chock_binary()
                                                              : entry["command"].get<std::string>()};
    for (const auto& a : entry["args"]) argv.push_back(a == "ID" ? id : a.get<std::string>());
    Output raw;
    auto told = sdk(f, plan_for(f, argv, {call("remember", {{"text", "make test before apply"}})}), &raw);
    ASSERT_EQ(told.size(), 1U) << describe(raw);
    auto recalled = sdk(f, plan_for(f, argv, {call("recall")}), &raw);
    ASSERT_EQ(recalled.size(), 1U) << describe(raw);
    EXPECT_EQ(recalled[0]["result"]["content"][0]["text"], "\"make test before apply\"\n")
        << recalled[0].dump();
    ++ran;
  }
  EXPECT_EQ(ran, 1);
  // Kept in the session's copy of node_modules, never in the project's.
  EXPECT_FALSE(exists(f.file(dist + "/memory.jsonl")));
}

TEST(McpDocs, TheInspectorLinesListAndCallTheTools) {
  SKIP_WITHOUT_MCP_CLIENTS();
  Fixture f;
  f.init_git();
  int ran = 0;
  for (const auto& b : agents_page()) {
    if (b.info != "sh" || b.text.find("inspector") == std::string::npos) continue;
    std::string joined;
    std::istringstream in(b.text);
    for (std::string line; std::getline(in, line);) {
      joined += line;
      if (line.ends_with("\\")) continue;
      std::vector<std::string> words = shell_words(joined);
      joined.clear();
      ASSERT_GE(words.size(), 4U);
      ASSERT_EQ(words[0], "npx");
      ASSERT_EQ(words[1], "@modelcontextprotocol/inspector@1.0.0");  // the version package-lock.json pins
      ASSERT_EQ(words[2], "--cli");
      ASSERT_EQ(words[3], "chock");
      ASSERT_EQ(words[4], "mcp");
      Output raw;
      Json answer = inspector(f, {}, std::vector<std::string>(words.begin() + 5, words.end()), &raw);
      ASSERT_TRUE(answer.is_object()) << describe(raw);
      if (answer.contains("tools"))
        EXPECT_EQ(answer["tools"].size(), 13U);
      else
        EXPECT_NE(text_of(answer).find("exit code 2"), std::string::npos)
            << answer.dump();  // no Makefile here
      ++ran;
    }
  }
  EXPECT_EQ(ran, 2);
}

}  // namespace
}  // namespace chock::test::mcp
