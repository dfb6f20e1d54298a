// The policy's questions under `chock mcp`: every rule that asks, during any
// tool call, becomes an elicitation request of the official SDK's client
// (its message names the action and the tool call; yes, always for this
// session, no), and a client that declared no elicitation gets a refusal
// naming the row to add. The questions a call's network asks are in
// mcp_world_test.cpp (they need the test internet).
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "mcp_support.hpp"

namespace chock::test::mcp {
namespace {

std::string rules_zon(const std::vector<std::pair<std::string, std::string>>& rules) {
  std::string zon = ".{ .policy = .{ .rules = .{ ";
  for (const auto& [action, decision] : rules)
    zon += ".{ .action = \"" + action + "\", .decision = ." + decision + " }, ";
  return zon + "} } }\n";
}

Json note(const std::string& name) {
  return call(
      "write_memory",
      {{"name", name}, {"kind", "convention"}, {"description", "a note"}, {"body", name + " body\n"}});
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(McpQuestions, MemoryWriteThatAsksIsAskedThroughTheClient) {
  SKIP_WITHOUT_MCP_CLIENTS();
  Fixture f;
  f.init_git();
  write_file(f.file("chock.zon"), rules_zon({{"memory.write", "ask"}}));
  f.commit_all("memory asks");
  Json plan = chock_mcp_plan(
      f, {},
      {call("run_command", {{"argv", {"true"}}}), note("said-no"), note("said-yes"), note("said-always"),
       note("after-always"), Json{{"elicitations", true}}, call("read_memory")});
  plan["elicit"] = Json::array({"no", "accept", "always"});
  Output raw;
  auto steps = sdk(f, plan, &raw);
  ASSERT_EQ(steps.size(), 7U) << describe(raw);
  EXPECT_TRUE(steps[1]["result"]["isError"]) << steps[1].dump();
  EXPECT_TRUE(has(text_of(steps[1]["result"]), "the person answered no")) << steps[1].dump();
  for (int i : {2, 3, 4}) EXPECT_FALSE(steps[i]["result"]["isError"]) << steps[i].dump();
  // Three questions: "always" answered the fourth write in advance.
  const Json& asked = steps[5]["elicitations"];
  ASSERT_EQ(asked.size(), 3U) << steps[5].dump();
  for (const auto& q : asked) {
    const std::string message = q["message"];
    EXPECT_TRUE(has(message, "memory.write")) << message;
    EXPECT_TRUE(has(message, "the tool call write_memory (request")) << message;
    EXPECT_TRUE(has(message, "write the note said-")) << message;
    EXPECT_EQ(q["requestedSchema"]["properties"]["answer"]["enum"],
              Json::array({"yes", "always for this session", "no"}))
        << q.dump();
  }
  const std::string listed = text_of(steps[6]["result"]);
  for (const char* written : {"said-yes", "said-always", "after-always"})
    EXPECT_TRUE(has(listed, written)) << listed;
  EXPECT_FALSE(has(listed, "said-no")) << listed;
}

TEST(McpQuestions, AClientThatCannotBeAskedGetsTheRowToAdd) {
  SKIP_WITHOUT_MCP_CLIENTS();
  Fixture f;
  f.init_git();
  write_file(f.file("chock.zon"), rules_zon({{"memory.write", "ask"}}));
  f.commit_all("memory asks");
  auto steps = sdk(f, chock_mcp_plan(f, {}, {note("unasked"), call("read_memory")}));
  ASSERT_EQ(steps.size(), 2U);
  EXPECT_TRUE(steps[0]["result"]["isError"]) << steps[0].dump();
  const std::string why = text_of(steps[0]["result"]);
  EXPECT_TRUE(has(why, "memory.write asks, and nobody is here to answer")) << why;
  EXPECT_TRUE(has(why, ".{ .action = \"memory.write\", .decision = .allow }")) << why;
  EXPECT_FALSE(has(text_of(steps[1]["result"]), "unasked")) << steps[1].dump();
}

TEST(McpQuestions, ADeclinedFetchIsRefusedBeforeAnyConnection) {
  SKIP_WITHOUT_MCP_CLIENTS();
  Fixture f;
  f.init_git();
  // No rule names the host: net.fetch asks. Declined, nothing is dialled.
  Json plan = chock_mcp_plan(
      f, {}, {call("fetch_url", {{"url", "http://198.51.100.7/page"}}), Json{{"elicitations", true}}});
  plan["elicit"] = "decline";
  auto steps = sdk(f, plan);
  ASSERT_EQ(steps.size(), 2U);
  EXPECT_TRUE(steps[0]["result"]["isError"]) << steps[0].dump();
  EXPECT_TRUE(has(text_of(steps[0]["result"]), "the person declined")) << steps[0].dump();
  ASSERT_EQ(steps[1]["elicitations"].size(), 1U) << steps[1].dump();
  const std::string message = steps[1]["elicitations"][0]["message"];
  EXPECT_TRUE(has(message, "net.fetch.198.51.100.7") || has(message, "net.fetch")) << message;
  EXPECT_TRUE(has(message, "http://198.51.100.7/page")) << message;
  EXPECT_TRUE(has(message, "the tool call fetch_url")) << message;
}

// Issue 59: run_command {background, publish} under net.publish = ask asks
// through the client as every other question.
TEST(McpQuestions, APublishedPortThatAsksIsAskedThroughTheClient) {
  SKIP_WITHOUT_MCP_CLIENTS();
  Fixture f;
  f.init_git();
  write_file(f.file("page.txt"), "served after a yes\n");
  write_file(f.file("chock.zon"), rules_zon({{"net.publish.8000", "ask"}}));
  f.commit_all("publishing asks");
  const Json serve =
      call("run_command", {{"argv", {"python3", "-m", "http.server", "8000", "--bind", "127.0.0.1"}},
                           {"background", true},
                           {"publish", {"8000"}}});
  Json plan = chock_mcp_plan(f, {}, {serve, serve, Json{{"elicitations", true}}});
  plan["elicit"] = Json::array({"decline", "accept"});
  Output raw;
  auto steps = sdk(f, plan, &raw);
  ASSERT_EQ(steps.size(), 3U) << describe(raw);
  EXPECT_TRUE(steps[0]["result"]["isError"]) << steps[0].dump();
  EXPECT_TRUE(has(text_of(steps[0]["result"]), "the person declined")) << steps[0].dump();
  const Json& r = steps[1]["result"];
  ASSERT_FALSE(r["isError"]) << r.dump();
  ASSERT_EQ(r["structuredContent"]["published"].size(), 1U) << r.dump();
  const std::string url = r["structuredContent"]["published"][0];
  Output page;
  for (int i = 0; i < 100; ++i) {
    page = run_process({"curl", "-sS", "-m", "5", url + "page.txt"});
    if (page.status == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(page.out, "served after a yes\n") << describe(page);
  Output cancel =
      run_process({chock_binary(), "tasks", "cancel", r["structuredContent"]["task"]}, fixture_env(f));
  EXPECT_EQ(cancel.status, 0) << describe(cancel);
  const Json& asked = steps[2]["elicitations"];
  ASSERT_EQ(asked.size(), 2U) << steps[2].dump();
  for (const auto& q : asked) {
    EXPECT_TRUE(has(q["message"], "net.publish.8000")) << q.dump();
    EXPECT_TRUE(has(q["message"], "the tool call run_command")) << q.dump();
  }
}

TEST(McpQuestions, ApplyAsksNamingTheCommitsAndThePathsTheyChange) {
  SKIP_WITHOUT_MCP_CLIENTS();
  Fixture f;
  f.init_git();
  const Json commit =
      call("run_command", {{"argv",
                            {"sh", "-c",
                             "echo new > named-path.txt && git add named-path.txt && "
                             "git -c user.name=a -c user.email=a@b commit -qm 'a subject to show'"}}});
  Json plan = chock_mcp_plan(f, {}, {commit, call("apply"), Json{{"elicitations", true}}});
  plan["elicit"] = "no";
  auto steps = sdk(f, plan);
  ASSERT_EQ(steps.size(), 3U);
  EXPECT_TRUE(steps[1]["result"]["isError"]) << steps[1].dump();
  EXPECT_FALSE(exists(f.file("named-path.txt")));
  ASSERT_EQ(steps[2]["elicitations"].size(), 1U) << steps[2].dump();
  const std::string message = steps[2]["elicitations"][0]["message"];
  EXPECT_TRUE(has(message, "a subject to show")) << message;
  EXPECT_TRUE(has(message, "named-path.txt")) << message;
  EXPECT_TRUE(has(message, "workspace.apply")) << message;
}

TEST(McpQuestions, ApplyOfAChangeToChockZonIsRefusedBeforeAnyQuestion) {
  SKIP_WITHOUT_MCP_CLIENTS();
  Fixture f;
  f.init_git();
  const Json widen = call(
      "run_command", {{"argv",
                       {"sh", "-c",
                        "printf '.{ .network = .host }\\n' > /tmp/z && b=$(git hash-object -w /tmp/z) && "
                        "git update-index --add --cacheinfo 100644,$b,chock.zon && "
                        "git -c user.name=a -c user.email=a@b commit -qm 'Fix typo'"}}});
  Json plan = chock_mcp_plan(f, {}, {widen, call("apply"), Json{{"elicitations", true}}});
  plan["elicit"] = "accept";
  auto steps = sdk(f, plan);
  ASSERT_EQ(steps.size(), 3U);
  EXPECT_TRUE(steps[1]["result"]["isError"]) << steps[1].dump();
  const std::string why = text_of(steps[1]["result"]);
  EXPECT_TRUE(has(why, "chock.zon")) << why;
  EXPECT_TRUE(has(why, "terminal")) << why;
  EXPECT_EQ(steps[2]["elicitations"].size(), 0U) << steps[2].dump();
  EXPECT_FALSE(exists(f.file("chock.zon")));
}

}  // namespace
}  // namespace chock::test::mcp
