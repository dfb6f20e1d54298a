// `chock mcp`, Chock as an agent's tools, driven by the official TypeScript
// SDK's client and by the MCP Inspector's CLI.
#include <filesystem>
#include <sstream>

#include "mcp_support.hpp"

namespace chock::test::mcp {
namespace {

const char* const kApplyAllowed =
    ".{ .policy = .{ .rules = .{ .{ .action = \"workspace.apply\", .decision = .allow } } } }\n";

// greet.c, greet_test.c and the Makefile of examples/greeter, committed.
void init_greeter(Fixture& f) {
  f.init_git();
  for (const char* name : {"Makefile", "greet.c", "greet_test.c"})
    std::filesystem::copy_file(std::string(CHOCK_EXAMPLES_DIR) + "/greeter/" + name, f.file(name));
  f.commit_all("the greeter");
}

TEST(McpServer, BothClientsListChocksToolsAndRunMakeTestInTheGreeter) {
  SKIP_WITHOUT_MCP_CLIENTS();
  Fixture f;
  init_greeter(f);
  auto steps =
      sdk(f, chock_mcp_plan(f, {}, {{{"list", true}}, call("run_command", {{"argv", {"make", "test"}}})}));
  ASSERT_EQ(steps.size(), 2U);
  for (const char* tool :
       {"run_command", "task_output", "read_file", "write_file", "edit_file", "list_directory", "glob",
        "grep", "read_memory", "write_memory", "fetch_url", "workspace_status", "apply"})
    EXPECT_NE(std::find(steps[0]["tools"].begin(), steps[0]["tools"].end(), tool), steps[0]["tools"].end())
        << tool;
  for (const auto& d : steps[0]["definitions"]) {
    EXPECT_EQ(d["inputSchema"]["type"], "object") << d.dump();
    EXPECT_TRUE(d["annotations"].contains("readOnlyHint")) << d.dump();
  }
  const Json& make = steps[1]["result"];
  EXPECT_FALSE(make.value("isError", true)) << make.dump();
  EXPECT_EQ(make["structuredContent"]["exit_code"], 0) << make.dump();

  Output raw;
  Json listed = inspector(f, {}, {"--method", "tools/list"}, &raw);
  ASSERT_TRUE(listed.is_object()) << describe(raw);
  EXPECT_EQ(listed["tools"].size(), 13U) << listed.dump();
  Json ran = inspector(
      f, {},
      {"--method", "tools/call", "--tool-name", "run_command", "--tool-arg", R"(argv=["make","test"])"},
      &raw);
  ASSERT_TRUE(ran.is_object()) << describe(raw);
  EXPECT_FALSE(ran.value("isError", true)) << ran.dump();
  EXPECT_NE(text_of(ran).find("exit code 0"), std::string::npos) << ran.dump();
}

TEST(McpServer, FileToolsRoundTripAndAnEditNeedsExactlyOneMatch) {
  SKIP_WITHOUT_MCP_CLIENTS();
  Fixture f;
  f.init_git();
  auto steps = sdk(
      f, chock_mcp_plan(
             f, {},
             {call("write_file", {{"path", "notes/plan.txt"}, {"content", "one\ntwo\ntwo\nthree\n"}}),
              call("read_file", {{"path", "notes/plan.txt"}}),
              call("edit_file", {{"path", "notes/plan.txt"}, {"old_string", "zero"}, {"new_string", "0"}}),
              call("edit_file", {{"path", "notes/plan.txt"}, {"old_string", "two"}, {"new_string", "2"}}),
              call("edit_file", {{"path", "notes/plan.txt"}, {"old_string", "three"}, {"new_string", "3"}}),
              call("read_file", {{"path", f.file("notes/plan.txt")}, {"offset", 3}, {"limit", 2}}),
              call("grep", {{"pattern", "^t[wh]"}}), call("glob", {{"pattern", "**/*.txt"}}),
              call("list_directory", {{"path", "notes"}})}));
  ASSERT_EQ(steps.size(), 9U);
  EXPECT_FALSE(steps[0]["result"]["isError"]) << steps[0].dump();
  EXPECT_EQ(text_of(steps[1]["result"]), "one\ntwo\ntwo\nthree\n\n");
  EXPECT_TRUE(steps[2]["result"]["isError"]);
  EXPECT_NE(text_of(steps[2]["result"]).find("occurs 0 times"), std::string::npos) << steps[2].dump();
  EXPECT_TRUE(steps[3]["result"]["isError"]);
  EXPECT_NE(text_of(steps[3]["result"]).find("occurs 2 times"), std::string::npos) << steps[3].dump();
  EXPECT_FALSE(steps[4]["result"]["isError"]) << steps[4].dump();
  EXPECT_NE(text_of(steps[5]["result"]).find("two\n3\n"), std::string::npos) << steps[5].dump();
  EXPECT_NE(text_of(steps[6]["result"]).find("notes/plan.txt:2:two"), std::string::npos) << steps[6].dump();
  EXPECT_NE(text_of(steps[7]["result"]).find("notes/plan.txt"), std::string::npos) << steps[7].dump();
  EXPECT_NE(text_of(steps[7]["result"]).find("a.txt"), std::string::npos) << steps[7].dump();
  EXPECT_EQ(text_of(steps[8]["result"]), "plan.txt\n\n") << steps[8].dump();
  // Written in the session's workspace, never in the project.
  EXPECT_FALSE(exists(f.file("notes/plan.txt")));
}

TEST(McpServer, AFileToolNeverReadsOutsideTheProjectWhereverThePathLeads) {
  SKIP_WITHOUT_MCP_CLIENTS();
  Fixture f;
  f.init_git();
  auto steps = sdk(
      f, chock_mcp_plan(
             f, {},
             {call("run_command", {{"argv", {"sh", "-c", "ln -s /etc/passwd out && head -c 5 out"}}}),
              call("read_file", {{"path", "/etc/passwd"}}), call("read_file", {{"path", "../x"}}),
              call("read_file", {{"path", "out"}}), call("write_file", {{"path", "../x"}, {"content", "x"}}),
              call("grep", {{"pattern", "root"}, {"path", "/etc"}}), call("glob", {{"pattern", "../*"}})}));
  ASSERT_EQ(steps.size(), 7U);
  // The file is there for a program of the call: what stops the tools is their own path check.
  EXPECT_FALSE(steps[0]["result"]["isError"]) << steps[0].dump();
  for (std::size_t i = 1; i < steps.size(); ++i) {
    EXPECT_TRUE(steps[i]["result"]["isError"]) << steps[i].dump();
    const std::string t = text_of(steps[i]["result"]);
    EXPECT_TRUE(t.find("outside the project") != std::string::npos ||
                t.find("leaves the project") != std::string::npos)
        << steps[i].dump();
    EXPECT_EQ(t.find("root:x:0"), std::string::npos) << steps[i].dump();
  }
}

TEST(McpServer, MemoryIsWrittenAndReadBack) {
  SKIP_WITHOUT_MCP_CLIENTS();
  Fixture f;
  f.init_git();
  write_file(f.file("chock.zon"),
             ".{ .policy = .{ .rules = .{ .{ .action = \"memory.write\", .decision = .allow } } } }\n");
  f.commit_all("memory allowed");
  auto steps = sdk(f, chock_mcp_plan(f, {},
                                     {call("write_memory", {{"name", "build-cmd"},
                                                            {"kind", "convention"},
                                                            {"description", "how to build"},
                                                            {"body", "make -j2 test\n"}}),
                                      call("read_memory", {{"name", "build-cmd"}}), call("read_memory")}));
  ASSERT_EQ(steps.size(), 3U);
  EXPECT_FALSE(steps[0]["result"]["isError"]) << steps[0].dump();
  EXPECT_NE(text_of(steps[1]["result"]).find("make -j2 test"), std::string::npos) << steps[1].dump();
  EXPECT_NE(text_of(steps[2]["result"]).find("build-cmd"), std::string::npos) << steps[2].dump();
}

TEST(McpServer, WorkspaceStatusShowsTheCallsCommitAndApplyFollowsThePolicy) {
  SKIP_WITHOUT_MCP_CLIENTS();
  Fixture f;
  f.init_git();
  const Json commit = call(
      "run_command",
      {{"argv",
        {"sh", "-c",
         "echo new > n.txt && git add n.txt && git -c user.name=a -c user.email=a@b commit -qm 'add n'"}}});
  // workspace.apply asks, and the client cannot ask anyone: refused, with the command to run.
  auto asked = sdk(f, chock_mcp_plan(f, {}, {commit, call("workspace_status"), call("apply")}));
  ASSERT_EQ(asked.size(), 3U);
  EXPECT_FALSE(asked[0]["result"]["isError"]) << asked[0].dump();
  const Json status = asked[1]["result"]["structuredContent"];
  ASSERT_EQ(status["commits"].size(), 1U) << asked[1].dump();
  EXPECT_NE(status["commits"][0].get<std::string>().find("add n"), std::string::npos);
  EXPECT_EQ(status["changed_files"][0], "n.txt");
  const std::string session = status["session"];
  EXPECT_TRUE(asked[2]["result"]["isError"]);
  EXPECT_NE(text_of(asked[2]["result"]).find("chock apply " + session), std::string::npos) << asked[2].dump();
  EXPECT_FALSE(exists(f.file("n.txt")));
  // A client that can ask the person: declined, nothing applied; accepted, applied.
  Json declined = chock_mcp_plan(f, {"--session", session}, {call("apply")});
  declined["elicit"] = "decline";
  Output raw;
  auto no = sdk(f, declined, &raw);
  ASSERT_EQ(no.size(), 1U) << describe(raw);
  EXPECT_TRUE(no[0]["result"]["isError"]) << no[0].dump();
  EXPECT_FALSE(exists(f.file("n.txt")));
  Json accepted = declined;
  accepted["elicit"] = "accept";
  auto yes = sdk(f, accepted);
  ASSERT_EQ(yes.size(), 1U);
  EXPECT_FALSE(yes[0]["result"]["isError"]) << yes[0].dump();
  EXPECT_EQ(ws::git_ok(f.project(), {"log", "-1", "--format=%s"}), "add n");

  // Under deny, nothing asks and nothing is applied.
  Fixture d;
  d.init_git();
  write_file(d.file("chock.zon"),
             ".{ .policy = .{ .rules = .{ .{ .action = \"workspace.apply\", .decision = .deny } } } }\n");
  d.commit_all("apply denied");
  Json denied_plan = chock_mcp_plan(d, {}, {commit, call("apply")});
  denied_plan["elicit"] = "accept";
  auto refused = sdk(d, denied_plan);
  ASSERT_EQ(refused.size(), 2U);
  EXPECT_TRUE(refused[1]["result"]["isError"]) << refused[1].dump();
  EXPECT_NE(text_of(refused[1]["result"]).find("workspace.apply is denied"), std::string::npos)
      << refused[1].dump();
  EXPECT_FALSE(exists(d.file("n.txt")));

  // Under allow, apply applies without asking.
  Fixture g;
  g.init_git();
  write_file(g.file("chock.zon"), kApplyAllowed);
  g.commit_all("apply allowed");
  auto allowed = sdk(g, chock_mcp_plan(g, {}, {commit, call("apply")}));
  ASSERT_EQ(allowed.size(), 2U);
  EXPECT_FALSE(allowed[1]["result"]["isError"]) << allowed[1].dump();
  EXPECT_EQ(ws::git_ok(g.project(), {"log", "-1", "--format=%s"}), "add n");
  EXPECT_TRUE(exists(g.file("n.txt")));
}

TEST(McpServer, ABackgroundCommandIsATaskWhoseOutputIsReadLater) {
  SKIP_WITHOUT_MCP_CLIENTS();
  Fixture f;
  f.init_git();
  auto started = sdk(
      f, chock_mcp_plan(f, {},
                        {call("run_command",
                              {{"argv", {"sh", "-c", "echo from-the-$((6 * 7))"}}, {"background", true}})}));
  ASSERT_EQ(started.size(), 1U);
  const Json& r = started[0]["result"];
  ASSERT_FALSE(r["isError"]) << r.dump();
  const std::string task = r["structuredContent"]["task"], session = r["structuredContent"]["session"];
  // Another server of the session reads it once it has ended (its output,
  // not its command line, which the answer names too).
  std::string seen;
  for (int i = 0; i < 100 && seen.find("from-the-42") == std::string::npos; ++i) {
    auto read = sdk(f, chock_mcp_plan(f, {"--session", session}, {call("task_output", {{"id", task}})}));
    ASSERT_EQ(read.size(), 1U);
    seen = text_of(read[0]["result"]);
  }
  EXPECT_NE(seen.find("from-the-42"), std::string::npos) << seen;
  EXPECT_NE(seen.find(task), std::string::npos) << seen;
}

// run_command {background, publish}: the task's server is reached from the
// host's loopback at the URL the answer gives; without a net.publish row the
// client (which cannot be asked here) gets a refusal naming the row.
TEST(McpServer, ABackgroundServerIsPublishedAtTheUrlTheAnswerGives) {
  SKIP_WITHOUT_MCP_CLIENTS();
  Fixture f;
  f.init_git();
  write_file(f.file("page.txt"), "served from the call\n");
  write_file(f.file("chock.zon"),
             ".{ .policy = .{ .rules = .{ .{ .action = \"net.publish.8000\", .decision = .allow } } } }\n");
  f.commit_all("a page");
  auto steps = sdk(
      f, chock_mcp_plan(
             f, {},
             {call("run_command", {{"argv", {"python3", "-m", "http.server", "8000", "--bind", "127.0.0.1"}},
                                   {"background", true},
                                   {"publish", {"8000"}}}),
              call("run_command", {{"argv", {"true"}}, {"background", true}, {"publish", {"8001"}}})}));
  ASSERT_EQ(steps.size(), 2U);
  const Json& r = steps[0]["result"];
  ASSERT_FALSE(r["isError"]) << r.dump();
  const std::string task = r["structuredContent"]["task"];
  ASSERT_EQ(r["structuredContent"]["published"].size(), 1U) << r.dump();
  const std::string url = r["structuredContent"]["published"][0];
  EXPECT_NE(text_of(r).find("published at " + url), std::string::npos) << r.dump();
  Output page;
  for (int i = 0; i < 100; ++i) {
    page = run_process({"curl", "-sS", "-m", "5", url + "page.txt"});
    if (page.status == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(page.out, "served from the call\n") << describe(page);
  Output cancel = run_process({chock_binary(), "tasks", "cancel", task}, fixture_env(f));
  EXPECT_EQ(cancel.status, 0) << describe(cancel);
  EXPECT_NE(run_process({"curl", "-sS", "-m", "5", url + "page.txt"}).status, 0);
  const Json& refused = steps[1]["result"];
  EXPECT_TRUE(refused["isError"]) << refused.dump();
  EXPECT_NE(text_of(refused).find("net.publish.8001"), std::string::npos) << refused.dump();
}

TEST(McpServer, ACommandStartsInTheDirectoryOfTheProjectItNames) {
  SKIP_WITHOUT_MCP_CLIENTS();
  Fixture f;
  f.init_git();
  auto steps = sdk(f, chock_mcp_plan(f, {},
                                     {call("run_command", {{"argv", {"pwd"}}, {"cwd", "sub"}}),
                                      call("run_command", {{"argv", {"pwd"}}, {"cwd", f.file("sub/../sub")}}),
                                      call("run_command", {{"argv", {"pwd"}}, {"cwd", "../.."}}),
                                      call("run_command", {{"argv", {"pwd"}}, {"cwd", "/etc"}})}));
  ASSERT_EQ(steps.size(), 4U);
  EXPECT_EQ(steps[0]["result"]["structuredContent"]["stdout"], f.file("sub") + "\n") << steps[0].dump();
  EXPECT_EQ(steps[1]["result"]["structuredContent"]["stdout"], f.file("sub") + "\n") << steps[1].dump();
  for (std::size_t i = 2; i < 4; ++i) {
    EXPECT_TRUE(steps[i]["result"]["isError"]) << steps[i].dump();
    EXPECT_NE(text_of(steps[i]["result"]).find("is outside the project"), std::string::npos)
        << steps[i].dump();
  }
}

TEST(McpServer, FetchUrlIsTheHostSideFetchAndThePolicyRefusesItFirst) {
  SKIP_WITHOUT_MCP_CLIENTS();
  Fixture f;
  f.init_git();
  // No rule allows the host, and nobody can be asked: refused before any connection.
  auto steps = sdk(f, chock_mcp_plan(f, {}, {call("fetch_url", {{"url", "http://198.51.100.7/"}})}));
  ASSERT_EQ(steps.size(), 1U);
  EXPECT_TRUE(steps[0]["result"]["isError"]) << steps[0].dump();
  EXPECT_NE(text_of(steps[0]["result"]).find("net.fetch"), std::string::npos) << steps[0].dump();
}

TEST(McpServer, ApplyNeverBringsAChangeToChockZonEvenUnderAllow) {
  SKIP_WITHOUT_MCP_CLIENTS();
  Fixture f;
  f.init_git();
  write_file(f.file("chock.zon"), kApplyAllowed);
  f.commit_all("apply allowed");
  const std::string before = ws::git_ok(f.project(), {"rev-parse", "HEAD"});
  // The call widens its own rules in the index (chock.zon is read-only in its tree), and commits that.
  const Json widen = call(
      "run_command",
      {{"argv",
        {"sh", "-c",
         "printf '.{ .network = .host }\\n' > /tmp/z && b=$(git hash-object -w /tmp/z) && "
         "git update-index --add --cacheinfo 100644,$b,chock.zon && echo more >> a.txt && git add a.txt && "
         "git -c user.name=a -c user.email=a@b commit -qm 'Fix typo'"}}});
  auto steps = sdk(f, chock_mcp_plan(f, {}, {widen, call("workspace_status"), call("apply")}));
  ASSERT_EQ(steps.size(), 3U);
  ASSERT_EQ(steps[1]["result"]["structuredContent"]["commits"].size(), 1U)
      << steps[0].dump() << steps[1].dump();
  EXPECT_TRUE(steps[2]["result"]["isError"]) << steps[2].dump();
  EXPECT_NE(text_of(steps[2]["result"]).find("chock.zon"), std::string::npos) << steps[2].dump();
  EXPECT_EQ(ws::git_ok(f.project(), {"rev-parse", "HEAD"}), before);
  EXPECT_EQ(read_file(f.file("chock.zon")), kApplyAllowed);
}

TEST(McpServer, NodeWithoutSandboxJitGetsTheWriteXorExecuteLine) {
  SKIP_WITHOUT_MCP_CLIENTS();
  Fixture f;
  f.init_git();
  Output raw;
  auto steps = sdk(
      f, chock_mcp_plan(f, {}, {call("run_command", {{"argv", {"node", "-e", "console.log(6*7)"}}})}), &raw);
  ASSERT_EQ(steps.size(), 1U) << describe(raw);
  const Json& r = steps[0]["result"];
  EXPECT_TRUE(r["isError"]) << r.dump();
  bool said = false;
  for (const auto& line : r["structuredContent"]["chock"])
    said = said || line.get<std::string>().find("write-xor-execute") != std::string::npos;
  EXPECT_TRUE(said) << r.dump();
  EXPECT_NE(text_of(r).find("Chock:\n"), std::string::npos) << r.dump();
}

TEST(McpServer, AToolTheProjectDeniesIsAbsentAndRefused) {
  SKIP_WITHOUT_MCP_CLIENTS();
  Fixture f;
  f.init_git();
  write_file(f.file("chock.zon"),
             ".{ .policy = .{ .rules = .{ .{ .action = \"tool.grep\", .decision = .deny } } } }\n");
  f.commit_all("no grep");
  auto steps = sdk(f, chock_mcp_plan(f, {}, {{{"list", true}}, call("grep", {{"pattern", "a"}})}));
  ASSERT_EQ(steps.size(), 2U);
  EXPECT_EQ(std::find(steps[0]["tools"].begin(), steps[0]["tools"].end(), "grep"), steps[0]["tools"].end());
  EXPECT_EQ(steps[0]["tools"].size(), 12U);
  EXPECT_EQ(steps[1]["error"]["code"], -32602) << steps[1].dump();
  EXPECT_NE(steps[1]["error"]["message"].get<std::string>().find("tool.grep = deny"), std::string::npos);
}

TEST(McpServer, MalformedInputGetsAnErrorAndTheServerKeepsServing) {
  Fixture f;
  f.init_git();
  std::string input;
  input +=
      R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{}}})"
      "\n";
  input += "this is not json\n";
  input += R"([{"jsonrpc":"2.0","id":1,"method":"ping"}])"
           "\n";
  input += std::string(9U << 20, 'x') + "\n";
  input += R"({"jsonrpc":"2.0","id":2,"method":"no/such/method"})"
           "\n";
  input += R"({"jsonrpc":"2.0","id":3,"method":"tools/call","params":5})"
           "\n";
  input += R"({"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"read_file","arguments":"x"}})"
           "\n";
  input += R"({"jsonrpc":"2.0","id":7,"method":"ping"})"
           "\n";
  auto lines = raw_mcp(f, input);
  ASSERT_EQ(lines.size(), 8U);
  EXPECT_EQ(lines[0]["result"]["protocolVersion"], "2025-06-18");
  const int codes[] = {-32700, -32600, -32600, -32601, -32602, -32602};
  for (std::size_t i = 0; i < 6; ++i)
    EXPECT_EQ(lines[i + 1]["error"]["code"], codes[i]) << lines[i + 1].dump();
  EXPECT_EQ(lines[4]["id"], 2);
  EXPECT_EQ(lines[7]["id"], 7);
  EXPECT_TRUE(lines[7]["result"].is_object());
}

// A version Chock does not speak is answered with its newest (the client then decides).
TEST(McpServer, AnUnknownVersionIsAnsweredWithTheNewest) {
  Fixture f;
  f.init_git();
  auto lines = raw_mcp(
      f,
      R"({"jsonrpc":"2.0","id":6,"method":"initialize","params":{"protocolVersion":"1999-01-01","capabilities":{}}})"
      "\n");
  ASSERT_EQ(lines.size(), 1U);
  EXPECT_EQ(lines[0]["result"]["protocolVersion"], "2025-11-25");
}

// One line nested 150,000 deep (300 KB, far under the 8 MiB cap): a copy
// of its value recursed once a level and chock mcp died with SIGSEGV. It is
// refused before a value is made, and the next line is served.
TEST(McpServer, DeepJsonLineIsRefusedNotACrash) {
  Fixture f;
  f.init_git();
  const std::size_t deep = 150000;
  std::string input =
      R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_file","arguments":)" +
      std::string(deep, '[') + std::string(deep, ']') + "}}\n";
  input += R"({"jsonrpc":"2.0","id":2,"method":"ping"})"
           "\n";
  RunOptions o = fixture_env(f);
  o.stdin_data = input;
  const Output out = run_process({chock_binary(), "mcp"}, o);
  EXPECT_EQ(out.status, 0) << describe(out);
  std::vector<Json> lines;
  std::istringstream in(out.out);
  for (std::string line; std::getline(in, line);) lines.push_back(Json::parse(line, nullptr, false));
  ASSERT_EQ(lines.size(), 2U) << describe(out);
  EXPECT_EQ(lines[0]["error"]["code"], -32700) << lines[0].dump();
  EXPECT_EQ(lines[0]["error"]["message"], "the line is JSON nested deeper than 64 levels");
  EXPECT_TRUE(lines[0]["id"].is_null());
  EXPECT_EQ(lines[1]["id"], 2);
  EXPECT_TRUE(lines[1]["result"].is_object()) << lines[1].dump();
}

}  // namespace
}  // namespace chock::test::mcp
