// A task's mount of its session's overlay works in a directory of its own
// (work_dirs.cpp): a call beside a running task never remakes the task's.

#include <string>

#include "support.hpp"

namespace chock::test::ws {
namespace {

// The workdir= of the overlay at the project's path, from a call's mountinfo line.
std::string workdir_of(const std::string& mountinfo_line) {
  const std::string key = "workdir=";
  auto at = mountinfo_line.find(key);
  if (at == std::string::npos) return "";
  at += key.size();
  return mountinfo_line.substr(at, mountinfo_line.find_first_of(", \n", at) - at);
}

void calls_share_the_root_and_a_task_has_its_own(Fixture& f) {
  const std::string id = kept_session(f);
  ASSERT_FALSE(id.empty());
  const std::string root = f.sessions() + "/" + id + "/work";
  const std::string show = "grep ' " + f.project() + " ' /proc/self/mountinfo";
  auto call = f.run({"--session", id}, show);
  ASSERT_EQ(call.status, 0) << describe(call);
  EXPECT_NE(call.out.find(" - overlay "), std::string::npos) << call.out;
  EXPECT_EQ(workdir_of(call.out), root) << call.out;
  auto started = f.run({"--session", id, "--background"}, show);
  ASSERT_EQ(started.status, 0) << describe(started);
  std::string task = started.out;
  while (!task.empty() && task.back() == '\n') task.pop_back();
  auto waited = f.chock({"tasks", "wait", task, "--timeout", "60"});
  ASSERT_EQ(waited.status, 0) << describe(waited);
  const std::string own = workdir_of(waited.out);
  ASSERT_EQ(own.rfind(root + "/t-", 0), 0U) << waited.out;
  EXPECT_TRUE(exists(own)) << own;  // left to the session's removal
}

TEST(WorkDirs, AGitSessionsCallsShareTheWorkRootAndATaskHasADirectoryOfItsOwn) {
  Fixture f;
  f.init_git();
  calls_share_the_root_and_a_task_has_its_own(f);
}

TEST(WorkDirs, AnOverlaySessionsToo) {
  Fixture f;
  f.init_plain();
  calls_share_the_root_and_a_task_has_its_own(f);
}

// A later call's mount used to remake the work directory a running task's
// mount was using: the task's next copy-up found it gone.
TEST(WorkDirs, ACallBesideARunningTaskLeavesTheTasksWorkDirectoryAlone) {
  Fixture f;
  f.init_git();
  const std::string id = kept_session(f);
  ASSERT_FALSE(id.empty());
  auto started =
      f.run({"--session", id, "--background"}, "sleep 2; echo more >> sub/c.txt && echo task-wrote");
  ASSERT_EQ(started.status, 0) << describe(started);
  std::string task = started.out;
  while (!task.empty() && task.back() == '\n') task.pop_back();
  // Made once the task has started (its mount is there), while it sleeps.
  auto beside = f.run({"--session", id}, "echo other > b.txt");
  ASSERT_EQ(beside.status, 0) << describe(beside);
  auto waited = f.chock({"tasks", "wait", task, "--timeout", "60"});
  EXPECT_EQ(waited.status, 0) << describe(waited);
  EXPECT_EQ(waited.out, "task-wrote\n") << describe(waited);
  auto after = f.run({"--session", id}, "tail -n 1 sub/c.txt; cat b.txt");
  EXPECT_EQ(after.out, "more\nother\n") << describe(after);
}

}  // namespace
}  // namespace chock::test::ws
