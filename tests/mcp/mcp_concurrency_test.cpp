// `chock mcp` serves an agent as its clients expect: requests at once, a
// cancel that ends the call, progress for a long call, a background call
// that answers at once, and a client that goes away ending everything.
// Driven by the official TypeScript SDK's client and the MCP Inspector's CLI.
#include <unistd.h>

#include <chrono>
#include <thread>

#include "mcp_support.hpp"

namespace chock::test::mcp {
namespace {

// A number no other process's command line holds: `sleep MARKER` is then
// findable in the host's /proc, whatever pid namespace it runs in.
std::string marker(int salt) {
  return "21474" + std::to_string(10000 + (::getpid() * 7 + salt) % 80000);
}

TEST(McpConcurrency, APingAndAFileReadAreAnsweredWhileACommandRuns) {
  SKIP_WITHOUT_MCP_CLIENTS();
  Fixture f;
  f.init_git();
  Output raw;
  auto steps = sdk(
      f,
      chock_mcp_plan(f, {},
                     {{{"concurrent",
                        {call("run_command", {{"argv", {"sleep", "10"}}}),
                         {{"ping", true}, {"delay_ms", 3000}},
                         {{"list", true}, {"delay_ms", 3500}},
                         {{"call", "read_file"}, {"arguments", {{"path", "a.txt"}}}, {"delay_ms", 4000}}}}}}),
      &raw);
  ASSERT_EQ(steps.size(), 1U) << describe(raw);
  const Json& all = steps[0]["concurrent"];
  ASSERT_EQ(all.size(), 4U) << steps[0].dump();
  const Json& command = all[0];
  EXPECT_FALSE(command["result"]["isError"]) << command.dump();
  for (int i = 1; i <= 3; ++i) {
    EXPECT_LT(all[i]["ms"].get<int>(), 1000) << all[i].dump();
    EXPECT_LT(all[i]["done_ms"].get<int>(), command["done_ms"].get<int>()) << all[i].dump();
  }
  EXPECT_TRUE(all[1].value("pong", false)) << all[1].dump();
  EXPECT_EQ(text_of(all[3]["result"]), "alpha\n\n") << all[3].dump();
}

TEST(McpConcurrency, AnAbortEndsTheSandboxedProcessAndNoResultIsSent) {
  SKIP_WITHOUT_MCP_CLIENTS();
  Fixture f;
  f.init_git();
  const std::string m = marker(1);
  Json plan = chock_mcp_plan(
      f, {},
      {{{"concurrent",
         {{{"call", "run_command"}, {"arguments", {{"argv", {"sleep", m}}}}, {"abort_after_ms", 2000}},
          {{"processes", m}, {"delay_ms", 1500}}}}},
       {{"sleep_ms", 1000}},
       {{"processes", m}}});
  plan["settle_ms"] = 1500;  // a result sent late would arrive by then
  Output raw;
  int unknown = -1;
  auto steps = sdk(f, plan, &raw, &unknown);
  ASSERT_EQ(steps.size(), 3U) << describe(raw);
  EXPECT_TRUE(steps[0]["concurrent"][0].value("aborted", false)) << steps[0].dump();
  EXPECT_EQ(steps[0]["concurrent"][1]["processes"], 1) << "the call's process was not there before the abort";
  EXPECT_EQ(steps[2]["processes"], 0) << "the call's process outlived the abort by a second";
  EXPECT_EQ(unknown, 0) << "a result came for the cancelled request";
}

TEST(McpConcurrency, ACallWithAProgressTokenIsSaidToGoOn) {
  SKIP_WITHOUT_MCP_CLIENTS();
  Fixture f;
  f.init_git();
  Output raw;
  auto steps =
      sdk(f,
          chock_mcp_plan(
              f, {},
              {{{"call", "run_command"},
                {"arguments", {{"argv", {"sh", "-c", "for i in 1 2 3 4 5; do echo step $i; sleep 1; done"}}}},
                {"progress", true}}}),
          &raw);
  ASSERT_EQ(steps.size(), 1U) << describe(raw);
  EXPECT_FALSE(steps[0]["result"]["isError"]) << steps[0].dump();
  EXPECT_GE(steps[0]["progress"].get<int>(), 3) << steps[0].dump();
}

// docs/agents.md: a client that restarts its timeout at each progress keeps
// a call longer than that timeout alive; one that does not gives up on it.
TEST(McpConcurrency, ProgressKeepsACallAliveInAClientThatRestartsItsTimeoutOnIt) {
  SKIP_WITHOUT_MCP_CLIENTS();
  Fixture f;
  f.init_git();
  const Json slow{{"argv", {"sh", "-c", "sleep 5; echo finished"}}};
  Output raw;
  auto steps =
      sdk(f,
          chock_mcp_plan(
              f, {},
              {{{"call", "run_command"},
                {"arguments", slow},
                {"progress", true},
                {"timeout_ms", 2500},
                {"reset_timeout_on_progress", true}},
               {{"call", "run_command"}, {"arguments", slow}, {"progress", true}, {"timeout_ms", 2500}}}),
          &raw);
  ASSERT_EQ(steps.size(), 2U) << describe(raw);
  EXPECT_EQ(steps[0]["result"]["structuredContent"]["stdout"], "finished\n") << steps[0].dump();
  EXPECT_GE(steps[0]["progress"].get<int>(), 3) << steps[0].dump();
  EXPECT_EQ(steps[1]["error"]["code"], -32001) << steps[1].dump();  // the SDK's RequestTimeout
}

TEST(McpConcurrency, ABackgroundCallAnswersAtOnceAndItsOutputIsReadLater) {
  SKIP_WITHOUT_MCP_CLIENTS();
  Fixture f;
  f.init_git();
  Output raw;
  auto steps =
      sdk(f,
          chock_mcp_plan(f, {},
                         {{{"concurrent",
                            {call("run_command", {{"argv", {"sh", "-c", "sleep 8; echo done-$((6 * 7))"}},
                                                  {"background", true}})}}}}),
          &raw);
  ASSERT_EQ(steps.size(), 1U) << describe(raw);
  const Json& started = steps[0]["concurrent"][0];
  ASSERT_FALSE(started["result"]["isError"]) << started.dump();
  EXPECT_LT(started["ms"].get<int>(), 1000) << started.dump();
  const std::string task = started["result"]["structuredContent"]["task"];
  const std::string session = started["result"]["structuredContent"]["session"];
  // The Inspector's CLI, in another server of the session, reads it once it has ended.
  std::string seen;
  // (Its output, not its command line, which the answer names too.)
  for (int i = 0; i < 60 && seen.find("done-42") == std::string::npos; ++i) {
    Json read =
        inspector(f, {"--session", session},
                  {"--method", "tools/call", "--tool-name", "task_output", "--tool-arg", "id=" + task});
    seen = text_of(read);
    if (seen.find("done-42") == std::string::npos) std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  EXPECT_NE(seen.find("done-42"), std::string::npos) << seen;
}

TEST(McpConcurrency, ClosingTheClientsInputMidCallEndsTheServerAndTheCall) {
  SKIP_WITHOUT_MCP_CLIENTS();
  Fixture f;
  f.init_git();
  const std::string m = marker(2);
  Output raw;
  auto steps = sdk(
      f,
      chock_mcp_plan(f, {},
                     {{{"close_during", call("run_command", {{"argv", {"sleep", m}}})}, {"after_ms", 2000}},
                      {{"processes", m}}}),
      &raw);
  ASSERT_EQ(steps.size(), 2U) << describe(raw);
  const Json& closed = steps[0]["closed"];
  EXPECT_LT(closed["ms"].get<int>(), 2000) << steps[0].dump();
  EXPECT_EQ(closed["exit_code"], 0) << "the server did not end by itself: " << steps[0].dump();
  EXPECT_EQ(steps[1]["processes"], 0) << "a process of the call outlived the server";
}

}  // namespace
}  // namespace chock::test::mcp
