// `chock mcp --http`: the official SDK's StreamableHTTPClientTransport
// drives the same tools over HTTP (each client session a Chock session of
// its own, questions and progress on the POST's event stream), and curl
// shows what is refused and how: no token (401), a Host or Origin that is
// not the loopback's even with the token (403, against DNS rebinding), a
// session that is missing (400) or ended (404), a listener off the
// loopback (refused at start).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "mcp_support.hpp"

namespace chock::test::mcp {
namespace {

constexpr const char* kToken = "a-test-token-of-forty-characters-000001";

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The token file, 0600, in the fixture's own directories.
std::string token_file(const Fixture& f) {
  const std::string path = f.config() + "/mcp-token";
  write_file(path, std::string(kToken) + "\n");
  ::chmod(path.c_str(), 0600);
  return path;
}

Json http_plan(const Fixture& f, const std::vector<Json>& steps, const std::vector<std::string>& more = {}) {
  std::vector<std::string> args{"--http", "127.0.0.1:0", "--token-file", token_file(f)};
  args.insert(args.end(), more.begin(), more.end());
  Json plan = chock_mcp_plan(f, args, steps);
  plan["http_token"] = kToken;
  return plan;
}

TEST(McpHttp, TheToolsRunOverHttpAndEachClientSessionIsAChockSessionOfItsOwn) {
  SKIP_WITHOUT_MCP_CLIENTS();
  Fixture f;
  f.init_git();
  std::vector<std::string> sessions;
  for (int run = 0; run < 2; ++run) {
    Output raw;
    auto steps = sdk(f,
                     http_plan(f, {Json{{"list", true}},
                                   call("run_command", {{"argv", {"sh", "-c", "echo over-http; id -u"}}}),
                                   call("workspace_status")}),
                     &raw);
    ASSERT_EQ(steps.size(), 5U) << describe(raw);
    EXPECT_TRUE(has(steps[0].dump(), "run_command")) << steps[0].dump();
    EXPECT_TRUE(has(text_of(steps[1]["result"]), "over-http")) << steps[1].dump();
    sessions.push_back(steps[2]["result"]["structuredContent"]["session"]);
    EXPECT_EQ(steps[4]["server_exit"]["code"], 0) << steps[4].dump() << describe(raw);
    EXPECT_TRUE(has(raw.err, "serving http://127.0.0.1:")) << describe(raw);
  }
  EXPECT_NE(sessions[0], sessions[1]);
  EXPECT_FALSE(sessions[0].empty());
}

TEST(McpHttp, QuestionsAndProgressGoOnTheRequestsEventStream) {
  SKIP_WITHOUT_MCP_CLIENTS();
  Fixture f;
  f.init_git();
  write_file(f.file("chock.zon"),
             ".{ .policy = .{ .rules = .{ .{ .action = \"memory.write\", .decision = .ask } } } }\n");
  f.commit_all("memory asks");
  Json slow = call("run_command", {{"argv", {"sh", "-c", "for i in 1 2 3; do echo step $i; sleep 1; done"}}});
  slow["progress"] = true;
  Json plan = http_plan(f, {call("write_memory", {{"name", "over-http"},
                                                  {"kind", "convention"},
                                                  {"description", "asked over HTTP"},
                                                  {"body", "b\n"}}),
                            call("read_memory"), slow, Json{{"elicitations", true}}});
  plan["elicit"] = "accept";
  Output raw;
  auto steps = sdk(f, plan, &raw);
  ASSERT_EQ(steps.size(), 6U) << describe(raw);
  EXPECT_FALSE(steps[0]["result"]["isError"]) << steps[0].dump();
  EXPECT_TRUE(has(text_of(steps[1]["result"]), "over-http")) << steps[1].dump();
  EXPECT_GE(steps[2]["progress"].get<int>(), 1) << steps[2].dump();
  ASSERT_EQ(steps[3]["elicitations"].size(), 1U) << steps[3].dump();
  EXPECT_TRUE(has(steps[3]["elicitations"][0]["message"], "memory.write")) << steps[3].dump();
}

// curl against a running `chock mcp --http`: each line "what STATUS".
Output curl_checks(const Fixture& f, const std::string& checks) {
  const std::string script =
      "\"$CHOCK\" mcp --http 127.0.0.1:0 --token-file \"$TOKEN_FILE\" >url 2>err & pid=$!\n"
      "i=0; while [ ! -s url ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done\n"
      "URL=$(head -n 1 url); AUTH=\"Authorization: Bearer $TOKEN\"\n"
      "J='Content-Type: application/json'; A='Accept: application/json, text/event-stream'\n"
      "INIT='{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
      "\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{\"name\":\"curl\",\"version\":\"1\"}}}'\n"
      "LIST='{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}'\n"
      "code() { curl -s -o /dev/null -w '%{http_code}' -m 10 \"$@\"; }\n"
      "SID=$(curl -s -D - -o /dev/null -m 10 -X POST \"$URL\" -H \"$AUTH\" -H \"$J\" -H \"$A\" -d \"$INIT\" "
      "| "
      "tr -d '\\r' | sed -n 's/^[Mm]cp-[Ss]ession-[Ii]d: //p')\n" +
      checks + "kill -TERM $pid; wait $pid; echo exit $?\n";
  RunOptions o = fixture_env(f);
  o.env["CHOCK"] = chock_binary();
  o.env["TOKEN_FILE"] = token_file(f);
  o.env["TOKEN"] = kToken;
  o.cwd = f.project();
  o.timeout = std::chrono::milliseconds(120000);
  o.env["WORK"] = f.state();
  return run_process({"sh", "-c", "cd \"$WORK\" || exit 1\n" + script}, o);
}

TEST(McpHttp, WhatIsRefusedAndHow) {
  SKIP_WITHOUT_MCP_CLIENTS();
  Fixture f;
  f.init_git();
  const Output out = curl_checks(
      f,
      "echo session ${#SID}\n"
      "echo no-token $(code -X POST \"$URL\" -H \"$J\" -H \"$A\" -d \"$INIT\")\n"
      "echo wrong-token $(code -X POST \"$URL\" -H 'Authorization: Bearer nope' -H \"$J\" -H \"$A\" -d "
      "\"$INIT\")\n"
      "echo rebound-host $(code -X POST \"$URL\" -H 'Host: evil.example' -H \"$AUTH\" -H \"$J\" -H \"$A\" -d "
      "\"$INIT\")\n"
      "echo foreign-origin $(code -X POST \"$URL\" -H 'Origin: http://evil.example' -H \"$AUTH\" -H \"$J\" "
      "-H "
      "\"$A\" -d \"$INIT\")\n"
      "echo loopback-origin $(code -X POST \"$URL\" -H 'Origin: http://localhost:3000' -H \"$AUTH\" -H "
      "\"Mcp-Session-Id: $SID\" -H \"$J\" -H \"$A\" -d \"$LIST\")\n"
      "echo no-session $(code -X POST \"$URL\" -H \"$AUTH\" -H \"$J\" -H \"$A\" -d \"$LIST\")\n"
      "echo bad-version $(code -X POST \"$URL\" -H \"$AUTH\" -H \"Mcp-Session-Id: $SID\" -H "
      "'MCP-Protocol-Version: 1999-01-01' -H \"$J\" -H \"$A\" -d \"$LIST\")\n"
      "echo not-json $(code -X POST \"$URL\" -H \"$AUTH\" -H 'Content-Type: text/plain' -H \"$A\" -d x)\n"
      "echo other-path $(code \"${URL%/mcp}/other\" -H \"$AUTH\")\n"
      "echo put $(code -X PUT \"$URL\" -H \"$AUTH\")\n"
      "echo delete $(code -X DELETE \"$URL\" -H \"$AUTH\" -H \"Mcp-Session-Id: $SID\")\n"
      "echo after-delete $(code -X POST \"$URL\" -H \"$AUTH\" -H \"Mcp-Session-Id: $SID\" -H \"$J\" -H "
      "\"$A\" -d "
      "\"$LIST\")\n"
      "PORT=${URL##*:}; PORT=${PORT%/mcp}; HEX=$(printf %04X \"$PORT\")\n"
      "L=$(awk '$4 == \"0A\" {print $2}' /proc/net/tcp /proc/net/tcp6 | grep -i \":$HEX\\$\")\n"
      "echo listeners $(printf '%s\\n' \"$L\" | grep -c .)\n"
      "echo listeners-off-loopback $(printf '%s\\n' \"$L\" | grep -v '^0100007F:' | "
      "grep -vi '^00000000000000000000000001000000:' | grep -c .)\n");
  const std::string o = out.out;
  EXPECT_TRUE(has(o, "session 32\n")) << describe(out);
  for (const char* line :
       {"no-token 401", "wrong-token 401", "rebound-host 403", "foreign-origin 403", "loopback-origin 200",
        "no-session 400", "bad-version 400", "not-json 415", "other-path 404", "put 405", "delete 200",
        "after-delete 404", "listeners 1", "listeners-off-loopback 0", "exit 0"})
    EXPECT_TRUE(has(o, std::string(line) + "\n")) << line << "\n" << describe(out);
}

// nlohmann's dump recurses once a level: a body of 100,000 nested arrays
// is refused before a value is built, and the server still answers.
TEST(McpHttp, DeeplyNestedJsonInABodyIsRefusedNotACrash) {
  SKIP_WITHOUT_MCP_CLIENTS();
  Fixture f;
  f.init_git();
  const Output out = curl_checks(
      f,
      "python3 -c 'print(\"[\" * 100000 + \"]\" * 100000)' > deep.json\n"
      "echo deep $(code -X POST \"$URL\" -H \"$AUTH\" -H \"Mcp-Session-Id: $SID\" -H \"$J\" -H \"$A\" "
      "--data-binary @deep.json)\n"
      "echo after $(code -X POST \"$URL\" -H \"$AUTH\" -H \"Mcp-Session-Id: $SID\" -H \"$J\" -H \"$A\" -d "
      "\"$LIST\")\n");
  for (const char* line : {"deep 400", "after 200", "exit 0"})
    EXPECT_TRUE(has(out.out, std::string(line) + "\n")) << line << "\n" << describe(out);
}

TEST(McpHttp, AListenerOffTheLoopbackOrATokenOthersCanReadIsRefusedAtStart) {
  SKIP_WITHOUT_MCP_CLIENTS();
  Fixture f;
  f.init_git();
  RunOptions o = fixture_env(f);
  o.cwd = f.project();
  const Output wide = run_process({chock_binary(), "mcp", "--http", "0.0.0.0:0"}, o);
  EXPECT_EQ(wide.status, 2) << describe(wide);
  EXPECT_TRUE(has(wide.err, "loopback only")) << describe(wide);
  const std::string path = token_file(f);
  ::chmod(path.c_str(), 0644);
  const Output shared =
      run_process({chock_binary(), "mcp", "--http", "127.0.0.1:0", "--token-file", path}, o);
  EXPECT_EQ(shared.status, 125) << describe(shared);
  EXPECT_TRUE(has(shared.err, "nobody else can read")) << describe(shared);
  const Output stray = run_process({chock_binary(), "mcp", "--token-file", path}, o);
  EXPECT_EQ(stray.status, 2) << describe(stray);
  EXPECT_TRUE(has(stray.err, "--token-file is for --http")) << describe(stray);
}

// The official conformance suite (npm's @modelcontextprotocol/conformance,
// on the Node.js 22 it needs) against `chock mcp --http`, through a proxy
// that adds the bearer token its client cannot send. What Chock does not
// offer is listed, with why, in conformance/expected-failures.yml; the
// suite fails on any other failure and on a listed scenario that passes.
TEST(McpHttp, TheOfficialConformanceSuitePassesButForWhatChockDoesNotOffer) {
  SKIP_WITHOUT_MCP_CLIENTS();
  const std::string dir = CHOCK_MCP_CONFORMANCE_DIR;
  if (!exists(dir + "/node_modules/.bin/conformance") || !exists(dir + "/node_modules/.bin/node"))
    GTEST_SKIP() << "the conformance suite is not installed in " << dir << " (scripts/install-deps does it)";
  Fixture f;
  f.init_git();
  const std::string script =
      "cd \"$WORK\" || exit 1\n"
      "\"$CHOCK\" mcp --http 127.0.0.1:0 --token-file \"$TOKEN_FILE\" --project \"$PROJECT\" >url 2>err & "
      "chock=$!\n"
      "i=0; while [ ! -s url ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done\n"
      "\"$DIR/node_modules/.bin/node\" \"$DIR/token_proxy.mjs\" \"$(head -n 1 url)\" \"$TOKEN\" >proxy & "
      "proxy=$!\n"
      "i=0; while [ ! -s proxy ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done\n"
      "\"$DIR/node_modules/.bin/node\" \"$DIR/node_modules/.bin/conformance\" server --url \"$(head -n 1 "
      "proxy)\" "
      "--expected-failures \"$DIR/expected-failures.yml\"\n"
      "status=$?\n"
      "kill $proxy; kill -TERM $chock; wait $chock; echo \"chock exit $?\"\n"
      "exit $status\n";
  RunOptions o = fixture_env(f);
  o.env["CHOCK"] = chock_binary();
  o.env["TOKEN_FILE"] = token_file(f);
  o.env["TOKEN"] = kToken;
  o.env["PROJECT"] = f.project();
  o.env["DIR"] = dir;
  o.env["WORK"] = f.state();
  o.timeout = std::chrono::milliseconds(600000);
  const Output out = run_process({"sh", "-c", script}, o);
  EXPECT_EQ(out.status, 0) << describe(out);
  for (const char* passed :
       {"server-initialize: 1 passed, 0 failed", "ping: 1 passed, 0 failed", "tools-list: 1 passed, 0 failed",
        "logging-set-level: 1 passed, 0 failed", "dns-rebinding-protection: 2 passed, 0 failed"})
    EXPECT_TRUE(has(out.out, passed)) << passed << "\n" << describe(out);
  EXPECT_TRUE(has(out.out, "chock exit 0")) << describe(out);
}

}  // namespace
}  // namespace chock::test::mcp
