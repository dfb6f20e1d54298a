// The watch a held overlay's holder keeps on a session's project
// (src/sandbox/tree_watch.hpp): any change below, made before the watch was
// set (told by ctime) or after (told by inotify), is seen; reads are not.
#include "sandbox/tree_watch.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <thread>

#include "process.hpp"
#include "util/fd.hpp"

namespace chock::sandbox {
namespace {

using namespace std::chrono_literals;

std::int64_t now_ns() {
  timespec t{};
  ::clock_gettime(CLOCK_REALTIME, &t);
  return static_cast<std::int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

// A tree of two levels: a.txt, sub/b.txt, sub/deep/c.txt.
struct Tree {
  test::TempDir dir{"chock-watch"};
  std::string root = dir / "p";
  UniqueFd fd;
  Tree() {
    ::mkdir(root.c_str(), 0755);
    ::mkdir((root + "/sub").c_str(), 0755);
    ::mkdir((root + "/sub/deep").c_str(), 0755);
    test::write_file(root + "/a.txt", "a\n", 0644);
    test::write_file(root + "/sub/b.txt", "b\n", 0644);
    test::write_file(root + "/sub/deep/c.txt", "c\n", 0644);
    fd.reset(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  }
};

bool fired(const UniqueFd& watch) {
  pollfd p{watch.get(), POLLIN, 0};
  return ::poll(&p, 1, 200) == 1;
}

// A tree watched from now on, then `change` made to it: whether the watch saw it.
bool sees(const std::function<void(const std::string& root)>& change) {
  Tree t;
  std::this_thread::sleep_for(20ms);  // every ctime of the tree before `since`
  UniqueFd watch = watch_tree(t.fd.get(), now_ns()).fd;
  if (!watch) {
    ADD_FAILURE() << "an unchanged tree was not watched";
    return false;
  }
  change(t.root);
  return fired(watch);
}

TEST(TreeWatch, AChangeBelowAfterTheWatchIsSeen) {
  EXPECT_TRUE(sees([](const std::string& r) { test::write_file(r + "/sub/deep/c.txt", "changed\n", 0644); }));
  EXPECT_TRUE(sees([](const std::string& r) { EXPECT_EQ(::unlink((r + "/sub/b.txt").c_str()), 0); }));
  EXPECT_TRUE(sees([](const std::string& r) { test::write_file(r + "/sub/deep/new.txt", "n\n", 0644); }));
  EXPECT_TRUE(sees([](const std::string& r) {
    EXPECT_EQ(::rename((r + "/a.txt").c_str(), (r + "/sub/a.txt").c_str()), 0);
  }));
  EXPECT_TRUE(sees([](const std::string& r) { EXPECT_EQ(::chmod((r + "/sub/deep").c_str(), 0700), 0); }));
  EXPECT_TRUE(
      sees([](const std::string& r) { EXPECT_EQ(::mkdir((r + "/sub/deep/more").c_str(), 0755), 0); }));
}

TEST(TreeWatch, ReadingTheTreeIsNoChange) {
  EXPECT_FALSE(sees([](const std::string& r) {
    EXPECT_EQ(test::read_file(r + "/sub/deep/c.txt"), "c\n");
    struct stat st {};
    EXPECT_EQ(::stat((r + "/sub/b.txt").c_str(), &st), 0);
  }));
}

// What changed between `since` (the overlay being made) and the watch.
TEST(TreeWatch, AChangeBeforeTheWatchButSinceTheTimeGivenIsSeen) {
  for (const char* rel : {"/sub/deep/c.txt", "/sub/deep", "/a.txt"}) {
    Tree t;
    std::this_thread::sleep_for(20ms);
    const std::int64_t since = now_ns();
    std::this_thread::sleep_for(20ms);
    EXPECT_EQ(::chmod((t.root + rel).c_str(), 0700), 0);
    const TreeWatch changed = watch_tree(t.fd.get(), since);
    EXPECT_FALSE(changed.fd) << rel << " changed since, and the tree was watched";
    EXPECT_EQ(changed.why, TreeWatch::Not::changed) << rel;
    // The same tree, watched from after that change: nothing since.
    std::this_thread::sleep_for(20ms);
    EXPECT_TRUE(watch_tree(t.fd.get(), now_ns()).fd) << rel;
  }
}

TEST(TreeWatch, MoreDirectoriesThanItWatchesIsNoWatch) {
  Tree t;
  std::this_thread::sleep_for(20ms);
  const TreeWatch large = watch_tree(t.fd.get(), now_ns(), 2);  // the root, sub, sub/deep
  EXPECT_FALSE(large.fd);
  EXPECT_EQ(large.why, TreeWatch::Not::too_large);
  EXPECT_TRUE(watch_tree(t.fd.get(), now_ns(), 3).fd);
}

}  // namespace
}  // namespace chock::sandbox
