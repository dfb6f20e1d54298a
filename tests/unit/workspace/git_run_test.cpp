// Host-side git never hangs Chock: a git that does not end by its deadline
// is stopped, with an error that says so.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cerrno>
#include <chrono>

#include "process.hpp"
#include "workspace/git.hpp"

namespace chock::workspace::git {
namespace {

TEST(GitRun, AGitBlockedOnAFifoIsStoppedAtItsDeadline) {
  test::TempDir dir("chock-git-run");
  std::string fifo = dir / "config";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  Env env;
  env.deadline = std::chrono::seconds(1);
  auto start = std::chrono::steady_clock::now();
  auto r = run({"config", "--file", fifo, "--list"}, env);
  auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(r) << "git read a FIFO nobody writes and ended by itself";
  EXPECT_EQ(r.error().code, ETIMEDOUT);
  EXPECT_NE(r.error().message().find("git config did not finish within 1 s"), std::string::npos)
      << r.error().message();
  EXPECT_LT(took, std::chrono::seconds(10));
}

TEST(GitRun, AGitThatEndsInTimeIsUntouched) {
  Env env;
  env.deadline = std::chrono::seconds(30);
  auto r = run({"--version"}, env);
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->status, 0);
  EXPECT_EQ(r->out.rfind("git version ", 0), 0U) << r->out;
}

}  // namespace
}  // namespace chock::workspace::git
