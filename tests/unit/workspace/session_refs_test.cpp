// The refs a git session keeps of its own, as the host reads them: hostile
// files parsed line by line, and the three-way merge that brings the real
// branches up to date where the session left them alone.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "process.hpp"
#include "workspace/session_refs.hpp"

namespace chock::workspace::session_refs {
namespace {

const std::string kA(40, 'a'), kB(40, 'b'), kC(40, 'c'), kD(40, 'd');

TEST(SessionRefs, RefNamesFromASessionAreCheckedBeforeUse) {
  EXPECT_TRUE(is_ref_name("refs/heads/main"));
  EXPECT_TRUE(is_ref_name("refs/tags/v1.2"));
  EXPECT_TRUE(is_ref_name("refs/heads/feature/x-y_z"));
  for (const char* bad : {"HEAD", "refs/heads/a..b", "refs/heads/x.lock", "refs/heads/.hidden",
                          "refs/heads/a b", "refs/heads/a\nb", "refs/heads/a\x1b[31m", "refs/heads/a~1",
                          "refs/heads/a^", "refs/heads/a:b", "refs/heads/a*", "refs/heads/", "refs//heads/x",
                          "refs/heads/x@{0}", "refs/heads/a\\b", "refs/heads/x.", "../../etc/passwd"})
    EXPECT_FALSE(is_ref_name(bad)) << bad;
}

TEST(SessionRefs, PackedRefsKeepOnlyWellFormedLines) {
  const std::string text = "# pack-refs with: peeled fully-peeled sorted \n" + kA + " refs/heads/main\n^" +
                           kB + "\n" + kC + " refs/tags/v1\n" + "zz refs/heads/bad-id\n" + kD +
                           " refs/heads/bad name\n" + kD + "\n" + kA + " HEAD\n" + kB + " refs/heads/last";
  const Refs refs = parse_packed(text);
  ASSERT_EQ(refs.size(), 3U);
  EXPECT_EQ(refs.at("refs/heads/main"), kA);
  EXPECT_EQ(refs.at("refs/tags/v1"), kC);
  EXPECT_EQ(refs.at("refs/heads/last"), kB);
  EXPECT_EQ(parse_packed(packed_text(refs)), refs);
}

TEST(SessionRefs, WhatTheSessionDidNotTouchFollowsTheRepository) {
  const Refs before{{"refs/heads/main", kA},
                    {"refs/heads/old", kA},
                    {"refs/heads/moved", kA},
                    {"refs/heads/gone", kA},
                    {"refs/tags/v1", kB}};
  const Refs real{{"refs/heads/main", kC},
                  {"refs/heads/moved", kC},
                  {"refs/heads/gone", kC},
                  {"refs/tags/v1", kB},
                  {"refs/heads/new", kD}};
  // The session moved `moved`, deleted `gone`, made `mine`; it left main, old and v1 alone.
  const Refs session{{"refs/heads/main", kA},
                     {"refs/heads/old", kA},
                     {"refs/heads/moved", kB},
                     {"refs/tags/v1", kB},
                     {"refs/heads/mine", kD}};
  const Refs merged = merge(before, real, session);
  const Refs expected{{"refs/heads/main", kC},
                      {"refs/heads/moved", kB},
                      {"refs/heads/mine", kD},
                      {"refs/tags/v1", kB},
                      {"refs/heads/new", kD}};
  EXPECT_EQ(merged, expected);
}

TEST(SessionRefs, LooseRefsAreReadWithoutFollowingALinkOrOpeningAFifo) {
  test::TempDir dir("chock-refs");
  Session s;
  s.dir = dir.path();
  const std::string common = s.common();
  ASSERT_EQ(std::system(("mkdir -p " + common + "/refs/heads/sub " + common + "/refs/tags").c_str()), 0);
  test::write_file(common + "/packed-refs", kA + " refs/heads/main\n" + kA + " refs/heads/packed\n");
  test::write_file(common + "/refs/heads/main", kB + "\n");  // a loose ref wins over its packed line
  test::write_file(common + "/refs/heads/sub/x", kC + "\n");
  test::write_file(common + "/refs/heads/symbolic", "ref: refs/heads/main\n");
  test::write_file(common + "/refs/heads/garbage", "not an id\n");
  test::write_file(dir.path() + "/outside", kD + "\n");
  ASSERT_EQ(::symlink((dir.path() + "/outside").c_str(), (common + "/refs/heads/link").c_str()), 0);
  ASSERT_EQ(::symlink(dir.path().c_str(), (common + "/refs/tags/dirlink").c_str()), 0);
  ASSERT_EQ(::mkfifo((common + "/refs/heads/fifo").c_str(), 0644), 0);
  auto refs = read(s);
  ASSERT_TRUE(refs) << refs.error().message();
  const Refs expected{{"refs/heads/main", kB}, {"refs/heads/packed", kA}, {"refs/heads/sub/x", kC}};
  EXPECT_EQ(*refs, expected);
}

TEST(SessionRefs, ALinkInPlaceOfRefsOrPackedRefsIsNotFollowed) {
  test::TempDir dir("chock-refs");
  Session s;
  s.dir = dir.path();
  ASSERT_EQ(std::system(("mkdir -p " + s.common() + " " + dir.path() + "/elsewhere/heads").c_str()), 0);
  test::write_file(dir.path() + "/elsewhere/heads/x", kA + "\n");
  test::write_file(dir.path() + "/elsewhere/packed", kA + " refs/heads/y\n");
  ASSERT_EQ(::symlink((dir.path() + "/elsewhere").c_str(), (s.common() + "/refs").c_str()), 0);
  ASSERT_EQ(::symlink((dir.path() + "/elsewhere/packed").c_str(), (s.common() + "/packed-refs").c_str()), 0);
  auto refs = read(s);
  ASSERT_TRUE(refs) << refs.error().message();
  EXPECT_TRUE(refs->empty());
}

// The repository's branches and tags read from its files are what `git
// for-each-ref` lists: loose over packed, nested names, annotated tags (the
// tag object, not what it peels to); where git reads otherwise, no answer.
TEST(SessionRefs, TheRepositorysRefsReadFromItsFilesAreWhatGitLists) {
  test::TempDir dir("chock-repo-refs");
  const std::string repo = dir.path() + "/r";
  const std::string git =
      "cd " + repo +
      " && GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1 git -c user.name=t -c user.email=t@example.com ";
  ASSERT_EQ(
      std::system(("GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1 git init -q -b main " + repo).c_str()),
      0);
  for (const char* step : {"commit -q --allow-empty -m one", "branch feature/x", "tag -a -m t v1",
                           "tag light", "pack-refs --all", "commit -q --allow-empty -m two", "branch loose",
                           "tag -a -m t v2", "branch -f feature/x"})
    ASSERT_EQ(std::system((git + step).c_str()), 0) << step;
  auto direct = repository_refs_from_files(repo + "/.git");
  ASSERT_TRUE(direct.has_value());
  auto listed = repository_refs(repo + "/.git");
  ASSERT_TRUE(listed) << listed.error().message();
  EXPECT_EQ(*direct, *listed);
  EXPECT_EQ(direct->size(), 6U);  // main (loose over its packed line), feature/x, loose; v1, light, v2
  // What git would read otherwise than a ref file: git is asked.
  test::write_file(repo + "/.git/refs/heads/symbolic", "ref: refs/heads/main\n");
  EXPECT_FALSE(repository_refs_from_files(repo + "/.git").has_value());
  ASSERT_EQ(::unlink((repo + "/.git/refs/heads/symbolic").c_str()), 0);
  ASSERT_EQ(::symlink((repo + "/.git/refs/heads/main").c_str(), (repo + "/.git/refs/heads/link").c_str()), 0);
  EXPECT_FALSE(repository_refs_from_files(repo + "/.git").has_value());
  ASSERT_EQ(::unlink((repo + "/.git/refs/heads/link").c_str()), 0);
  ASSERT_TRUE(repository_refs_from_files(repo + "/.git").has_value());
  ASSERT_EQ(::mkdir((repo + "/.git/reftable").c_str(), 0755), 0);
  EXPECT_FALSE(repository_refs_from_files(repo + "/.git").has_value());
}

}  // namespace
}  // namespace chock::workspace::session_refs
