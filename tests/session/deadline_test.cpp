// No call runs forever by default, and a call that waits for its session
// says so at once.
#include <unistd.h>

#include <chrono>

#include "support.hpp"

namespace chock::test::ws {
namespace {

TEST(Deadline, AHungCallEndsAtTheProjectsLoweredDefaultAndIsNamed) {
  Fixture f;
  f.init_plain();
  write_file(f.file("chock.zon"), ".{ .limits = .{ .timeout = 1 } }\n");
  const auto start = std::chrono::steady_clock::now();
  Output o = f.chock({"run", "--", "sleep", "100000"});
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
  EXPECT_NE(o.status, 0) << describe(o);
  EXPECT_NE(
      o.err.find("chock: the call ran past its timeout of 1 s (.limits.timeout) and every process of it "
                 "was stopped"),
      std::string::npos)
      << describe(o);
}

TEST(Deadline, WithoutOneTheCallGetsChocksDefault) {
  Fixture f;
  f.init_plain();
  Output o = f.run({}, "true");
  ASSERT_EQ(o.status, 0) << describe(o);
  // The session log records the deadline the call ran under: 30 minutes.
  RunOptions find;
  find.env = {{"STATE", f.state()}, {"ID", session_id(o)}};
  Output log = run_process({"sh", "-c", "cat \"$(find \"$STATE\" -name \"$ID.jsonl\")\""}, find);
  EXPECT_NE(log.out.find("\"timeout_ms\":1800000"), std::string::npos) << describe(log);
  // A project asking for more than the default is held to it, and told once.
  write_file(f.file("chock.zon"), ".{ .limits = .{ .timeout = \"2h\" } }\n");
  Output held = f.chock({"run", "--", "true"});
  EXPECT_EQ(held.status, 0) << describe(held);
  EXPECT_NE(held.err.find("the project asks for timeout 7200 s; Chock's default holds it to 1800 s"),
            std::string::npos)
      << describe(held);
}

TEST(Deadline, ASecondCallOfTheSessionRunsBesideTheFirstAndARemovalWaitsForBoth) {
  Fixture f;
  f.init_plain();
  // Older than the first call by more than the overlay holder's margin for a
  // coarse clock: else it sees the project as changed since, keeps no mount,
  // and the session's calls take turns.
  ::usleep(200'000);
  Output first = f.run({"--keep"}, "true");
  ASSERT_EQ(first.status, 0) << describe(first);
  std::string id = session_id(first);
  RunOptions o;
  o.cwd = f.project();
  o.env = {{"XDG_DATA_HOME", f.data()},
           {"XDG_STATE_HOME", f.state()},
           {"XDG_CONFIG_HOME", f.config()},
           {"CHOCK", chock_binary()},
           {"ID", id}};
  // Two shells in one checkout: the first call waits for a file only the
  // second writes, so it ends only if the second runs beside it, in the
  // same workspace.
  Output both = run_process(
      {"sh", "-c",
       "\"$CHOCK\" run --session \"$ID\" --timeout 30 -- sh -c 'until [ -e go ]; do sleep 0.05; done; echo "
       "first' & sleep 0.5; \"$CHOCK\" run --session \"$ID\" -- sh -c 'echo second; touch go'; wait"},
      o);
  EXPECT_EQ(both.status, 0) << describe(both);
  EXPECT_EQ(both.out, "second\nfirst\n") << describe(both);
  // What changes the session as a whole waits for its calls, and says so.
  Output removed = run_process({"sh", "-c",
                                "\"$CHOCK\" run --session \"$ID\" -- sleep 2 & sleep 0.7; "
                                "\"$CHOCK\" workspace remove --force \"$ID\"; wait"},
                               o);
  EXPECT_EQ(removed.status, 0) << describe(removed);
  EXPECT_NE(removed.err.find("chock: session " + id + ": waiting for its running calls to end"),
            std::string::npos)
      << describe(removed);
  EXPECT_NE(removed.err.find("removed session " + id), std::string::npos) << describe(removed);
}

}  // namespace
}  // namespace chock::test::ws
