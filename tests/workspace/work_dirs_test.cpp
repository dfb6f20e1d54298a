// Each mount of a session's overlay works in a directory of its own
// (work_dirs.cpp): the next call removes the spent ones, and a call beside a
// running task never remakes the task's.
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "support.hpp"

namespace chock::test::ws {
namespace {

std::vector<std::string> entries(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name != "." && name != "..") out.push_back(name);
  }
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

// The workdir= of the overlay at the project's path, from a call's mountinfo line.
std::string workdir_of(const std::string& mountinfo_line) {
  const std::string key = "workdir=";
  auto at = mountinfo_line.find(key);
  if (at == std::string::npos) return "";
  at += key.size();
  return mountinfo_line.substr(at, mountinfo_line.find_first_of(", \n", at) - at);
}

void each_call_has_its_own_work_directory(Fixture& f) {
  const std::string id = kept_session(f);
  ASSERT_FALSE(id.empty());
  const std::string root = f.sessions() + "/" + id + "/work";
  // What a mount given the whole work root left (an older Chock's calls): mode 0, as overlayfs leaves it.
  ASSERT_EQ(::mkdir((root + "/work").c_str(), 0700), 0);
  ASSERT_EQ(::mkdir((root + "/work/incompat").c_str(), 0), 0);
  ASSERT_EQ(::chmod((root + "/work").c_str(), 0), 0);
  const std::string show = "grep ' " + f.project() + " ' /proc/self/mountinfo";
  std::string last;
  for (int call = 0; call < 3; ++call) {
    auto o = f.run({"--session", id}, show);
    ASSERT_EQ(o.status, 0) << describe(o);
    EXPECT_NE(o.out.find(" - overlay "), std::string::npos) << o.out;
    const std::string work = workdir_of(o.out);
    ASSERT_EQ(work.rfind(root + "/c-", 0), 0U) << o.out;
    EXPECT_NE(work, last) << "two calls shared a work directory";
    // The spent ones went while this call ran; its own stays for the next to remove.
    EXPECT_EQ(entries(root), std::vector<std::string>{work.substr(root.size() + 1)});
    last = work;
  }
}

TEST(WorkDirs, AGitSessionsCallMountsInAWorkDirectoryOfItsOwnAndTheNextClearsIt) {
  Fixture f;
  f.init_git();
  each_call_has_its_own_work_directory(f);
}

TEST(WorkDirs, AnOverlaySessionsCallsToo) {
  Fixture f;
  f.init_plain();
  each_call_has_its_own_work_directory(f);
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
