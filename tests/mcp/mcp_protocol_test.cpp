// `chock mcp` and the MCP specification: every structured answer valid
// under the outputSchema it publishes, arguments checked against the
// inputSchema, the lifecycle's errors, batches, a failed start said to the
// client, the logging capability and the client's roots. Driven by the
// official TypeScript SDK and the Inspector CLI; raw lines
// (clients/raw_client.mjs) where no client sends the case.
#include <gtest/gtest.h>

#include "mcp_support.hpp"

namespace chock::test::mcp {
namespace {

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::string error_message(const Json& step) {
  return step.contains("error") ? step["error"].value("message", "") : std::string();
}

// The step's result was valid under the tool's outputSchema, by the SDK's
// Ajv in 2020-12 mode, which refuses the same content with a key added.
void expect_valid(const Json& step, const std::string& what) {
  ASSERT_TRUE(step.contains("result")) << what << ": " << step.dump();
  ASSERT_TRUE(step["result"].contains("structuredContent")) << what << ": " << step.dump();
  const Json& v = step["validation"];
  EXPECT_TRUE(v.value("has_schema", false)) << what << ": " << step.dump();
  EXPECT_TRUE(v.value("valid", false)) << what << ": " << v.dump() << " " << step["result"].dump();
  EXPECT_FALSE(v.value("tampered_valid", true)) << what << ": the schema let an unknown key through";
}

Json validated(const std::string& name, const Json& arguments = Json::object()) {
  Json c = call(name, arguments);
  c["validate"] = true;
  return c;
}

TEST(McpProtocol, EveryStructuredAnswerIsValidUnderTheOutputSchemaItPublishes) {
  SKIP_WITHOUT_MCP_CLIENTS();
  Fixture f;
  f.init_git();
  // The SDK's Client checks structuredContent itself once it listed the
  // tools (an answer that fails is an error step); the plan checks again
  // with Ajv 2020-12, strict.
  auto steps =
      sdk(f, chock_mcp_plan(
                 f, {},
                 {{{"list", true}},
                  {{"schemas", true}},
                  validated("workspace_status"),
                  validated("run_command", {{"argv", {"sh", "-c", "echo out; echo err >&2"}}}),
                  validated("run_command", {{"argv", {"sh", "-c", "exit 3"}}}),
                  validated("run_command", {{"argv", {"sh", "-c", "echo bg"}}, {"background", true}}),
                  validated("write_file", {{"path", "n/x.txt"}, {"content", "one\ntwo\n"}}),
                  validated("read_file", {{"path", "n/x.txt"}, {"limit", 1}}),
                  validated("edit_file", {{"path", "n/x.txt"}, {"old_string", "two"}, {"new_string", "2"}}),
                  validated("list_directory", {{"path", "."}}),
                  validated("glob", {{"pattern", "**/*.txt"}}),
                  validated("grep", {{"pattern", "one"}}),
                  validated("workspace_status")}));
  ASSERT_EQ(steps.size(), 13U);
  EXPECT_EQ(steps[1]["schema_errors"], Json::array()) << steps[1].dump();
  EXPECT_EQ(steps[1]["tools"], 13);
  int with_output = 0;
  for (const auto& d : steps[0]["definitions"]) {
    if (!d.contains("outputSchema")) continue;
    ++with_output;
    EXPECT_EQ(d["outputSchema"]["type"], "object") << d.dump();
  }
  EXPECT_EQ(with_output, 9);
  const char* names[] = {"workspace_status (no session yet)",
                         "run_command",
                         "run_command (exit 3)",
                         "run_command (background)",
                         "write_file",
                         "read_file",
                         "edit_file",
                         "list_directory",
                         "glob",
                         "grep",
                         "workspace_status"};
  for (std::size_t i = 2; i < steps.size(); ++i) expect_valid(steps[i], names[i - 2]);
  EXPECT_TRUE(steps[2]["result"]["structuredContent"]["session"].is_null());
  EXPECT_TRUE(steps[4]["result"]["isError"]) << steps[4].dump();
  EXPECT_EQ(steps[4]["result"]["structuredContent"]["exit_code"], 3);
  EXPECT_EQ(steps[12]["result"]["structuredContent"]["changed_files"], Json::array({"n/x.txt"}));

  // task_output, with the task the background call started, in its session.
  const std::string task = steps[5]["result"]["structuredContent"].value("task", "");
  const std::string session = steps[5]["result"]["structuredContent"].value("session", "");
  ASSERT_FALSE(task.empty()) << steps[5].dump();
  auto later = sdk(
      f, chock_mcp_plan(f, {"--session", session},
                        {{{"list", true}}, {{"sleep_ms", 1500}}, validated("task_output", {{"id", task}})}));
  ASSERT_EQ(later.size(), 3U);
  expect_valid(later[2], "task_output");
  EXPECT_TRUE(has(later[2]["result"]["structuredContent"].value("output", ""), "bg")) << later[2].dump();
}

TEST(McpProtocol, AnArgumentTheInputSchemaRefusesIsAToolErrorNamingTheField) {
  SKIP_WITHOUT_MCP_CLIENTS();
  Fixture f;
  f.init_git();
  auto steps = sdk(
      f, chock_mcp_plan(
             f, {},
             {call("run_command", {{"argv", {"touch", "shell-ran"}}, {"shell", true}}),
              call("read_file", {{"path", "a.txt"}, {"offset", 0}}),
              call("write_memory", {{"name", "n"}, {"kind", "rumour"}, {"description", "d"}, {"body", "b"}}),
              call("run_command", {{"argv", {"sh", "-c", "1>&2 echo; ls shell-ran"}}, {"timeout_s", -1}}),
              call("fetch_url", {{"url", "http://example.invalid/"}, {"max_bytes", 1e300}}),
              // The allowed neighbours.
              call("read_file", {{"path", "a.txt"}, {"offset", 1}}),
              call("run_command", {{"argv", {"sh", "-c", "ls shell-ran"}}, {"timeout_s", 60}})}));
  ASSERT_EQ(steps.size(), 7U);
  const std::pair<std::size_t, const char*> refused[] = {
      {0,
       "run_command: shell: not a parameter (the parameters are argv, background, cwd, publish, timeout_s)"},
      {1, "read_file: offset: 0 is below the minimum, 1"},
      {2, "write_memory: kind: \"rumour\" is not one of insight,"},
      {3, "run_command: timeout_s: -1 is not above 0"},
      {4, "fetch_url: max_bytes: 1e+300 is above the maximum"}};
  for (const auto& [i, said] : refused) {
    EXPECT_TRUE(steps[i]["result"].value("isError", false)) << steps[i].dump();
    EXPECT_TRUE(has(text_of(steps[i]["result"]), said)) << said << " | " << steps[i].dump();
  }
  EXPECT_FALSE(steps[5]["result"].value("isError", true)) << steps[5].dump();
  EXPECT_EQ(steps[5]["result"]["structuredContent"]["first_line"], 1);
  // The refused call never ran: nothing made the file it would have touched.
  EXPECT_TRUE(steps[6]["result"].value("isError", false)) << steps[6].dump();
  EXPECT_NE(steps[6]["result"]["structuredContent"]["exit_code"], 0);

  Output raw;
  Json read = inspector(f, {},
                        {"--method", "tools/call", "--tool-name", "read_file", "--tool-arg", "path=a.txt",
                         "--tool-arg", "offset=0"},
                        &raw);
  ASSERT_TRUE(read.is_object()) << describe(raw);
  EXPECT_TRUE(read.value("isError", false)) << read.dump();
  EXPECT_TRUE(has(text_of(read), "read_file: offset: 0 is below the minimum, 1")) << read.dump();
}

TEST(McpProtocol, TheLifecycleGetsTheErrorsTheSpecificationNames) {
  SKIP_WITHOUT_MCP_CLIENTS();
  Fixture f;
  f.init_git();
  const std::vector<std::string> lines = {
      R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})",
      R"({"jsonrpc":"2.0","id":2,"method":"ping"})",
      R"({"jsonrpc":"2.0","id":3,"method":"initialize","params":{"capabilities":{},"clientInfo":{"name":"c","version":"1"}}})",
      R"({"jsonrpc":"2.0","id":4,"method":"initialize","params":{"protocolVersion":20250618,"capabilities":{}}})",
      R"({"jsonrpc":"2.0","id":null,"method":"ping"})",
      initialize_line(6, "2025-06-18"),
      R"({"jsonrpc":"2.0","method":"notifications/initialized"})",
      initialize_line(7, "2025-06-18"),
      R"([{"jsonrpc":"2.0","id":8,"method":"ping"}])",
      R"({"jsonrpc":"2.0","id":9,"method":"tools/list"})"};
  Raw r = raw_client(f, {"mcp"}, lines, 9);
  ASSERT_FALSE(r.timed_out) << describe(r.process);
  ASSERT_EQ(r.lines.size(), 9U) << describe(r.process);
  // Before initialize: an invalid request; ping may come first.
  EXPECT_EQ(r.lines[0]["id"], 1);
  EXPECT_EQ(r.lines[0]["error"]["code"], -32600) << r.lines[0].dump();
  EXPECT_TRUE(has(r.lines[0]["error"]["message"], "initialize comes first"));
  EXPECT_EQ(r.lines[1]["result"], Json::object());
  // protocolVersion absent, or not a string: invalid params, with the versions spoken.
  for (std::size_t i : {2U, 3U}) {
    EXPECT_EQ(r.lines[i]["error"]["code"], -32602) << r.lines[i].dump();
    EXPECT_EQ(r.lines[i]["error"]["data"]["supported"][0], "2025-11-25") << r.lines[i].dump();
  }
  EXPECT_TRUE(has(r.lines[2]["error"]["message"], "protocolVersion is missing"));
  EXPECT_EQ(r.lines[3]["error"]["data"]["requested"], 20250618);
  // An id of null: MCP forbids it; an invalid request, its id null.
  EXPECT_TRUE(r.lines[4]["id"].is_null());
  EXPECT_EQ(r.lines[4]["error"]["code"], -32600) << r.lines[4].dump();
  EXPECT_EQ(r.lines[5]["result"]["protocolVersion"], "2025-06-18");
  EXPECT_TRUE(r.lines[5]["result"]["capabilities"].contains("logging"));
  // A second initialize: an invalid request.
  EXPECT_EQ(r.lines[6]["id"], 7);
  EXPECT_EQ(r.lines[6]["error"]["code"], -32600) << r.lines[6].dump();
  // A batch after 2025-03-26: refused as one invalid request.
  EXPECT_FALSE(r.lines[7].is_array());
  EXPECT_EQ(r.lines[7]["error"]["code"], -32600) << r.lines[7].dump();
  EXPECT_TRUE(has(r.lines[7]["error"]["message"], "not accepted in protocol version 2025-06-18"));
  // And the server serves on.
  EXPECT_EQ(r.lines[8]["id"], 9);
  EXPECT_EQ(r.lines[8]["result"]["tools"].size(), 13U) << r.lines[8].dump();
  EXPECT_EQ(r.status, 0);
}

TEST(McpProtocol, ABatchIsAnsweredAsOneArrayIn2025_03_26) {
  SKIP_WITHOUT_MCP_CLIENTS();
  Fixture f;
  f.init_git();
  const std::string batch =
      R"([{"jsonrpc":"2.0","id":10,"method":"ping"},)"
      R"({"jsonrpc":"2.0","method":"notifications/initialized"},)"
      R"({"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"b.md","content":"x"}}},)"
      R"({"jsonrpc":"2.0","id":12,"method":"no/such/method"},)"
      R"({"jsonrpc":"2.0","id":null,"method":"ping"},)"
      R"(42])";
  const std::vector<std::string> lines = {
      R"([{"jsonrpc":"2.0","id":1,"method":"ping"}])",  // before initialize: no version, no batch
      initialize_line(2, "2025-03-26"),
      batch,
      "[]",
      R"([{"jsonrpc":"2.0","method":"notifications/initialized"}])",  // nothing to answer
      R"({"jsonrpc":"2.0","id":13,"method":"ping"})"};
  Raw r = raw_client(f, {"mcp"}, lines, 5);
  ASSERT_FALSE(r.timed_out) << describe(r.process);
  ASSERT_EQ(r.lines.size(), 5U) << describe(r.process);
  EXPECT_EQ(r.lines[0]["error"]["code"], -32600) << r.lines[0].dump();
  EXPECT_TRUE(has(r.lines[0]["error"]["message"], "before initialize"));
  EXPECT_EQ(r.lines[1]["result"]["protocolVersion"], "2025-03-26");
  Json answers;
  for (const auto& line : r.lines)
    if (line.is_array()) answers = line;
  // Five answers in one array, sent once the write_file call had ended.
  ASSERT_EQ(answers.size(), 5U) << answers.dump();
  EXPECT_EQ(answer_to(r.lines, 10)["result"], Json::object());
  EXPECT_FALSE(answer_to(r.lines, 11)["result"].value("isError", true)) << answers.dump();
  EXPECT_EQ(answer_to(r.lines, 12)["error"]["code"], -32601);
  int invalid = 0;
  for (const auto& a : answers) invalid += a.contains("error") && a["error"]["code"] == -32600 ? 1 : 0;
  EXPECT_EQ(invalid, 2) << answers.dump();  // the id of null, and 42
  // The empty batch: one invalid request, not an array.
  int empty_refused = 0;
  for (const auto& line : r.lines)
    empty_refused +=
        line.is_object() && line.contains("error") && has(line["error"].value("message", ""), "empty batch");
  EXPECT_EQ(empty_refused, 1);
  EXPECT_EQ(answer_to(r.lines, 13)["result"], Json::object());
}

// Each start that cannot serve, as the client hears it: initialize answered,
// then the same one line Chock prints on stderr as every request's error.
struct BrokenStart {
  const char* what;
  std::vector<std::string> args;
  const char* reason;  // a part of the line
};

TEST(McpProtocol, AFailureAtStartIsTheErrorOfEveryRequest) {
  SKIP_WITHOUT_MCP_CLIENTS();
  Fixture f;
  f.init_git();
  Fixture broken;
  broken.init_git();
  write_file(broken.file("chock.zon"), ".{ .policy = .{ .rules = 7 } }\n");
  const std::vector<BrokenStart> cases = {
      {"an unknown session", {"--session", "nosuchsession0"}, "nosuchsession0"},
      {"a missing project", {"--project", f.project() + "/not-here"}, "not-here"},
      {"a malformed chock.zon", {"--project", broken.project()}, "chock.zon:1:"},
      {"a wrapped server's malformed chock.zon",
       {"wrap", "srv", "--project", broken.project(), "--", "true"},
       "chock.zon:1:"}};
  for (const auto& c : cases) {
    auto steps =
        sdk(f, chock_mcp_plan(f, c.args,
                              {{{"list", true}}, {{"ping", true}}, call("read_file", {{"path", "a.txt"}})}));
    ASSERT_EQ(steps.size(), 3U) << c.what;
    for (std::size_t i : {0U, 2U}) {
      EXPECT_EQ(steps[i]["error"]["code"], -32002) << c.what << ": " << steps[i].dump();
      EXPECT_TRUE(has(error_message(steps[i]), "chock: mcp: ")) << c.what << ": " << steps[i].dump();
      EXPECT_TRUE(has(error_message(steps[i]), c.reason)) << c.what << ": " << steps[i].dump();
    }
    EXPECT_TRUE(steps[1].value("pong", false)) << c.what;
    // The same line on stderr, once, and the exit status of a failed start.
    Raw r = raw_client(
        f,
        [&] {
          std::vector<std::string> a{"mcp"};
          a.insert(a.end(), c.args.begin(), c.args.end());
          return a;
        }(),
        {initialize_line(1, "2025-11-25"), R"({"jsonrpc":"2.0","id":2,"method":"tools/list"})"}, 2);
    ASSERT_EQ(r.lines.size(), 2U) << c.what << ": " << describe(r.process);
    const std::string said = r.lines[1]["error"].value("message", "");
    EXPECT_TRUE(has(r.stderr_text, said + "\n")) << c.what << ": " << r.stderr_text;
    EXPECT_EQ(r.stderr_text.find("chock: mcp: "), r.stderr_text.rfind("chock: mcp: ")) << r.stderr_text;
    EXPECT_TRUE(has(r.lines[0]["result"].value("instructions", ""), "cannot serve")) << r.lines[0].dump();
    EXPECT_NE(r.status, 0) << c.what;
  }
  // The Inspector CLI prints the reason too, not "connection closed".
  Output raw;
  (void)inspector(f, {"--session", "nosuchsession0"}, {"--method", "tools/list"}, &raw);
  EXPECT_NE(raw.status, 0);
  EXPECT_TRUE(has(raw.out + raw.err, "-32002: chock: mcp: no session 'nosuchsession0'")) << describe(raw);
  // The neighbour: the same project with a chock.zon it reads serves.
  write_file(broken.file("chock.zon"), ".{}\n");
  auto fine = sdk(f, chock_mcp_plan(f, {"--project", broken.project()}, {{{"list", true}}}));
  ASSERT_EQ(fine.size(), 1U);
  EXPECT_EQ(fine[0]["tools"].size(), 13U) << fine[0].dump();
}

TEST(McpProtocol, ChocksOwnLinesAreLogMessagesAtTheLevelTheClientSets) {
  SKIP_WITHOUT_MCP_CLIENTS();
  Fixture f;
  f.init_git();
  auto steps = sdk(f, chock_mcp_plan(f, {},
                                     {call("run_command", {{"argv", {"true"}}}),
                                      {{"logs", true}},
                                      {{"set_level", "warning"}},
                                      call("run_command", {{"argv", {"sleep", "30"}}, {"timeout_s", 1}}),
                                      call("write_file", {{"path", "x"}, {"content", "y"}}),
                                      {{"logs", true}}}));
  ASSERT_EQ(steps.size(), 6U);
  // At first (no level set): the session made, at info.
  bool session_made = false;
  for (const auto& l : steps[1]["logs"])
    session_made = session_made || (l["level"] == "info" && l["logger"] == "chock" &&
                                    has(l.value("data", ""), "git worktree workspace of " + f.project()));
  EXPECT_TRUE(session_made) << steps[1].dump();
  // Under "warning": the timeout's line, and no line of a lower level.
  bool timeout = false;
  for (const auto& l : steps[5]["logs"]) {
    EXPECT_TRUE(l["level"] == "warning" || l["level"] == "error") << l.dump();
    timeout = timeout || has(l.value("data", ""), "ran past its timeout");
  }
  EXPECT_TRUE(timeout) << steps[5].dump();
  // A level that is none of the eight: invalid params.
  Raw r = raw_client(f, {"mcp"},
                     {initialize_line(1, "2025-11-25"),
                      R"({"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"loud"}})",
                      R"({"jsonrpc":"2.0","id":3,"method":"logging/setLevel","params":{"level":"debug"}})"},
                     3);
  ASSERT_EQ(r.lines.size(), 3U) << describe(r.process);
  EXPECT_EQ(r.lines[1]["error"]["code"], -32602) << r.lines[1].dump();
  EXPECT_EQ(r.lines[2]["result"], Json::object());
}

TEST(McpProtocol, WithoutProjectTheClientsFirstOpenableRootIsServedAndSaid) {
  SKIP_WITHOUT_MCP_CLIENTS();
  Fixture f;  // where the server starts
  f.init_git();
  Fixture root;  // the client's root
  root.init_git();
  write_file(root.file("only-in-root.txt"), "r\n");
  root.commit_all("the root's file");
  const Json pwd = call("run_command", {{"argv", {"sh", "-c", "pwd; ls only-in-root.txt"}}});
  Json plan = chock_mcp_plan(f, {}, {pwd, {{"logs", true}}});
  plan["roots"] = Json::array({{{"uri", "file:///nonexistent-chock-root"}, {"name", "gone"}},
                               {{"uri", "https://example.invalid/x"}, {"name", "web"}},
                               {{"uri", "file://" + root.project()}, {"name", "project"}}});
  Output raw;
  auto steps = sdk(f, plan, &raw);
  ASSERT_EQ(steps.size(), 2U) << describe(raw);
  EXPECT_EQ(steps[0]["result"]["structuredContent"]["stdout"], root.project() + "\nonly-in-root.txt\n")
      << steps[0].dump();
  const std::string said = "serving " + root.project() + ", the client's first root that is a directory";
  bool logged = false;
  for (const auto& l : steps[1]["logs"]) logged = logged || has(l.value("data", ""), said);
  EXPECT_TRUE(logged) << steps[1].dump();
  EXPECT_TRUE(has(raw.err, "chock: mcp: " + said)) << raw.err;

  // The neighbours: --project wins over the roots; a client without roots gets where it started.
  Json given = chock_mcp_plan(f, {"--project", f.project()}, {call("run_command", {{"argv", {"pwd"}}})});
  given["roots"] = plan["roots"];
  auto with_project = sdk(f, given);
  ASSERT_EQ(with_project.size(), 1U);
  EXPECT_EQ(with_project[0]["result"]["structuredContent"]["stdout"], f.project() + "\n");
  auto no_roots = sdk(f, chock_mcp_plan(f, {}, {call("run_command", {{"argv", {"pwd"}}})}));
  ASSERT_EQ(no_roots.size(), 1U);
  EXPECT_EQ(no_roots[0]["result"]["structuredContent"]["stdout"], f.project() + "\n");

  // A start that failed (a chock.zon it cannot read where it started) is set right by a root.
  write_file(f.file("chock.zon"), ".{ .policy = 7 }\n");
  auto rescued = sdk(f, plan);
  ASSERT_EQ(rescued.size(), 2U);
  EXPECT_EQ(rescued[0]["result"]["structuredContent"]["stdout"], root.project() + "\nonly-in-root.txt\n")
      << rescued[0].dump();
}

}  // namespace
}  // namespace chock::test::mcp
