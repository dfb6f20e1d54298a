// Workspaces at the scale of real repositories (issue 24): a call in an open
// session runs no git on the host while the repository's refs are as they
// were, and sees them as soon as they move; removing a session is a rename,
// its deletion follows in the background and never blocks the person.
#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iterator>
#include <thread>

#include "support.hpp"

namespace chock::test::ws {
namespace {

// Names in `dir` but the sweeper's lock.
std::vector<std::string> trash_of(const Fixture& f) {
  std::vector<std::string> out;
  const std::string dir = f.data() + "/chock/trash";
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name != "." && name != ".." && name != ".sweep.lock") out.push_back(name);
  }
  ::closedir(d);
  return out;
}

// Waits (at most 20 s) for the background sweeper to empty the trash.
bool trash_empties(const Fixture& f) {
  for (int i = 0; i < 200; ++i) {
    if (trash_of(f).empty()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

class HostGit : public ::testing::Test {
 protected:
  void SetUp() override {
    f.init_git();
    // A git on PATH that counts its runs, then runs the real one.
    const std::string wrap = dir_.path() + "/wrap";
    ASSERT_EQ(::mkdir(wrap.c_str(), 0755), 0);
    write_file(wrap + "/git",
               "#!/bin/sh\necho \"$*\" >> " + dir_.path() + "/git-runs\nexec /usr/bin/git \"$@\"\n", 0755);
    path_ = wrap + ":/usr/local/bin:/usr/bin:/bin";
  }

  Output chock(const std::vector<std::string>& args) const {
    RunOptions o = f.options();
    o.env["PATH"] = path_;
    std::vector<std::string> argv{chock_binary()};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_process(argv, o);
  }

  int git_runs() const {
    std::ifstream in(dir_.path() + "/git-runs");
    return static_cast<int>(
        std::count(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>(), '\n'));
  }

  Fixture f;
  TempDir dir_;
  std::string path_;
};

TEST_F(HostGit, ACallInAnOpenSessionRunsNoGitWhileTheRefsAreAsTheyWereAndSeesThemMove) {
  Output made = chock({"run", "--keep", "--", "true"});
  ASSERT_EQ(made.status, 0) << describe(made);
  const std::string id = session_id(made);
  // Refs changed within 2 s of a call are asked of git again (refs_stamp.hpp): let them age.
  std::this_thread::sleep_for(std::chrono::milliseconds(2100));
  Output first = chock({"run", "--session", id, "--", "true"});
  ASSERT_EQ(first.status, 0) << describe(first);
  const int before = git_runs();
  Output second = chock({"run", "--session", id, "--", "git", "branch", "--list"});
  ASSERT_EQ(second.status, 0) << describe(second);
  EXPECT_EQ(git_runs(), before) << "the call ran git on the host although nothing changed";
  EXPECT_EQ(second.out.find("moved"), std::string::npos) << second.out;

  // A branch made, main moved and a tag added in the real repository, older than
  // the racy window when the next call comes: the stamp itself tells.
  git_ok(f.project(), {"branch", "moved"});
  write_file(f.file("a.txt"), "newer\n");
  f.commit_all("Newer");
  git_ok(f.project(), {"tag", "aged"});
  const std::string main = git_ok(f.project(), {"rev-parse", "main"});
  std::this_thread::sleep_for(std::chrono::milliseconds(2100));
  Output third =
      chock({"run", "--session", id, "--", "sh", "-c", "git branch --list; git tag; git rev-parse main"});
  ASSERT_EQ(third.status, 0) << describe(third);
  EXPECT_NE(third.out.find("moved"), std::string::npos) << third.out;
  EXPECT_NE(third.out.find("aged"), std::string::npos) << third.out;
  EXPECT_NE(third.out.find(main), std::string::npos) << third.out << " should name " << main;

  // Moved again right before the call: a change that young is always asked of git.
  git_ok(f.project(), {"branch", "-f", "moved", "main~1"});
  const std::string moved = git_ok(f.project(), {"rev-parse", "main~1"});
  Output fourth = chock({"run", "--session", id, "--", "git", "rev-parse", "moved"});
  ASSERT_EQ(fourth.status, 0) << describe(fourth);
  EXPECT_NE(fourth.out.find(moved), std::string::npos) << fourth.out << " should name " << moved;
}

TEST(WorkspaceRemove, ReturnsBeforeTheDeletionWhichFollowsInTheBackground) {
  Fixture f;
  f.init_git();
  Output made = f.run({"--keep"}, "mkdir -p many && for i in $(seq 200); do echo $i > many/$i; done");
  ASSERT_EQ(made.status, 0) << describe(made);
  const std::string id = session_id(made);
  // The sweeper is held back: the removal must not wait for it.
  const std::string trash = f.data() + "/chock/trash";
  ASSERT_EQ(run_process({"mkdir", "-p", trash}).status, 0);
  const int lock = ::open((trash + "/.sweep.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  ASSERT_GE(lock, 0);
  ASSERT_EQ(::flock(lock, LOCK_EX), 0);
  Output removed = f.chock({"workspace", "remove", id});
  EXPECT_EQ(removed.status, 0) << describe(removed);
  EXPECT_FALSE(exists(f.sessions() + "/" + id));
  EXPECT_EQ(f.chock({"workspace", "list"}).out.find(id), std::string::npos);
  auto waiting = trash_of(f);
  ASSERT_EQ(waiting.size(), 1U);
  EXPECT_EQ(waiting.front().rfind(id + ".", 0), 0U) << waiting.front();
  ::close(lock);
  EXPECT_TRUE(trash_empties(f)) << "the sweeper did not delete the removed session";
}

TEST(WorkspaceRemove, WhatAKilledSweeperLeftIsDeletedByTheNextRemoval) {
  Fixture f;
  f.init_git();
  // A sweeper killed half-way leaves a directory in the trash, read-only parts and all.
  const std::string left = f.data() + "/chock/trash/oldsession.0123456789abcdef";
  ASSERT_EQ(run_process({"mkdir", "-p", left + "/tree/deep"}).status, 0);
  write_file(left + "/tree/deep/file", "x\n");
  ASSERT_EQ(::chmod((left + "/tree/deep").c_str(), 0500), 0);
  // A session of one call that leaves nothing is removed, and its sweeper takes both.
  Output o = f.run({}, "true");
  ASSERT_EQ(o.status, 0) << describe(o);
  EXPECT_NE(o.err.find("removed"), std::string::npos) << describe(o);
  EXPECT_TRUE(trash_empties(f)) << "left: " << (trash_of(f).empty() ? "" : trash_of(f).front());
}

}  // namespace
}  // namespace chock::test::ws
