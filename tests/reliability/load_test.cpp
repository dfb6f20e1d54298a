// Load: many calls one after the other, and many at once. After them nothing
// of Chock's is left (descriptors, processes, zombies, mounts, temporary
// files, cgroup directories, data beyond the session's own), every call is
// in the session log once, and the log verifies. The short profile runs in
// CI; CHOCK_RELIABILITY_PROFILE=long runs the README's counts.
#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "reliability_support.hpp"
#include "support.hpp"

namespace chock::test::reliability {
namespace {

using ws::describe;
using ws::Fixture;
using ws::session_id;

std::size_t count_of(const std::vector<std::string>& lines, const std::string& event) {
  return static_cast<std::size_t>(std::count_if(lines.begin(), lines.end(), [&](const std::string& l) {
    return has(l, "\"event\":\"" + event + "\"");
  }));
}

class Load : public ::testing::Test {
 protected:
  void SetUp() override {
    f.init_git();
    tmp_ = f.data() + "/../tmp";
    ASSERT_EQ(::mkdir(tmp_.c_str(), 0700), 0);
  }
  RunOptions options() const {
    RunOptions o = f.options();
    o.env["TMPDIR"] = tmp_;
    o.timeout = std::chrono::seconds(120);
    return o;
  }
  Output chock(const std::vector<std::string>& args) const { return test::chock(args, options()); }
  Watched watched(const std::string& except = {}) const {
    return Watched{{f.project(), f.data(), f.state(), f.cache(), tmp_},
                   tmp_,
                   f.data(),
                   {except, f.data() + "/chock/git-cache"}};
  }

  Fixture f;
  std::string tmp_;
};

TEST_F(Load, SequentialCallsInOneSessionLeaveNothingBehind) {
  const std::size_t calls = profile_count(150, 2000);
  Output first = chock({"run", "--keep", "--", "sh", "-c", "ls /proc/self/fd | wc -l"});
  ASSERT_EQ(first.status, 0) << describe(first);
  const std::string id = session_id(first);
  const std::string session_dir = f.sessions() + "/" + id;
  const Footprint before = footprint(watched(session_dir));
  for (std::size_t i = 0; i < calls; ++i) {
    Output o = chock({"run", "--session", id, "--", "true"});
    ASSERT_EQ(o.status, 0) << "call " << i << ": " << describe(o);
  }
  Output last = chock({"run", "--session", id, "--", "sh", "-c", "ls /proc/self/fd | wc -l"});
  ASSERT_EQ(last.status, 0) << describe(last);
  EXPECT_EQ(last.out, first.out) << "the descriptors a call is given grew";
  const Footprint after = footprint(watched(session_dir));
  EXPECT_EQ(describe(after), describe(before));
  std::printf("reliability: %zu calls in one session; before: %s; after: %s\n", calls + 2,
              describe(before).c_str(), describe(after).c_str());
  auto lines = ws::log_lines(f, id);
  EXPECT_EQ(count_of(lines, "tool.call"), calls + 2);
  EXPECT_EQ(count_of(lines, "tool.result"), calls + 2);
  Output verified = chock({"sessions", "verify", id});
  EXPECT_EQ(verified.status, 0) << describe(verified);
}

TEST_F(Load, SequentialSandboxCallsLeaveNothingBehind) {
  const std::size_t calls = profile_count(150, 2000);
  const Footprint before = footprint(watched());
  for (std::size_t i = 0; i < calls; ++i) {
    Output o = chock({"sandbox", "--", "true"});
    ASSERT_EQ(o.status, 0) << "call " << i << ": " << describe(o);
  }
  const Footprint after = footprint(watched());
  EXPECT_EQ(describe(after), describe(before));
  std::printf("reliability: %zu sandbox calls; before: %s; after: %s\n", calls, describe(before).c_str(),
              describe(after).c_str());
}

// Calls of one session run at once in its one workspace, as shells in one
// checkout do: each of the 16 completes, sees what the others wrote once
// they are done, and is logged once.
TEST_F(Load, SixteenCallsOnOneSessionRunAtOnceAndAreEachLoggedOnce) {
  Output first = chock({"run", "--keep", "--", "true"});
  ASSERT_EQ(first.status, 0) << describe(first);
  const std::string id = session_id(first);
  const std::size_t parallel = 16;
  std::vector<Output> outs(parallel);
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < parallel; ++i)
    threads.emplace_back([&, i] {
      const std::string n = std::to_string(i);
      outs[i] =
          chock({"run", "--session", id, "--", "sh", "-c", "echo " + n + " > mark-" + n + "; echo " + n});
    });
  for (auto& t : threads) t.join();
  std::set<std::string> said;
  for (std::size_t i = 0; i < parallel; ++i) {
    EXPECT_EQ(outs[i].status, 0) << describe(outs[i]);
    EXPECT_EQ(outs[i].out, std::to_string(i) + "\n") << describe(outs[i]);
    said.insert(outs[i].out);
  }
  EXPECT_EQ(said.size(), parallel);
  Output all = chock({"run", "--session", id, "--", "sh", "-c", "cat mark-* | sort -n | tr '\\n' ' '"});
  EXPECT_EQ(all.out, "0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 ") << describe(all);
  auto lines = ws::log_lines(f, id);
  EXPECT_EQ(count_of(lines, "tool.call"), parallel + 2);
  EXPECT_EQ(count_of(lines, "tool.result"), parallel + 2);
  EXPECT_EQ(chock({"sessions", "verify", id}).status, 0);
}

TEST_F(Load, SixteenSessionsOfOneProjectEachComplete) {
  const std::size_t parallel = 16;
  std::vector<Output> outs(parallel);
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < parallel; ++i)
    threads.emplace_back([&, i] {
      outs[i] =
          chock({"run", "--keep", "--", "sh", "-c", "cat a.txt; echo " + std::to_string(i) + " > mine"});
    });
  for (auto& t : threads) t.join();
  std::set<std::string> ids;
  for (std::size_t i = 0; i < parallel; ++i) {
    EXPECT_EQ(outs[i].status, 0) << describe(outs[i]);
    EXPECT_EQ(outs[i].out, "alpha\n") << describe(outs[i]);
    ids.insert(session_id(outs[i]));
  }
  EXPECT_EQ(ids.size(), parallel);
  for (const auto& id : ids) {
    Output o = chock({"run", "--session", id, "--", "cat", "mine"});
    EXPECT_EQ(o.status, 0) << describe(o);
  }
}

// Two sessions' commits applied onto one branch at the same moment: both
// reach it, one after the other, or one refuses with its work parked and a
// later apply brings it. Never a lost commit, never a half-made branch.
TEST_F(Load, TwoAppliesAtOnceLoseNothing) {
  std::vector<std::string> ids;
  for (const char* name : {"one", "two"}) {
    Output o = chock({"run", "--keep", "--", "sh", "-c",
                      std::string("echo ") + name + " > " + name + ".txt && git add " + name +
                          ".txt && git -c user.name=t -c user.email=t@t commit -qm " + name});
    ASSERT_EQ(o.status, 0) << describe(o);
    ids.push_back(session_id(o));
  }
  std::vector<Output> outs(2);
  std::thread a([&] { outs[0] = chock({"apply", ids[0], "--yes"}); });
  std::thread b([&] { outs[1] = chock({"apply", ids[1], "--yes"}); });
  a.join();
  b.join();
  for (std::size_t i = 0; i < 2; ++i) {
    if (outs[i].status == 0) continue;
    EXPECT_EQ(outs[i].status, 1) << describe(outs[i]);
    EXPECT_TRUE(has(outs[i].err, "parked at refs/chock/" + ids[i]) || has(outs[i].err, "another"))
        << describe(outs[i]);
    Output again = chock({"apply", ids[i], "--yes"});
    EXPECT_EQ(again.status, 0) << describe(again);
  }
  const std::string log = ws::git_ok(f.project(), {"log", "--format=%s", "main"});
  EXPECT_TRUE(has(log, "one") && has(log, "two")) << log;
  EXPECT_EQ(ws::git(f.project(), {"fsck", "--no-progress"}).status, 0);
  EXPECT_EQ(test::read_file(f.file("one.txt")), "one\n");
  EXPECT_EQ(test::read_file(f.file("two.txt")), "two\n");
}

}  // namespace
}  // namespace chock::test::reliability
