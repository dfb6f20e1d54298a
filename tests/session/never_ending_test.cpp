// Issue 56, item 8: a call that can never end ends now. The filter kills
// strace for its ptrace, and what strace left (its child, waiting for a
// tracer that is dead, and a `tail` reading that child's pipe) used to hold
// the call to its deadline. The keeper ends such a call at once and Chock
// names the process the filter killed; a call in which something can still
// go on (a stopped process a sibling continues, a timed sleep) runs to its
// own end. src/sandbox/stuck_watch.hpp has the rule.
#include <chrono>

#include <nlohmann/json.hpp>

#include "support.hpp"

namespace chock::test::ws {
namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kNeverEnding =
    "chock: the call could never end, so Chock ended it at once: `strace` (pid ";

class NeverEnding : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!exists("/usr/bin/strace"))
      GTEST_SKIP() << "Debian's strace is not installed (apt-get install strace)";
    f.init_plain();
  }
  // `chock run --timeout 120 --result FILE -- sh -c SCRIPT`, timed.
  Output run(const std::string& script, std::chrono::milliseconds* took, nlohmann::json* result) const {
    TempDir dir("chock-never-ending");
    const std::string file = dir / "result.json";
    const auto start = Clock::now();
    Output o = f.run({"--timeout", "120", "--result", file}, script);
    *took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
    if (exists(file)) *result = nlohmann::json::parse(read_file(file));
    return o;
  }
  Fixture f;
};

// The attack on the deadline, as the issue met it: strace's output piped.
TEST_F(NeverEnding, StraceIntoAPipeEndsAtOnceNamingStrace) {
  std::chrono::milliseconds took{};
  nlohmann::json result;
  Output o = run("strace -f true 2>&1 | tail -n 3", &took, &result);
  EXPECT_LT(took, std::chrono::seconds(15)) << describe(o);
  EXPECT_EQ(o.status, 128 + 9) << describe(o);
  EXPECT_NE(o.err.find("chock: `strace` (pid "), std::string::npos) << describe(o);
  EXPECT_NE(o.err.find(kNeverEnding), std::string::npos) << describe(o);
  EXPECT_NE(o.err.find(") was killed for calling `ptrace`, which the sandbox refuses, and every process left "
                       "was stopped or waiting on another process of the call"),
            std::string::npos)
      << describe(o);
  EXPECT_EQ(o.err.find("ran past its timeout"), std::string::npos) << describe(o);
  EXPECT_EQ(o.err.find("killed by SIGKILL"), std::string::npos) << "a neighbouring cause: " << describe(o);
  ASSERT_TRUE(result.is_object()) << describe(o);
  EXPECT_EQ(result["never_ending"]["command"], "strace") << result.dump();
  EXPECT_EQ(result["never_ending"]["call"], "ptrace") << result.dump();
  EXPECT_EQ(result["timed_out"], false) << result.dump();
}

// A stop nothing can end: after the filter's kill, a process stops itself
// and its parent waits for it.
TEST_F(NeverEnding, AStoppedProcessNobodyCanContinueEndsTheCall) {
  std::chrono::milliseconds took{};
  nlohmann::json result;
  Output o =
      run("strace true 2>/dev/null; sh -c 'kill -STOP $$; echo continued'; echo after", &took, &result);
  EXPECT_LT(took, std::chrono::seconds(15)) << describe(o);
  EXPECT_NE(o.err.find(kNeverEnding), std::string::npos) << describe(o);
  EXPECT_EQ(o.out.find("continued"), std::string::npos) << describe(o);
  EXPECT_EQ(result["never_ending"]["command"], "strace") << result.dump();
}

// The neighbour: after the same kill, a process that stops itself is
// continued by a sibling that sleeps first, and the call ends on its own.
TEST_F(NeverEnding, AStopASiblingContinuesCompletes) {
  std::chrono::milliseconds took{};
  nlohmann::json result;
  Output o =
      run("strace true 2>/dev/null; sh -c 'kill -STOP $$; echo continued' & s=$!; "
          "sleep 2; kill -CONT $s; wait $s; sleep 1 | cat; echo done",
          &took, &result);
  EXPECT_EQ(o.status, 0) << describe(o);
  EXPECT_EQ(o.out, "continued\ndone\n") << describe(o);
  EXPECT_EQ(o.err.find("could never end"), std::string::npos) << describe(o);
  EXPECT_NE(o.err.find("chock: `strace` (pid "), std::string::npos) << "no filter kill: " << describe(o);
  ASSERT_TRUE(result.is_object()) << describe(o);
  EXPECT_TRUE(result["never_ending"].is_null()) << result.dump();
}

// The rule holds only after the filter killed a process: a call that stops
// itself with no kill of the filter's is left to its deadline, where Chock
// cannot tell what a person (or another call) might still do.
TEST_F(NeverEnding, WithoutAFilterKillAStopWaitsForTheDeadline) {
  const auto start = Clock::now();
  Output o = f.run({"--timeout", "3"}, "sh -c 'kill -STOP $$'; echo after");
  EXPECT_GE(Clock::now() - start, std::chrono::seconds(3)) << describe(o);
  EXPECT_NE(o.err.find("chock: the call ran past its timeout of 3 s"), std::string::npos) << describe(o);
  EXPECT_EQ(o.err.find("could never end"), std::string::npos) << describe(o);
}

}  // namespace
}  // namespace chock::test::ws
