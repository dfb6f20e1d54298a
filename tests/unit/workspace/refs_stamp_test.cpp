// The stamp that lets a call skip `git for-each-ref`: it must change with
// every branch or tag, and vouch for nothing it cannot see (a symbolic ref,
// a link, a reftable store, a change too recent for the kernel's clock).
#include "workspace/refs_stamp.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "process.hpp"

namespace chock::workspace::refs_stamp {
namespace {

const std::string kCommit = std::string(40, 'a') + "\n";

// A git directory's refs as git lays them out: refs/heads/main, refs/tags/.
std::string make_refs(const test::TempDir& dir, const std::string& name) {
  const std::string common = dir / name;
  for (const auto& d : {common, common + "/refs", common + "/refs/heads", common + "/refs/tags"})
    ::mkdir(d.c_str(), 0755);
  test::write_file(common + "/refs/heads/main", kCommit);
  return common;
}

void past_racy_window() {
  std::this_thread::sleep_for(std::chrono::nanoseconds(kRacyNs) + std::chrono::milliseconds(100));
}

TEST(RefsStamp, AMovedBranchOrANewTagChangesItAndAFreshChangeIsNotVouched) {
  test::TempDir dir{"chock-refs-stamp"};
  const std::string common = make_refs(dir, "git");
  EXPECT_EQ(take(common), "") << "refs made just now were vouched for";
  past_racy_window();
  const std::string quiet = take(common);
  ASSERT_NE(quiet, "");
  EXPECT_EQ(take(common), quiet);
  // git moves a branch by writing a new file and renaming it over the old one.
  test::write_file(common + "/refs/heads/main.lock", std::string(40, 'b') + "\n");
  ASSERT_EQ(::rename((common + "/refs/heads/main.lock").c_str(), (common + "/refs/heads/main").c_str()), 0);
  EXPECT_EQ(take(common), "") << "a branch moved just now was vouched for";
  past_racy_window();
  const std::string moved = take(common);
  EXPECT_NE(moved, "");
  EXPECT_NE(moved, quiet) << "a moved branch left the stamp as it was";
  test::write_file(common + "/refs/tags/v1", kCommit);
  past_racy_window();
  const std::string tagged = take(common);
  EXPECT_NE(tagged, "");
  EXPECT_NE(tagged, moved) << "a new tag left the stamp as it was";
  test::write_file(common + "/packed-refs", "# pack-refs with: peeled fully-peeled sorted\n");
  past_racy_window();
  EXPECT_NE(take(common), tagged) << "packed-refs left the stamp as it was";
}

TEST(RefsStamp, ASymbolicRefALinkOrAReftableStoreIsNeverVouched) {
  test::TempDir dir{"chock-refs-stamp"};
  const std::string plain = make_refs(dir, "plain");
  const std::string symbolic = make_refs(dir, "symbolic");
  test::write_file(symbolic + "/refs/heads/alias", "ref: refs/heads/main\n");
  const std::string linked = make_refs(dir, "linked");
  ASSERT_EQ(::symlink("main", (linked + "/refs/heads/other").c_str()), 0);
  const std::string reftable = make_refs(dir, "reftable");
  ::mkdir((reftable + "/reftable").c_str(), 0755);
  past_racy_window();
  EXPECT_NE(take(plain), "") << "the neighbour without any of them is vouched for";
  EXPECT_EQ(take(symbolic), "") << "a symbolic ref's value moves with a file not stamped";
  EXPECT_EQ(take(linked), "") << "git reads what a link names";
  EXPECT_EQ(take(reftable), "") << "a reftable store is not read";
  EXPECT_EQ(take(dir / "missing"), "");
}

// The view's other inputs: a file rewritten in place, replaced by a link, or
// gone each changes the stamp; a path that is not there is stamped missing.
TEST(RefsStamp, PathsRewrittenReplacedOrGoneChangeTheirStamp) {
  test::TempDir dir{"chock-refs-stamp"};
  const std::string root = dir.path();
  const std::string file = dir / "exclude";
  const std::vector<std::string> rels{"exclude", "attributes"};
  test::write_file(file, "*.o\n");
  EXPECT_EQ(take_paths(root, rels), "") << "a file made just now was vouched for";
  past_racy_window();
  const std::string quiet = take_paths(root, rels);
  ASSERT_NE(quiet, "");
  EXPECT_EQ(take_paths(root, rels), quiet);
  EXPECT_NE(quiet.find("\nattributes - " + std::to_string(ENOENT) + "\n"), std::string::npos) << quiet;
  test::write_file(file, "*.a\n");  // the same size, in place
  past_racy_window();
  const std::string rewritten = take_paths(root, rels);
  EXPECT_NE(rewritten, "");
  EXPECT_NE(rewritten, quiet) << "a file rewritten in place left the stamp as it was";
  ASSERT_EQ(::unlink(file.c_str()), 0);
  ASSERT_EQ(::symlink("/etc/hostname", file.c_str()), 0);
  past_racy_window();
  const std::string linked = take_paths(root, rels);
  EXPECT_NE(linked, rewritten) << "a link in place of the file left the stamp as it was";
  ASSERT_EQ(::unlink(file.c_str()), 0);
  EXPECT_NE(take_paths(root, rels), linked) << "a file gone left the stamp as it was";
}

// A call can make a directory of its session's common dir a link: what lies
// beneath that link is never looked at, only the link itself is stamped, so
// the stamp reads nothing outside the root and still changes.
TEST(RefsStamp, ALinkBeneathTheRootIsStampedNeverFollowed) {
  test::TempDir dir{"chock-refs-stamp"};
  const std::string root = dir / "common";
  const std::string outside = make_refs(dir, "outside");
  ASSERT_EQ(::mkdir(root.c_str(), 0755), 0);
  ASSERT_EQ(::symlink((outside + "/refs").c_str(), (root + "/refs").c_str()), 0);
  const std::vector<std::string> rels{"refs", "refs/heads"};
  past_racy_window();
  const std::string before = take_paths(root, rels);
  ASSERT_NE(before, "");
  EXPECT_NE(before.find("\nrefs/heads - "), std::string::npos)
      << "what lies beneath a link was stamped: " << before;
  // What the link names changes; the stamp beneath the root does not follow it there.
  test::write_file(outside + "/refs/heads/other", kCommit);
  past_racy_window();
  EXPECT_EQ(take_paths(root, rels), before) << "the stamp read a directory outside its root through a link";
  ASSERT_EQ(::unlink((root + "/refs").c_str()), 0);
  ASSERT_EQ(::symlink(outside.c_str(), (root + "/refs").c_str()), 0);
  past_racy_window();
  EXPECT_NE(take_paths(root, rels), before) << "a link replaced left the stamp as it was";
}

}  // namespace
}  // namespace chock::workspace::refs_stamp
