// `chock fetch --session ID`: the fetch is judged by the session project's
// policy, logged in the session's log, and an `a` answer holds for the rest
// of the session. Run in a network namespace with nothing in it (unshare
// -rn), so that no packet can leave: the allowed address is unreachable
// there, which is the failure this test expects after the decision.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "support.hpp"

namespace chock::test::ws {
namespace {

Output fetch_offline(const Fixture& f, const std::string& id, const std::string& typed, bool terminal) {
  RunOptions o;
  o.cwd = f.project();
  o.env = {{"XDG_DATA_HOME", f.data()}, {"XDG_STATE_HOME", f.state()}, {"XDG_CONFIG_HOME", f.config()}};
  o.stdin_data = typed;
  const std::string command = chock_binary() + " fetch --session " + id + " http://198.51.100.77/page";
  if (terminal) return run_process({"unshare", "-rn", "script", "-qec", command, "/dev/null"}, o);
  return run_process(
      {"unshare", "-rn", chock_binary(), "fetch", "--session", id, "http://198.51.100.77/page"}, o);
}

TEST(FetchSession, AnAlwaysAnswerHoldsForTheSessionAndEveryHopIsInItsLog) {
  if (run_process({"unshare", "-rn", "true"}).status != 0)
    GTEST_SKIP() << "unshare -rn does not work here (user namespaces)";
  Fixture f;
  f.init_git();
  Output made = f.run({"--keep"}, "true");
  ASSERT_EQ(made.status, 0) << describe(made);
  const std::string id = session_id(made);
  ASSERT_FALSE(id.empty()) << describe(made);

  Output nobody = fetch_offline(f, id, "", false);
  EXPECT_EQ(nobody.status, 1) << describe(nobody);
  EXPECT_NE(nobody.err.find("net.fetch.ip4.198.51.100.77 asks, and nobody is here to answer"),
            std::string::npos)
      << nobody.err;
  EXPECT_EQ(nobody.err.find("logged as session"), std::string::npos) << "the session's own log is used";

  Output always = fetch_offline(f, id, "a\n", true);
  EXPECT_NE(always.out.find("[a]lways for this session"), std::string::npos) << always.out;
  EXPECT_EQ(always.status, 3) << describe(
      always);  // allowed, then unreachable: nothing leaves this namespace
  // Chock dials the checked address itself, so the failure is its own dial's.
  EXPECT_NE(always.out.find("connect: 198.51.100.77:80: ENETUNREACH"), std::string::npos) << always.out;

  Output again = fetch_offline(f, id, "", false);
  EXPECT_EQ(again.status, 3) << describe(again);  // no question this time: the session's answer holds

  std::ifstream in(log_path(f, id));
  std::vector<nlohmann::json> fetches;
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line);
    if (j["event"] == "net.fetch") fetches.push_back(j);
  }
  ASSERT_EQ(fetches.size(), 3U);
  EXPECT_EQ(fetches[0]["refused"].get<std::string>().find("nobody is here to answer") != std::string::npos,
            true);
  EXPECT_EQ(fetches[1]["rule"], "answered always at the terminal");
  EXPECT_EQ(fetches[2]["rule"], "answered always earlier in this session");
  for (const auto& e : fetches) EXPECT_EQ(e["action"], "net.fetch.ip4.198.51.100.77");
}

}  // namespace
}  // namespace chock::test::ws
