// What differs between two commits, read from the object store by Chock
// (tree_diff.hpp, git_objects.hpp), must be what `git diff --no-renames
// --raw` lists, for commits loose, packed with their trees as deltas on
// offsets and on ids, behind an alternate and in a SHA-256 repository; and
// where the store is not read here, no answer is given (git is asked).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <set>

#include "process.hpp"
#include "workspace/git_objects.hpp"
#include "workspace/tree_diff.hpp"

namespace chock::workspace::tree_diff {
namespace {

class TreeDiffTest : public ::testing::Test {
 protected:
  static int sh(const std::string& command) { return std::system(command.c_str()); }
  int git(const std::string& repo, const std::string& args) {
    return sh("cd " + repo +
              " && GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1 git -c user.name=t -c "
              "user.email=t@example.com " +
              args + " >" + dir_.path() + "/out 2>&1");
  }
  std::string out() { return test::read_file(dir_.path() + "/out"); }
  std::string rev(const std::string& repo, const std::string& what) {
    EXPECT_EQ(git(repo, "rev-parse " + what), 0);
    return out().substr(0, out().find('\n'));
  }

  // A history of every kind of change a tree has: edits, new and removed
  // directories, a file that becomes a directory and back, a link, a mode,
  // a submodule, a path deep down. Its commits, oldest first.
  std::vector<std::string> history(const std::string& repo, const std::string& init_args = "") {
    EXPECT_EQ(sh("mkdir -p " + repo), 0);
    EXPECT_EQ(git(repo, "init -q -b main " + init_args), 0);
    const std::vector<std::string> steps = {
        "mkdir -p a/b/c d e && echo 1 >a/b/c/f && echo 2 >d/g && echo 3 >e/h && echo 4 >top && "
        "for i in 1 2 3 4 5 6 7 8 9; do echo $i$i >d/n$i; done",
        "echo changed >a/b/c/f && rm -r e && mkdir -p n/m && echo 5 >n/m/k",
        "rm top && mkdir top && echo 6 >top/inner && ln -s d/g link && chmod +x d/g",
        "rm -r top && echo 7 >top && rm link && mkdir link && echo 8 >link/x && rm d/n3",
        "mkdir -p deep/1/2/3/4/5/6/7/8 && echo 9 >deep/1/2/3/4/5/6/7/8/f && chmod -x d/g",
        "echo 10 >>d/n5 && rm -r a",
    };
    std::vector<std::string> commits;
    for (std::size_t i = 0; i < steps.size(); ++i) {
      EXPECT_EQ(sh("cd " + repo + " && " + steps[i]), 0) << steps[i];
      EXPECT_EQ(git(repo, "add -A"), 0);
      if (i == 2) {  // a submodule's commit (a gitlink), then moved
        EXPECT_EQ(git(repo, "update-index --add --cacheinfo 160000," +
                                std::string(init_args.empty() ? 40 : 64, '1') + ",sub"),
                  0)
            << out();
      }
      if (i == 4) {
        EXPECT_EQ(git(repo, "update-index --add --cacheinfo 160000," +
                                std::string(init_args.empty() ? 40 : 64, '2') + ",sub"),
                  0);
      }
      EXPECT_EQ(git(repo, "commit -q -m step" + std::to_string(i)), 0) << out();
      commits.push_back(rev(repo, "HEAD"));
    }
    return commits;
  }

  // git's own answer: the paths written and gone, each sorted.
  std::pair<std::vector<std::string>, std::vector<std::string>> git_diff(const std::string& repo,
                                                                         const std::string& from,
                                                                         const std::string& to) {
    EXPECT_EQ(git(repo, "diff --no-renames --raw --no-abbrev -z " + from + " " + to), 0);
    const std::string text = out();
    std::vector<std::string> fields;
    for (std::size_t at = 0; at < text.size();) {
      const std::size_t nul = text.find('\0', at);
      fields.push_back(text.substr(at, nul - at));
      at = nul + 1;
    }
    std::vector<std::string> written, gone;
    for (std::size_t i = 0; i + 1 < fields.size(); i += 2)
      (fields[i].back() == 'D' ? gone : written).push_back(fields[i + 1]);
    std::sort(written.begin(), written.end());
    std::sort(gone.begin(), gone.end());
    return {written, gone};
  }

  Result ours(const std::string& repo, const std::string& from, const std::string& to) {
    const std::size_t hash_size = from.size() / 2;
    auto store = git_objects::Store::open(repo + "/.git/objects", hash_size);
    EXPECT_TRUE(store);
    if (!store) return {};
    return between(*store, git_objects::raw_id(from), git_objects::raw_id(to), hash_size, 1000);
  }

  // Every pair of commits, both ways: the same paths as git's, and the
  // directories of the new commit among those gone and above them.
  void same_as_git(const std::string& repo, const std::vector<std::string>& commits) {
    for (const auto& from : commits) {
      for (const auto& to : commits) {
        Result r = ours(repo, from, to);
        ASSERT_EQ(r.outcome, Outcome::done) << from << ".." << to;
        auto [written, gone] = git_diff(repo, from, to);
        std::sort(r.changes.written.begin(), r.changes.written.end());
        std::sort(r.changes.gone.begin(), r.changes.gone.end());
        EXPECT_EQ(r.changes.written, written) << from << ".." << to;
        EXPECT_EQ(r.changes.gone, gone) << from << ".." << to;
        std::set<std::string> above;
        for (const auto& p : gone) {
          above.insert(p);
          for (auto slash = p.find('/'); slash != std::string::npos; slash = p.find('/', slash + 1))
            above.insert(p.substr(0, slash));
        }
        for (const auto& p : above) {
          const bool tree = git(repo, "cat-file -t " + to + ":" + p) == 0 && out() == "tree\n";
          EXPECT_EQ(r.changes.new_dirs.count(p) != 0, tree) << p << " in " << to;
        }
      }
    }
  }

  // How many trees a pack stores as deltas (verify-pack's lines with a depth).
  int deltified_trees(const std::string& repo) {
    EXPECT_EQ(sh("cd " + repo +
                 " && git verify-pack -v .git/objects/pack/*.idx | awk '$2 == \"tree\" && NF >= 7' "
                 "| wc -l >" +
                 dir_.path() + "/out"),
              0);
    return std::atoi(out().c_str());
  }

  test::TempDir dir_{"chock-tree-diff"};
};

TEST_F(TreeDiffTest, LooseCommitsDifferAsGitSaysTheyDo) {
  const std::string repo = dir_.path() + "/r";
  const auto commits = history(repo);
  same_as_git(repo, commits);
}

TEST_F(TreeDiffTest, PackedCommitsWithTreesAsDeltasDifferAsGitSaysTheyDo) {
  const std::string repo = dir_.path() + "/r";
  const auto commits = history(repo);
  // Deltas on their base's offset (git's default)...
  ASSERT_EQ(git(repo, "repack -adf -q --depth=50 --window=50"), 0) << out();
  ASSERT_EQ(sh("ls " + repo + "/.git/objects | grep -qv '^info$\\|^pack$'"), 256) << "every object packed";
  EXPECT_GT(deltified_trees(repo), 0) << "no tree stored as a delta: the test reads no delta";
  same_as_git(repo, commits);
  // ...and on their base's id.
  ASSERT_EQ(git(repo, "-c pack.deltaBaseOffset=false repack -adf -q --depth=50 --window=50"), 0) << out();
  EXPECT_GT(deltified_trees(repo), 0);
  same_as_git(repo, commits);
}

TEST_F(TreeDiffTest, ACloneSharingItsObjectsThroughAnAlternateDiffersAsGitSays) {
  const std::string repo = dir_.path() + "/r";
  auto commits = history(repo);
  ASSERT_EQ(git(repo, "repack -adq"), 0);
  const std::string clone = dir_.path() + "/c";
  ASSERT_EQ(sh("GIT_CONFIG_GLOBAL=/dev/null git clone -q --shared " + repo + " " + clone), 0);
  ASSERT_EQ(sh("cd " + clone + " && echo more >d/g && mkdir x && echo y >x/y"), 0);
  ASSERT_EQ(git(clone, "add -A"), 0);
  ASSERT_EQ(git(clone, "commit -q -m more"), 0);
  commits.push_back(rev(clone, "HEAD"));
  same_as_git(clone, commits);
}

TEST_F(TreeDiffTest, ASha256RepositoryDiffersAsGitSays) {
  const std::string repo = dir_.path() + "/r";
  if (git(dir_.path(), "init -q --object-format=sha256 probe") != 0)
    GTEST_SKIP() << "this git makes no SHA-256 repository: " << out();
  const auto commits = history(repo, "--object-format=sha256");
  ASSERT_EQ(commits.front().size(), 64U);
  same_as_git(repo, commits);
  ASSERT_EQ(git(repo, "repack -adfq"), 0);
  same_as_git(repo, commits);
}

TEST_F(TreeDiffTest, WhatIsNotReadHereGivesNoAnswer) {
  const std::string repo = dir_.path() + "/r";
  const auto commits = history(repo);
  // Too many paths differ.
  {
    auto store = git_objects::Store::open(repo + "/.git/objects", 20);
    ASSERT_TRUE(store);
    EXPECT_EQ(
        between(*store, git_objects::raw_id(commits[0]), git_objects::raw_id(commits[5]), 20, 2).outcome,
        Outcome::too_many);
  }
  // A commit the store does not have; a tree gone from it.
  EXPECT_EQ(ours(repo, commits[0], std::string(40, 'a')).outcome, Outcome::unread);
  ASSERT_EQ(git(repo, "rev-parse " + commits[1] + ":n"), 0);
  const std::string tree = out().substr(0, 40);
  ASSERT_EQ(sh("rm " + repo + "/.git/objects/" + tree.substr(0, 2) + "/" + tree.substr(2)), 0);
  EXPECT_EQ(ours(repo, commits[0], commits[1]).outcome, Outcome::unread);
  // An alternate git quotes, or one that is not there.
  ASSERT_EQ(sh("mkdir -p " + repo + "/.git/objects/info && echo '\"/x\\ty\"' >" + repo +
               "/.git/objects/info/alternates"),
            0);
  EXPECT_FALSE(git_objects::Store::open(repo + "/.git/objects", 20));
  ASSERT_EQ(sh("echo /nonexistent/objects >" + repo + "/.git/objects/info/alternates"), 0);
  EXPECT_FALSE(git_objects::Store::open(repo + "/.git/objects", 20));
  // Objects replaced: git's diff reads through refs/replace, the walk would not.
  EXPECT_FALSE(replaces_objects(repo + "/.git"));
  ASSERT_EQ(git(repo, "replace " + commits[1] + " " + commits[2]), 0) << out();
  EXPECT_TRUE(replaces_objects(repo + "/.git"));
  ASSERT_EQ(git(repo, "pack-refs --all"), 0);
  ASSERT_EQ(sh("rm -rf " + repo + "/.git/refs/replace"), 0);
  EXPECT_TRUE(replaces_objects(repo + "/.git")) << "a packed replace ref";
}

TEST(GitObjects, DeltasAndTreesOutOfBoundsAreRefused) {
  using git_objects::apply_delta;
  // Source size 3, target size 5: copy 3 bytes from offset 0, insert "xy".
  const std::string good = std::string("\x03\x05\x90\x03\x02xy", 7);
  EXPECT_EQ(apply_delta("abc", good, 100), "abcxy");
  EXPECT_FALSE(apply_delta("abcd", good, 100)) << "a base of another size";
  EXPECT_FALSE(apply_delta("abc", good, 4)) << "past the bound";
  EXPECT_FALSE(apply_delta("abc", std::string("\x03\x05\x91\x01\x03\x02xy", 8), 100))
      << "a copy past the base";
  EXPECT_FALSE(apply_delta("abc", std::string("\x03\x05\x90\x03\x05xy", 7), 100))
      << "an insert past the delta";
  EXPECT_FALSE(apply_delta("abc", std::string("\x03\x05\x00", 3), 100)) << "the reserved instruction";
  EXPECT_FALSE(apply_delta("abc", std::string("\x03\x04\x90\x03\x02xy", 7), 100)) << "longer than announced";
  using git_objects::parse_tree;
  const std::string id(20, '\x01');
  const auto entry = [&id](const std::string& mode_and_name) { return mode_and_name + '\0' + id; };
  const std::string three = entry("100755 run") + entry("40000 dir") + entry("120000 l");
  auto ok = parse_tree(three, 20);  // its names and ids are views into `three`
  ASSERT_TRUE(ok);
  ASSERT_EQ(ok->size(), 3U);
  EXPECT_EQ((*ok)[0].mode, 0100755U);
  EXPECT_EQ((*ok)[1].mode, git_objects::kTreeMode);
  EXPECT_EQ((*ok)[2].name, "l");
  EXPECT_EQ((*ok)[2].id, id);
  EXPECT_EQ((*parse_tree(entry("100664 old"), 20))[0].mode, 0100644U) << "git's canonical mode";
  EXPECT_FALSE(parse_tree(entry("100644 cut").substr(0, 20), 20));
  EXPECT_FALSE(parse_tree(entry("100644 "), 20)) << "no name";
  EXPECT_FALSE(parse_tree(entry("100644 .."), 20));
  EXPECT_FALSE(parse_tree(entry("100644 a/b"), 20));
  EXPECT_FALSE(parse_tree(entry("10064x a"), 20));
}

}  // namespace
}  // namespace chock::workspace::tree_diff
