// The questions a sandboxed program's network asks under `chock mcp`, in the
// test internet (tests/support/net/world.sh): a call's connection under a
// net.connect row that asks, and a wrapped server's, wait for the person's
// answer through the official SDK's client; declined, the connection is
// refused; accepted, it reaches the test server.
#include <gtest/gtest.h>

#include "mcp_support.hpp"
#include "world.hpp"

namespace chock::test::mcp {
namespace {

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A wrapped MCP server of one tool, `probe`, that fetches the test
// internet's /whoami and says what happened.
const char* const kProbeServer = R"(import json, sys, urllib.request
for line in sys.stdin:
    m = json.loads(line)
    if "id" not in m:
        continue
    if m["method"] == "initialize":
        r = {"protocolVersion": m["params"]["protocolVersion"], "capabilities": {"tools": {}},
             "serverInfo": {"name": "probe", "version": "1"}}
    elif m["method"] == "tools/list":
        r = {"tools": [{"name": "probe", "inputSchema": {"type": "object"}}]}
    elif m["method"] == "tools/call":
        try:
            t = "reached: " + urllib.request.urlopen("http://www.chock.test/whoami", timeout=10).read().decode()
        except Exception as e:
            t = "refused: " + str(e)
        r = {"content": [{"type": "text", "text": t}]}
    else:
        r = {}
    print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": r}), flush=True)
)";

// The project of a wrapped server `probe` allowed the network, whose
// connection to the test server asks.
void probe_project(Fixture& f) {
  write_file(f.file("probe_server.py"), kProbeServer);
  write_file(f.file("chock.zon"),
             ".{ .policy = .{ .rules = .{ "
             ".{ .action = \"mcp.probe.network\", .decision = .allow }, "
             ".{ .action = \"net.connect.test.chock.www.80\", .decision = .ask } } } }\n");
  f.commit_all("a probe server");
}

// Both questions named the test server's row and whose question it was.
void expect_asked_twice(const Json& step, const std::string& whose) {
  const Json& asked = step["elicitations"];
  ASSERT_EQ(asked.size(), 2U) << step.dump();
  for (const auto& q : asked) {
    EXPECT_TRUE(has(q["message"], "net.connect.test.chock.www.80")) << q.dump();
    EXPECT_TRUE(has(q["message"], whose)) << q.dump();
  }
}

TEST(McpWorld, ACallsConnectionThatAsksWaitsForTheClientsAnswer) {
  CHOCK_NEED_WORLD();
  SKIP_WITHOUT_MCP_CLIENTS();
  Fixture f;
  f.init_git();
  write_file(f.file("chock.zon"),
             ".{ .network = .filtered, .policy = .{ .rules = .{ "
             ".{ .action = \"net.connect.test.chock.www.80\", .decision = .ask } } } }\n");
  f.commit_all("the test server asks");
  const Json fetch =
      call("run_command", {{"argv", {"curl", "-sS", "-m", "20", "http://www.chock.test/whoami"}}});
  Json plan = chock_mcp_plan(f, {}, {fetch, fetch, Json{{"elicitations", true}}});
  plan["elicit"] = Json::array({"decline", "accept"});
  Output raw;
  auto steps = sdk(f, plan, &raw);
  ASSERT_EQ(steps.size(), 3U) << describe(raw);
  EXPECT_NE(steps[0]["result"]["structuredContent"]["exit_code"], 0) << steps[0].dump();
  EXPECT_FALSE(has(text_of(steps[0]["result"]), "served at")) << steps[0].dump();
  EXPECT_EQ(steps[1]["result"]["structuredContent"]["exit_code"], 0) << steps[1].dump();
  EXPECT_TRUE(has(text_of(steps[1]["result"]), "served at")) << steps[1].dump();
  expect_asked_twice(steps[2], "the tool call run_command");
}

TEST(McpWorld, AWrappedServersConnectionThatAsksIsAskedThroughTheClient) {
  CHOCK_NEED_WORLD();
  SKIP_WITHOUT_MCP_CLIENTS();
  Fixture f;
  f.init_git();
  probe_project(f);
  const Json probe = call("probe");
  Json plan = chock_mcp_plan(f, {"wrap", "probe", "--", "python3", "probe_server.py"},
                             {probe, probe, {{"elicitations", true}}});
  plan["elicit"] = Json::array({"decline", "accept"});
  Output raw;
  auto steps = sdk(f, plan, &raw);
  ASSERT_EQ(steps.size(), 3U) << describe(raw);
  EXPECT_TRUE(has(text_of(steps[0]["result"]), "refused")) << steps[0].dump();
  EXPECT_TRUE(has(text_of(steps[1]["result"]), "reached: served at")) << steps[1].dump();
  expect_asked_twice(steps[2], "the MCP server probe");
}

// Without elicitation the wrapped server's question is a refusal, at once.
TEST(McpWorld, AWrappedServerOfAClientThatCannotBeAskedIsRefused) {
  CHOCK_NEED_WORLD();
  SKIP_WITHOUT_MCP_CLIENTS();
  Fixture f;
  f.init_git();
  probe_project(f);
  Output raw;
  auto steps =
      sdk(f, chock_mcp_plan(f, {"wrap", "probe", "--", "python3", "probe_server.py"}, {call("probe")}), &raw);
  ASSERT_EQ(steps.size(), 1U) << describe(raw);
  EXPECT_TRUE(has(text_of(steps[0]["result"]), "refused")) << steps[0].dump();
  EXPECT_TRUE(has(raw.err, "net.connect.test.chock.www.80 asks, and nobody is here to answer"))
      << describe(raw);
}

}  // namespace
}  // namespace chock::test::mcp
