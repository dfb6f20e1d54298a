// A task's mount of its session's overlay works in a directory of its own
// (work_dirs.cpp): a call beside a running task never remakes the task's.
// A call's mount finds no `work` directory of the last one to remove: it was
// set aside before the mount and is removed once the call has started.

#include <dirent.h>
#include <fcntl.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

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

// The names in `dir` but . and ..
std::vector<std::string> names_in(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return names;
  while (const dirent* e = ::readdir(d))
    if (std::string(e->d_name) != "." && std::string(e->d_name) != "..") names.emplace_back(e->d_name);
  ::closedir(d);
  return names;
}

void sets_aside_the_last_mounts_work(Fixture& f) {
  f.set_env("CHOCK_OVERLAY_HOLD_MS", "0");  // an overlay made for each call (held_overlay_test.cpp: kept)
  const std::string id = kept_session(f, "echo one > new.txt");
  ASSERT_FALSE(id.empty());
  const std::string root = f.sessions() + "/" + id + "/work";
  ASSERT_EQ(names_in(root), std::vector<std::string>{"work"});
  // One an earlier call left (killed before it removed it): not empty, mode 0.
  const std::string left = root + "/spent.00000000deadbeef";
  ASSERT_EQ(::mkdir(left.c_str(), 0700), 0);
  const int fd = ::open((left + "/#7").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  ::close(fd);
  ASSERT_EQ(::chmod(left.c_str(), 0), 0);
  // What happens to the names in the work root during the call.
  const int watch = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  ASSERT_GE(watch, 0);
  ASSERT_GE(::inotify_add_watch(watch, root.c_str(), IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO), 0);
  auto call = f.run({"--session", id}, "cat new.txt && echo two >> new.txt && cat new.txt");
  std::vector<std::string> events;
  alignas(inotify_event) char buf[8192];
  for (ssize_t n; (n = ::read(watch, buf, sizeof buf)) > 0;) {
    for (ssize_t at = 0; at < n;) {
      const auto* e = reinterpret_cast<const inotify_event*>(buf + at);
      const std::string name = e->len > 0 ? e->name : "";
      const char* what = (e->mask & IN_CREATE)       ? "create "
                         : (e->mask & IN_DELETE)     ? "delete "
                         : (e->mask & IN_MOVED_FROM) ? "moved from "
                                                     : "moved to ";
      events.push_back(what +
                       (name.starts_with("spent.") && name != "spent.00000000deadbeef" ? "spent." : name));
      at += static_cast<ssize_t>(sizeof(inotify_event) + e->len);
    }
  }
  ::close(watch);
  ASSERT_EQ(call.status, 0) << describe(call);
  EXPECT_EQ(call.out, "one\none\ntwo\n") << describe(call);
  // Renamed first, then made anew by the mount and the old one removed (in
  // either order: an unprivileged caller's mount is made inside, beside the
  // removal): the mount never removed `work` itself.
  std::vector<std::string> seen;
  for (const auto& e : events)
    if (e != "delete spent.00000000deadbeef") seen.push_back(e);
  ASSERT_EQ(seen.size(), 4U) << ::testing::PrintToString(events);
  EXPECT_EQ(seen[0], "moved from work") << ::testing::PrintToString(events);
  EXPECT_EQ(seen[1], "moved to spent.") << ::testing::PrintToString(events);
  std::sort(seen.begin() + 2, seen.end());
  EXPECT_EQ(seen[2], "create work") << ::testing::PrintToString(events);
  EXPECT_EQ(seen[3], "delete spent.") << ::testing::PrintToString(events);
  EXPECT_NE(std::find(events.begin(), events.end(), "delete spent.00000000deadbeef"), events.end())
      << ::testing::PrintToString(events);
  EXPECT_EQ(names_in(root), std::vector<std::string>{"work"}) << "what the calls set aside is gone";
}

TEST(WorkDirs, TheLastMountsWorkDirectoryIsSetAsideAndRemovedAfterTheMountInAGitSession) {
  Fixture f;
  f.init_git();
  sets_aside_the_last_mounts_work(f);
}

TEST(WorkDirs, TheLastMountsWorkDirectoryIsSetAsideAndRemovedAfterTheMountInAnOverlaySession) {
  Fixture f;
  f.init_plain();
  sets_aside_the_last_mounts_work(f);
}

}  // namespace
}  // namespace chock::test::ws
