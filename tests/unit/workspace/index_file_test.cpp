// A derived base's index merged by Chock from its donor's and a small one
// git wrote: git itself must read it as the new commit's index (its
// entries, its checksum, its cache tree), and what Chock cannot merge
// faithfully is refused, never guessed.
#include <fcntl.h>
#include <gtest/gtest.h>

#include <cstdlib>

#include "process.hpp"
#include "util/fd.hpp"
#include "workspace/index_file.hpp"

namespace chock::workspace::index_file {
namespace {

class IndexFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    repo_ = dir_.path() + "/r";
    ASSERT_EQ(sh("GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1 git init -q -b main " + repo_), 0);
    ASSERT_EQ(sh("mkdir -p " + repo_ + "/a/deep " + repo_ + "/a/sub " + repo_ + "/b " + repo_ + "/c " +
                 repo_ + "/d"),
              0);
    for (const char* f : {"a/x", "a/y", "a/deep/k", "b/z", "top", "d/only"})
      test::write_file(repo_ + "/" + f, f);
    ASSERT_EQ(git("add -A"), 0);
    ASSERT_EQ(git("commit -q -m one"), 0);
    old_ = rev("HEAD");
    // The new commit: one file changed, one gone with its directory, one
    // gone beside others, new ones in a new directory and a new subdirectory.
    test::write_file(repo_ + "/a/x", "changed");
    test::write_file(repo_ + "/c/new", "new");
    test::write_file(repo_ + "/a/sub/n", "new too");
    ASSERT_EQ(git("rm -q d/only b/z"), 0);
    ASSERT_EQ(git("add -A"), 0);
    ASSERT_EQ(git("commit -q -m two"), 0);
    new_ = rev("HEAD");
    // The donor's index, as a base's is made (read-tree primes its cache tree).
    ASSERT_EQ(git("read-tree " + old_, "GIT_INDEX_FILE=" + dir_.path() + "/donor"), 0);
    // The small index of the paths written, as base_derive.cpp has git write it.
    ASSERT_EQ(sh("mkdir -p " + dir_.path() + "/tree"), 0);
    ASSERT_EQ(git("--work-tree=" + dir_.path() + "/tree restore --source=" + new_ +
                      " --staged --worktree -- a/x c/new a/sub/n",
                  "GIT_INDEX_FILE=" + dir_.path() + "/small"),
              0);
  }

  static int sh(const std::string& command) { return std::system(command.c_str()); }
  int git(const std::string& args, const std::string& env = "") {
    return sh(
        "cd " + repo_ + " && env " + env +
        " GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1 git -c user.name=t -c user.email=t@example.com " +
        args + " >" + dir_.path() + "/out 2>&1");
  }
  std::string out() { return test::read_file(dir_.path() + "/out"); }
  std::string rev(const std::string& what) {
    EXPECT_EQ(git("rev-parse " + what), 0);
    return out().substr(0, 40);
  }

  test::TempDir dir_{"chock-index-file"};
  std::string repo_, old_, new_;
};

TEST_F(IndexFileTest, TheMergedIndexIsTheNewCommitsAsGitReadsIt) {
  const std::string donor_bytes = test::read_file(dir_.path() + "/donor");
  const std::string small_bytes = test::read_file(dir_.path() + "/small");
  auto donor = parse(donor_bytes, 20);
  auto small = parse(small_bytes, 20);
  ASSERT_TRUE(donor && small);
  EXPECT_EQ(donor->entries.size(), 6U);
  EXPECT_EQ(small->entries.size(), 3U);
  EXPECT_FALSE(donor->tree.empty());
  {
    UniqueFd out(::open((dir_.path() + "/merged").c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
    ASSERT_TRUE(out);
    auto written = write_merged(out.get(), "merged", *donor, *small, {"b/z", "d/only"}, 20);
    ASSERT_TRUE(written && *written);
  }
  const std::string merged_env = "GIT_INDEX_FILE=" + dir_.path() + "/merged";
  // Git reads it (its checksum holds) and lists exactly the new commit's entries.
  ASSERT_EQ(git("ls-files -s", merged_env), 0) << out();
  const std::string listed = out();
  ASSERT_EQ(git("ls-tree -r --format='%(objectmode) %(objectname) 0\t%(path)' " + new_), 0);
  EXPECT_EQ(listed, out());
  // Its cache tree: the trees above what changed made again, the others
  // (a/deep) taken as cached; a stale one would give another tree.
  ASSERT_EQ(git("write-tree", merged_env), 0) << out();
  const std::string written = out().substr(0, 40);
  EXPECT_EQ(written, rev(new_ + "^{tree}"));
  // The written files' stat data came along: git sees the tree it wrote as clean.
  ASSERT_EQ(git("--work-tree=" + dir_.path() + "/tree diff-files --quiet -- a/x c/new a/sub/n", merged_env),
            0)
      << out();
}

TEST_F(IndexFileTest, WhatIsNotAPlainIndexIsLeftToGit) {
  const std::string copy = dir_.path() + "/copy";
  auto parsed_as = [&](const char* args) {
    EXPECT_EQ(sh("cp " + dir_.path() + "/donor " + copy), 0);
    EXPECT_EQ(git(args, "GIT_INDEX_FILE=" + copy), 0) << args << ": " << out();
    const std::string bytes = test::read_file(copy);
    return parse(bytes, 20).has_value();
  };
  EXPECT_TRUE(parsed_as("update-index --index-version 3"));
  EXPECT_FALSE(parsed_as("update-index --index-version 4"));
  EXPECT_FALSE(parsed_as("-c core.splitIndex=true update-index --split-index"));         // "link", required
  EXPECT_TRUE(parsed_as("-c core.untrackedCache=true update-index --untracked-cache"));  // "UNTR", optional
  const std::string bytes = test::read_file(dir_.path() + "/donor");
  EXPECT_FALSE(parse(bytes, 32));                              // another hash's index
  EXPECT_FALSE(parse(bytes.substr(0, bytes.size() / 2), 20));  // cut short
  EXPECT_FALSE(parse("DIRC", 20));
  // A cache tree that does not parse: nothing written, git does the work.
  Index donor;
  static constexpr char kTree[] = "a\0003 1\n";  // an entry of 3 with no object name after it
  donor.tree = std::string_view(kTree, sizeof kTree - 1);
  UniqueFd null(::open("/dev/null", O_WRONLY | O_CLOEXEC));
  auto written = write_merged(null.get(), "/dev/null", donor, Index{}, {}, 20);
  ASSERT_TRUE(written);
  EXPECT_FALSE(*written);
}

}  // namespace
}  // namespace chock::workspace::index_file
