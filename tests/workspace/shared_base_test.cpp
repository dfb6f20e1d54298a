// Shared bases (issue 24): git sessions at one commit are overlays over one
// read-only checkout of it, kept once in the data directory; each session
// holds only its own changes; gc removes a base no session uses and never
// one in use; a base killed half-made is never used.
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <set>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "bases_support.hpp"
#include "support.hpp"
#include "workspace/index_file.hpp"

extern char** environ;

namespace chock::test::ws {
namespace {

// A call's output of three parts cut by "---" lines: the paths git tracks,
// the files present (both sorted), and what follows. Empty where not three.
struct Listing {
  std::vector<std::string> tracked, present;
  std::string rest;
  bool whole = false;
};
Listing listing_of(const std::string& out) {
  Listing l;
  const auto cut1 = out.find("---\n");
  const auto cut2 = cut1 == std::string::npos ? cut1 : out.find("---\n", cut1 + 4);
  if (cut2 == std::string::npos) return l;
  l.tracked = lines(out.substr(0, cut1));
  l.present = lines(out.substr(cut1 + 4, cut2 - cut1 - 4));
  l.rest = out.substr(cut2 + 4);
  l.whole = true;
  return l;
}

TEST(SharedBase, TenSessionsAtOneCommitShareOneBaseAndSeeNothingOfEachOther) {
  Fixture f;
  f.init_git();
  many_files(f, 200, 4096);
  std::vector<std::string> ids;
  for (int i = 0; i < 10; ++i) {
    Output o = f.run({"--keep"}, "echo " + std::to_string(i) + " > mine.txt; echo changed-" +
                                     std::to_string(i) + " > a.txt; rm b.txt");
    ASSERT_EQ(o.status, 0) << describe(o);
    ids.push_back(session_id(o));
  }
  const BaseDir b = bases_of(f);
  ASSERT_EQ(b.bases.size(), 1U) << "one base for one commit";
  EXPECT_TRUE(b.leftovers.empty());
  const std::string tree = base_dir(f, b.bases.front()) + "/tree";
  // The base is as the commit has it: no session's write reached it.
  EXPECT_EQ(read_file(tree + "/a.txt"), "alpha\n");
  EXPECT_TRUE(exists(tree + "/b.txt"));
  EXPECT_FALSE(exists(tree + "/mine.txt"));
  for (int i = 0; i < 10; ++i) {
    Output o = f.chock({"run", "--session", ids[static_cast<std::size_t>(i)], "--", "sh", "-c",
                        "cat mine.txt a.txt; test -e b.txt && echo b-is-back; cat m3/f3 | wc -c"});
    ASSERT_EQ(o.status, 0) << describe(o);
    EXPECT_EQ(o.out, std::to_string(i) + "\nchanged-" + std::to_string(i) + "\n4096\n");
    // Its own changes only: far less than the 800 KiB the base holds.
    Output du = run_process({"du", "-sk", f.sessions() + "/" + ids[static_cast<std::size_t>(i)]});
    EXPECT_LT(std::stoi(du.out), 400) << du.out;
  }
  // Inside, the base is not a path at all: only the overlay over it.
  Output inside = f.chock({"run", "--session", ids[0], "--", "sh", "-c",
                           "test -e '" + tree + "' && echo reachable; echo x > '" + tree + "/a.txt'"});
  EXPECT_NE(inside.status, 0) << describe(inside);
  EXPECT_EQ(inside.out, "") << describe(inside);
  EXPECT_EQ(read_file(tree + "/a.txt"), "alpha\n");
}

// The script whose output listing_of reads (the paths git tracks, the
// files present), then `rest`.
std::string listing_then(const std::string& rest) {
  return "git ls-tree -r --name-only HEAD; echo ---; "
         "find . -path ./.git -prune -o -type f -print | sed 's|^\\./||'; echo ---; " +
         rest;
}

// 50 files committed and a kept session at that commit: its base's name.
std::string first_base(Fixture& f) {
  many_files(f, 50, 8);
  Output first = f.run({"--keep"}, "true");
  EXPECT_EQ(first.status, 0) << describe(first);
  const auto bases = bases_of(f).bases;
  return bases.empty() ? std::string() : bases.front();
}

TEST(SharedBase, ASessionAtANewerCommitSeesExactlyThatCommitsTreeMadeFromTheOlderBase) {
  Fixture f;
  f.init_git();
  many_files(f, 50, 8);
  Output first = f.run({"--keep"}, "true");
  ASSERT_EQ(first.status, 0) << describe(first);
  const std::string older = bases_of(f).bases.front();
  // The next commit changes, adds, removes and renames.
  write_file(f.file("a.txt"), "alpha two\n");
  ::mkdir(f.file("new").c_str(), 0755);
  write_file(f.file("new/d.txt"), "delta\n");
  ASSERT_EQ(::unlink(f.file("b.txt").c_str()), 0);
  git_ok(f.project(), {"add", "-A"});
  git_ok(f.project(), {"mv", "sub/c.txt", "sub/moved.txt"});
  git_ok(f.project(), {"commit", "-qm", "second"});
  Output second = f.run({"--keep"}, listing_then("cat a.txt; git status --porcelain"));
  ASSERT_EQ(second.status, 0) << describe(second);
  const Listing at_second = listing_of(second.out);
  ASSERT_TRUE(at_second.whole) << second.out;
  const auto& tracked = at_second.tracked;
  EXPECT_EQ(tracked, at_second.present);
  EXPECT_EQ(tracked.size(), 53U);
  EXPECT_TRUE(std::find(tracked.begin(), tracked.end(), "sub/moved.txt") != tracked.end());
  EXPECT_TRUE(std::find(tracked.begin(), tracked.end(), "b.txt") == tracked.end());
  EXPECT_EQ(at_second.rest, "alpha two\n") << "a clean status";
  // The derived index's cache tree (index_file.hpp): what git commits from it is the commit's tree.
  const std::string same_tree = "test \"$(git write-tree)\" = \"$(git rev-parse HEAD^{tree})\" && echo same";
  Output tree2 = f.chock({"run", "--session", session_id(second), "--", "sh", "-c", same_tree});
  EXPECT_EQ(tree2.out, "same\n") << describe(tree2);
  ASSERT_EQ(bases_of(f).bases.size(), 2U);
  const std::string newer = other_base(f, older);
  // Made from the older base: the newer one's own tree holds what differs
  // and a whiteout for each path gone, and stacks on the older one.
  EXPECT_EQ(
      lines(run_process({"sh", "-c", "cd '" + base_dir(f, newer) + "/tree' && find . -type f | sort"}).out),
      (std::vector<std::string>{"./a.txt", "./new/d.txt", "./sub/moved.txt"}));
  EXPECT_EQ(
      lines(run_process({"sh", "-c", "cd '" + base_dir(f, newer) + "/tree' && find . -type c | sort"}).out),
      (std::vector<std::string>{"./b.txt", "./sub/c.txt"}));
  EXPECT_EQ(read_file(base_dir(f, newer) + "/layers"), older + "\n");
  struct stat in_older {
  }, changed{};
  ASSERT_EQ(::stat((base_dir(f, older) + "/tree/m3/f3").c_str(), &in_older), 0);
  ASSERT_EQ(::stat((base_dir(f, newer) + "/tree/a.txt").c_str(), &changed), 0);
  EXPECT_EQ(changed.st_uid, in_older.st_uid) << "a file git wrote is not the run uid's";
  EXPECT_EQ(read_file(base_dir(f, older) + "/tree/a.txt"), "alpha\n");
  EXPECT_EQ(read_file(base_dir(f, older) + "/tree/b.txt"), "bravo\n");
  // Inside, an unchanged file is the older base's own inode: nothing was copied.
  Output inode = f.chock({"run", "--session", session_id(second), "--", "stat", "-c", "%i", "m3/f3"});
  EXPECT_EQ(inode.out, std::to_string(in_older.st_ino) + "\n") << describe(inode);
  // The older session still sees its own commit.
  Output old = f.chock(
      {"run", "--session", session_id(first), "--", "sh", "-c", "cat b.txt a.txt; git status --porcelain"});
  EXPECT_EQ(old.out, "bravo\nalpha\n") << describe(old);

  // A third commit, from the second base: a directory gone whole, a file
  // that becomes a directory, one that becomes a link.
  git_ok(f.project(), {"rm", "-rq", "m7"});
  ASSERT_EQ(::unlink(f.file("a.txt").c_str()), 0);
  ::mkdir(f.file("a.txt").c_str(), 0755);
  write_file(f.file("a.txt/inner"), "inner\n");
  ASSERT_EQ(::unlink(f.file("new/d.txt").c_str()), 0);
  ASSERT_EQ(::symlink("../sub/moved.txt", f.file("new/d.txt").c_str()), 0);
  git_ok(f.project(), {"add", "-A"});
  git_ok(f.project(), {"commit", "-qm", "third"});
  Output third = f.run({"--keep"},
                       "git ls-tree -r --name-only HEAD; echo ---; "
                       "find . -path ./.git -prune -o \\( -type f -o -type l \\) -print | sed 's|^\\./||'; "
                       "echo ---; test -e m7 && echo m7-is-there; cat a.txt/inner; readlink new/d.txt; "
                       "git status --porcelain");
  ASSERT_EQ(third.status, 0) << describe(third);
  const Listing at_third = listing_of(third.out);
  ASSERT_TRUE(at_third.whole) << third.out;
  EXPECT_EQ(at_third.tracked, at_third.present);
  EXPECT_EQ(at_third.tracked.size(), 48U);
  EXPECT_EQ(at_third.rest, "inner\n../sub/moved.txt\n") << "m7 gone, a clean status";
  Output tree3 = f.chock({"run", "--session", session_id(third), "--", "sh", "-c", same_tree});
  EXPECT_EQ(tree3.out, "same\n") << describe(tree3);
  ASSERT_EQ(bases_of(f).bases.size(), 3U);
  std::string newest;
  for (const auto& b : bases_of(f).bases)
    if (b != older && b != newer) newest = b;
  EXPECT_EQ(read_file(base_dir(f, newest) + "/layers"), newer + "\n" + older + "\n");
  struct stat gone {};
  ASSERT_EQ(::lstat((base_dir(f, newest) + "/tree/m7").c_str(), &gone), 0);
  EXPECT_TRUE(S_ISCHR(gone.st_mode) && gone.st_rdev == 0) << "the directory gone whole is one whiteout";

  // A base others stack on is kept while they are, though no session uses it.
  for (const auto& o : {first, second})
    ASSERT_EQ(f.chock({"workspace", "remove", "--force", session_id(o)}).status, 0);
  Output gc = f.chock({"workspace", "gc"});
  EXPECT_NE(gc.err.find("removed 0 shared base(s)"), std::string::npos) << describe(gc);
  EXPECT_EQ(bases_of(f).bases.size(), 3U);
  Output still = f.chock({"run", "--session", session_id(third), "--", "cat", "b.txt", "m3/f3"});
  EXPECT_EQ(still.status, 1) << describe(still);
  EXPECT_EQ(still.out, std::string(8, 'd')) << describe(still);

  // Once no session uses the top of the stack, one gc frees it whole.
  ASSERT_EQ(f.chock({"workspace", "remove", "--force", session_id(third)}).status, 0);
  Output all = f.chock({"workspace", "gc"});
  EXPECT_NE(all.err.find("removed 3 shared base(s)"), std::string::npos) << describe(all);
  EXPECT_NE(all.err.find("kept 0 in use"), std::string::npos) << describe(all);
  EXPECT_TRUE(bases_of(f).bases.empty());
}

// The base of the project's HEAD.
std::string head_base(const Fixture& f) {
  const std::string head = git_ok(f.project(), {"rev-parse", "HEAD"});
  for (const auto& b : bases_of(f).bases)
    if (b.ends_with("-" + head.substr(0, head.find('\n')))) return b;
  return {};
}

// A stack of derived bases grows to kMaxLayers (8) trees; the base after it
// is derived from the stack's bottom, a whole checkout, by all that differs
// since: a stack of two, not a fresh checkout of every file.
TEST(SharedBase, AFullStackIsDerivedAgainFromItsBottomNotCheckedOutWhole) {
  Fixture f;
  f.init_git();
  many_files(f, 60, 8);  // a fifth of the entries may differ from a donor: 12
  ASSERT_EQ(f.run({}, "true").status, 0);
  const std::string bottom = head_base(f);
  ASSERT_FALSE(bottom.empty());
  std::vector<std::string> stack;
  for (int k = 1; k <= 8; ++k) {
    write_file(f.file("m" + std::to_string(k % 10) + "/f" + std::to_string(k)),
               "change " + std::to_string(k));
    if (k == 3) {
      ASSERT_EQ(::unlink(f.file("m0/f20").c_str()), 0);
    }
    f.commit_all("step " + std::to_string(k));
    Output step = f.run({}, "true");
    ASSERT_EQ(step.status, 0) << describe(step);
    stack.push_back(head_base(f));
  }
  // The seventh stacks on the six before it and the bottom: eight trees.
  std::string seventh_layers;
  for (int k = 5; k >= 0; --k) seventh_layers += stack[static_cast<std::size_t>(k)] + "\n";
  EXPECT_EQ(read_file(base_dir(f, stack[6]) + "/layers"), seventh_layers + bottom + "\n");
  // The eighth: on the bottom alone, its tree holding every change since.
  EXPECT_EQ(read_file(base_dir(f, stack[7]) + "/layers"), bottom + "\n");
  const std::string eighth = base_dir(f, stack[7]) + "/tree";
  EXPECT_EQ(lines(run_process({"sh", "-c", "cd '" + eighth + "' && find . -type f | sort"}).out),
            (std::vector<std::string>{"./m1/f1", "./m2/f2", "./m3/f3", "./m4/f4", "./m5/f5", "./m6/f6",
                                      "./m7/f7", "./m8/f8"}));
  EXPECT_EQ(lines(run_process({"sh", "-c", "cd '" + eighth + "' && find . -type c | sort"}).out),
            (std::vector<std::string>{"./m0/f20"}));
  // What a session there sees is the commit's tree, its index the commit's.
  Output inside = f.run(
      {"--keep"}, listing_then("cat m3/f3 m8/f8; echo; git status --porcelain; "
                               "test \"$(git write-tree)\" = \"$(git rev-parse HEAD^{tree})\" && echo same"));
  ASSERT_EQ(inside.status, 0) << describe(inside);
  const Listing listing = listing_of(inside.out);
  ASSERT_TRUE(listing.whole) << inside.out;
  EXPECT_EQ(listing.tracked, listing.present);
  EXPECT_EQ(listing.tracked.size(), 62U);  // 60 and the fixture's three, less the one gone
  EXPECT_EQ(listing.rest, "change 3change 8\nsame\n");
  // The next one stacks on the eighth as on any other.
  write_file(f.file("m9/f9"), "change 9");
  f.commit_all("step 9");
  ASSERT_EQ(f.run({}, "true").status, 0);
  EXPECT_EQ(read_file(base_dir(f, head_base(f)) + "/layers"), stack[7] + "\n" + bottom + "\n");
}

// The next base of a repository is derived from the base its sessions used
// last, though another repository's was used since (with one data directory).
TEST(SharedBase, ABaseIsDerivedFromItsOwnRepositorysLastBaseNotAnothersUsedSince) {
  Fixture f;
  f.init_git();
  many_files(f, 20, 8);
  ASSERT_EQ(f.run({}, "true").status, 0);
  const std::string mine = head_base(f);
  ASSERT_FALSE(mine.empty());
  const std::string other = f.data() + "/../other";
  ASSERT_EQ(::mkdir(other.c_str(), 0755), 0);
  git_ok(other, {"init", "-q", "-b", "main"});
  write_file(other + "/x.txt", "x\n");
  git_ok(other, {"add", "-A"});
  git_ok(other, {"commit", "-qm", "other"});
  Output there = f.chock({"run", "--project", other, "--", "true"});
  ASSERT_EQ(there.status, 0) << describe(there);
  ASSERT_EQ(bases_of(f).bases.size(), 2U);
  write_file(f.file("m1/f1"), "changed");
  f.commit_all("next");
  Output next = f.run({}, "true");
  ASSERT_EQ(next.status, 0) << describe(next);
  const std::string layers = base_dir(f, head_base(f)) + "/layers";
  ASSERT_TRUE(exists(layers)) << "checked out whole, not derived";
  EXPECT_EQ(read_file(layers), mine + "\n");
}

// A repository whose index is of version 4 (index.version, or
// feature.manyFiles) has a base whose index Chock does not merge
// (index_file.hpp): git restores the changed and gone paths into a copy of
// the donor's, and the session sees the new commit as well.
TEST(SharedBase, ADerivedBaseOfARepositoryWithAVersionFourIndexIsMadeByGit) {
  Fixture f;
  f.init_git();
  git_ok(f.project(), {"config", "index.version", "4"});
  const std::string older = first_base(f);
  ASSERT_FALSE(older.empty());
  const std::string header = read_file(base_dir(f, older) + "/index").substr(0, 8);
  ASSERT_EQ(header, std::string("DIRC\0\0\0\4", 8)) << "the first base's index is not of version 4";
  write_file(f.file("a.txt"), "alpha two\n");
  write_file(f.file("m3/new"), "new\n");
  ASSERT_EQ(::unlink(f.file("b.txt").c_str()), 0);
  f.commit_all("second");
  Output second = f.run({"--keep"}, listing_then("git status --porcelain; test \"$(git write-tree)\" = "
                                                 "\"$(git rev-parse HEAD^{tree})\" && echo same"));
  ASSERT_EQ(second.status, 0) << describe(second);
  const Listing listed = listing_of(second.out);
  ASSERT_TRUE(listed.whole) << second.out;
  EXPECT_EQ(listed.tracked, listed.present);
  EXPECT_EQ(listed.rest, "same\n") << "a clean status and the commit's tree";
  ASSERT_EQ(bases_of(f).bases.size(), 2U);
  EXPECT_EQ(read_file(base_dir(f, other_base(f, older)) + "/layers"), older + "\n") << "not derived";
}

// The donor's index says it is of version 2, but what follows is not what
// Chock merges (here a conflict: a.txt at stages 1 and 2): git restored into
// a small index while Chock parsed the donor's, and restores again into a
// copy of it, which the new commit's a.txt resolves; the base is derived
// all the same.
TEST(SharedBase, ADonorsIndexChockDoesNotMergeIsRestoredIntoByGitAfterAll) {
  Fixture f;
  f.init_git();
  const std::string older = first_base(f);
  ASSERT_FALSE(older.empty());
  const std::string index_path = base_dir(f, older) + "/index";
  const std::string blob = git_ok(f.project(), {"rev-parse", "HEAD:a.txt"}).substr(0, 40);
  RunOptions into_base;
  into_base.env = {{"GIT_INDEX_FILE", index_path}, {"GIT_CONFIG_GLOBAL", "/dev/null"}};
  into_base.stdin_data =
      "0 " + std::string(40, '0') + "\ta.txt\n100644 " + blob + " 1\ta.txt\n100644 " + blob + " 2\ta.txt\n";
  Output conflicted = run_process(
      {"git", "-C", f.project(), "-c", "core.splitIndex=false", "update-index", "--index-info"}, into_base);
  ASSERT_EQ(conflicted.status, 0) << describe(conflicted);
  ASSERT_EQ(std::string(read_file(index_path).substr(0, 8)), std::string("DIRC\0\0\0\2", 8));
  ASSERT_FALSE(workspace::index_file::parse(read_file(index_path), 20)) << "Chock would merge it";
  write_file(f.file("a.txt"), "alpha two\n");
  ASSERT_EQ(::unlink(f.file("b.txt").c_str()), 0);
  f.commit_all("second");
  Output second =
      f.run({"--keep"},
            listing_then("cat a.txt; git status --porcelain; test \"$(git write-tree)\" = \"$(git rev-parse "
                         "HEAD^{tree})\" && echo same"));
  ASSERT_EQ(second.status, 0) << describe(second);
  const Listing listed = listing_of(second.out);
  ASSERT_TRUE(listed.whole) << second.out;
  EXPECT_EQ(listed.tracked, listed.present);
  EXPECT_EQ(listed.tracked.size(), 52U);
  EXPECT_EQ(listed.rest, "alpha two\nsame\n") << "a clean status and the commit's tree";
  const std::string layers = base_dir(f, other_base(f, older)) + "/layers";
  ASSERT_TRUE(exists(layers)) << "checked out whole, not derived";
  EXPECT_EQ(read_file(layers), older + "\n");
}

// A derived base names the paths that differ to git: a name that git would
// read as a pattern (`*`, `:(top)`, `:(glob)`) is that one file, never every
// file it matches, and a newline or a leading dash is part of a name.
TEST(SharedBase, ADerivedBaseTakesNamesThatLookLikePatternsAsNames) {
  Fixture f;
  f.init_git();
  many_files(f, 60, 8);  // a base is derived where under a fifth of its entries differ
  Output first = f.run({"--keep"}, "true");
  ASSERT_EQ(first.status, 0) << describe(first);
  const std::string older = bases_of(f).bases.front();
  const std::vector<std::string> names{"*", ":(top)m1", ":(glob)**", "new\nline", "-dash", "m2/?"};
  for (const auto& n : names) write_file(f.file(n), "named " + n + "\n");
  ASSERT_EQ(::unlink(f.file("m3/f3").c_str()), 0);
  git_ok(f.project(), {"add", "-A"});
  git_ok(f.project(), {"commit", "-qm", "names"});
  Output second = f.run({"--keep"},
                        "tracked=$(git ls-tree -r --name-only -z HEAD | sort -z | md5sum); "
                        "present=$(find . -path ./.git -prune -o -type f -print0 | sed -z 's|^\\./||' | "
                        "sort -z | md5sum); [ \"$tracked\" = \"$present\" ] && echo same; "
                        "cat ./'*' ./-dash; git status --porcelain");
  ASSERT_EQ(second.status, 0) << describe(second);
  EXPECT_EQ(second.out, "same\nnamed *\nnamed -dash\n")
      << "the commit's tree inside, and a clean status: " << describe(second);
  ASSERT_EQ(bases_of(f).bases.size(), 2U);
  const std::string newer = other_base(f, older);
  ASSERT_EQ(read_file(base_dir(f, newer) + "/layers"), older + "\n") << "made from the older base";
  // The newer layer holds those six and the one whiteout, nothing a pattern would match.
  Output layer =
      run_process({"sh", "-c",
                   "cd '" + base_dir(f, newer) +
                       "/tree' && find . ! -name . ! -name .git \\( -type f -o -type c \\) -print0"});
  std::vector<std::string> got;
  for (std::size_t at = 0, end; (end = layer.out.find('\0', at)) != std::string::npos; at = end + 1)
    got.push_back(layer.out.substr(at, end - at));
  std::vector<std::string> expected{"./m3/f3"};
  for (const auto& n : names) expected.push_back("./" + n);
  std::sort(got.begin(), got.end());
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(got, expected) << layer.out;
}

// A root caller's base: checked out by git running as the run uid (only
// CAP_DAC_READ_SEARCH kept, to read a repository the run uid could not), so
// no file is chowned after and no session's git rehashes one; where root
// cannot give that capability, root checks out and chowns, as before.
struct RootBase {
  Output run;
  int base_chowns = 0;  // chown calls on paths in bases/
};

RootBase root_base(const Fixture& f, const std::vector<std::string>& prefix) {
  const std::string trace = f.data() + "/../chown.trace";
  std::vector<std::string> argv = prefix;
  for (const char* a : {"strace", "-f", "-qq", "-e", "trace=chown,lchown,fchown,fchownat", "-o"})
    argv.emplace_back(a);
  argv.push_back(trace);
  argv.push_back(chock_binary());
  for (const char* a : {"run", "--keep", "--", "sh", "-c", "git status --porcelain; stat -c %u m3/f3 .git"})
    argv.emplace_back(a);
  RootBase out{run_process(argv, f.options())};
  std::istringstream lines(read_file(trace));
  for (std::string l; std::getline(lines, l);)
    if (l.find("chown") != std::string::npos && l.find("/bases/") != std::string::npos) ++out.base_chowns;
  return out;
}

TEST(SharedBase, ARootCallersBaseIsCheckedOutByTheRunUidWithNothingChowned) {
  if (::geteuid() != 0)
    GTEST_SKIP() << "a root caller's base; a user's calls run as the user, who checks out";
  if (run_process({"strace", "-V"}).status != 0)
    GTEST_SKIP() << "strace is not installed (scripts/install-deps)";
  Fixture f;
  // strace follows a holder to its end: no overlay is kept (idle 20 s a run).
  f.set_env("CHOCK_OVERLAY_HOLD_MS", "0");
  f.init_git();
  many_files(f, 300, 64);
  // The project is root's alone: the run uid reaches it only through the capability.
  const std::string parent = f.project().substr(0, f.project().rfind('/'));
  ASSERT_EQ(::chmod(parent.c_str(), 0700), 0);
  RootBase made = root_base(f, {});
  ASSERT_EQ(made.run.status, 0) << describe(made.run);
  EXPECT_EQ(made.run.out, "65534\n65534\n") << "a clean status, the files the run uid's\n"
                                            << describe(made.run);
  // The base's directory (to the run uid and back), its tree and the .git file Chock writes: nothing git
  // wrote.
  EXPECT_LE(made.base_chowns, 4) << "the base's files were chowned after a checkout as root";
  const std::string base = base_dir(f, bases_of(f).bases.front());
  struct stat index {};
  ASSERT_EQ(::stat((base + "/index").c_str(), &index), 0);
  EXPECT_EQ(index.st_uid, 65534U) << "the index was written by root";
  Output debug = run_process(
      {"env", "GIT_INDEX_FILE=" + base + "/index", "git", "-C", f.project(), "ls-files", "--debug"});
  ASSERT_EQ(debug.status, 0) << describe(debug);
  EXPECT_NE(debug.out.find("uid: 65534\t"), std::string::npos) << debug.out.substr(0, 400);
  EXPECT_EQ(debug.out.find("uid: 0\t"), std::string::npos) << "an index entry records root's file";

  // A base derived from it: the file that changed is written by the run uid too.
  write_file(f.file("m3/f3"), "changed\n");
  f.commit_all("changed");
  RootBase derived = root_base(f, {});
  ASSERT_EQ(derived.run.status, 0) << describe(derived.run);
  EXPECT_EQ(derived.run.out, "65534\n65534\n") << describe(derived.run);
  EXPECT_LE(derived.base_chowns, 4) << "the derived base's files were chowned";
  EXPECT_EQ(bases_of(f).bases.size(), 2U);

  // Without the capability to give (out of the bounding set): root checks out, then chowns every file.
  ASSERT_EQ(run_process({"rm", "-rf", f.data() + "/chock"}).status, 0);
  RootBase fallback = root_base(f, {"setpriv", "--bounding-set=-dac_read_search"});
  ASSERT_EQ(fallback.run.status, 0) << describe(fallback.run);
  EXPECT_EQ(fallback.run.out, "65534\n65534\n") << describe(fallback.run);
  EXPECT_GT(fallback.base_chowns, 300) << "the fallback did not run: the test above proves nothing";
  // And derives the next base as root, then chowns what it wrote.
  write_file(f.file("m3/f3"), "changed again\n");
  f.commit_all("changed again");
  RootBase derived_fallback = root_base(f, {"setpriv", "--bounding-set=-dac_read_search"});
  ASSERT_EQ(derived_fallback.run.status, 0) << describe(derived_fallback.run);
  EXPECT_EQ(derived_fallback.run.out, "65534\n65534\n") << describe(derived_fallback.run);
  EXPECT_GE(derived_fallback.base_chowns, 2) << "the file root wrote was not given to the run uid";
  EXPECT_EQ(bases_of(f).bases.size(), 2U);
}

// The path of the one link naming a repository's last base in `f`'s data dir, or "".
std::string last_base_link(const Fixture& f) {
  std::string found;
  DIR* d = ::opendir((f.data() + "/chock/bases").c_str());
  if (d == nullptr) return found;
  while (dirent* e = ::readdir(d))
    if (std::string_view(e->d_name).ends_with(".last")) found = f.data() + "/chock/bases/" + e->d_name;
  ::closedir(d);
  return found;
}

TEST(SharedBase, GcRemovesABaseNoSessionUsesAndNeverOneInUse) {
  Fixture f;
  f.init_git();
  Output old = f.run({"--keep"}, "true");
  ASSERT_EQ(old.status, 0) << describe(old);
  write_file(f.file("a.txt"), "newer\n");
  f.commit_all("newer");
  Output used = f.run({"--keep"}, "true");
  ASSERT_EQ(used.status, 0) << describe(used);
  ASSERT_EQ(bases_of(f).bases.size(), 2U);
  // While the old session is there, gc removes nothing.
  Output none = f.chock({"workspace", "gc"});
  EXPECT_EQ(none.status, 0) << describe(none);
  EXPECT_TRUE(none.err.find("removed 0 shared base(s)") != std::string::npos) << describe(none);
  EXPECT_EQ(bases_of(f).bases.size(), 2U);
  ASSERT_EQ(f.chock({"workspace", "remove", session_id(old)}).status, 0);
  Output gc = f.chock({"workspace", "gc"});
  EXPECT_EQ(gc.status, 0) << describe(gc);
  EXPECT_NE(gc.err.find("removed 1 shared base(s)"), std::string::npos) << describe(gc);
  EXPECT_NE(gc.err.find("kept 1 in use"), std::string::npos) << describe(gc);
  ASSERT_EQ(bases_of(f).bases.size(), 1U);
  Output still = f.chock({"run", "--session", session_id(used), "--", "cat", "a.txt"});
  EXPECT_EQ(still.out, "newer\n") << describe(still);

  // A base held for a session being made (its lock shared) is not removed
  // either, though no session names it yet.
  ASSERT_EQ(f.chock({"workspace", "remove", session_id(used)}).status, 0);
  const std::string lock = base_dir(f, bases_of(f).bases.front()) + ".lock";
  const int fd = ::open(lock.c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(fd, 0) << lock;
  ASSERT_EQ(::flock(fd, LOCK_SH), 0);
  Output held = f.chock({"workspace", "gc"});
  EXPECT_NE(held.err.find("removed 0 shared base(s)"), std::string::npos) << describe(held);
  EXPECT_EQ(bases_of(f).bases.size(), 1U);
  ::close(fd);
  // What a chock killed between making the repository's last-base link and
  // renaming it into place leaves: gc removes it (its pid runs no more), as
  // the link itself once its base is gone.
  const std::string last = last_base_link(f);
  ASSERT_FALSE(last.empty());
  const pid_t dead = ::fork();
  if (dead == 0) ::_exit(0);
  ASSERT_EQ(::waitpid(dead, nullptr, 0), dead);
  const std::string leftover = last + ".new." + std::to_string(dead);
  ASSERT_EQ(::symlink(bases_of(f).bases.front().c_str(), leftover.c_str()), 0);
  Output freed = f.chock({"workspace", "gc"});
  EXPECT_NE(freed.err.find("removed 1 shared base(s)"), std::string::npos) << describe(freed);
  EXPECT_TRUE(bases_of(f).bases.empty());
  EXPECT_FALSE(exists(leftover));
  EXPECT_FALSE(exists(last));
  // --older-than keeps one used since.
  Output again = f.run({}, "true");
  ASSERT_EQ(again.status, 0) << describe(again);
  Output recent = f.chock({"workspace", "gc", "--older-than", "1"});
  EXPECT_NE(recent.err.find("1 used more recently than 1 day(s)"), std::string::npos) << describe(recent);
  EXPECT_EQ(bases_of(f).bases.size(), 1U);
}

TEST(SharedBase, PastTheSizeCapGcRemovesTheUnusedBasesUsedLeastRecentlyFirst) {
  Fixture f;
  f.init_git();
  many_files(f, 200, 4096);
  // Three commits, a base each; a kept session uses the newest only.
  std::vector<std::string> keys;
  for (int i = 0; i < 3; ++i) {
    if (i > 0) {
      // Every file rewritten: a base of its own, not one stacked on the last.
      for (int n = 0; n < 200; ++n)
        write_file(f.file("m" + std::to_string(n % 10) + "/f" + std::to_string(n)),
                   std::string(4096, static_cast<char>('0' + i)));
      write_file(f.file("a.txt"), "commit " + std::to_string(i) + "\n");
      f.commit_all("step");
    }
    Output o = f.run(i == 2 ? std::vector<std::string>{"--keep"} : std::vector<std::string>{}, "true");
    ASSERT_EQ(o.status, 0) << describe(o);
    const std::string head = git_ok(f.project(), {"rev-parse", "HEAD"});
    for (const auto& b : bases_of(f).bases)
      if (b.ends_with("-" + head)) keys.push_back(b);
  }
  ASSERT_EQ(keys.size(), 3U);
  // Last used: the oldest commit's base longest ago.
  const std::int64_t now = static_cast<std::int64_t>(std::time(nullptr));
  for (std::size_t i = 0; i < 3; ++i) {
    const timespec times[2] = {{now - 300 + static_cast<std::int64_t>(i) * 100, 0},
                               {now - 300 + static_cast<std::int64_t>(i) * 100, 0}};
    ASSERT_EQ(::utimensat(AT_FDCWD, (base_dir(f, keys[i]) + ".lock").c_str(), times, 0), 0);
  }
  // Under a cap they all fit: nothing goes (each is younger than the day --older-than asks).
  Output fits = f.chock({"workspace", "gc", "--older-than", "1", "--max-size", "1TiB"});
  ASSERT_EQ(fits.status, 0) << describe(fits);
  EXPECT_NE(fits.err.find("removed 0 shared base(s)"), std::string::npos) << describe(fits);
  EXPECT_NE(fits.err.find("(0 removed for it)"), std::string::npos) << describe(fits);
  std::vector<std::uint64_t> sizes;
  for (const auto& k : keys) sizes.push_back(std::stoull(read_file(base_dir(f, k) + ".size")));
  for (auto bytes : sizes) EXPECT_GT(bytes, 800U * 1024) << "200 files of 4 KiB";
  // Room for two: the one used least recently goes.
  const std::uint64_t two = sizes[1] + sizes[2] + 1024;
  Output one = f.chock({"workspace", "gc", "--older-than", "1", "--max-size", std::to_string(two)});
  ASSERT_EQ(one.status, 0) << describe(one);
  EXPECT_NE(one.err.find("removed 1 shared base(s)"), std::string::npos) << describe(one);
  EXPECT_NE(one.err.find("(1 removed for it)"), std::string::npos) << describe(one);
  EXPECT_EQ(bases_of(f).bases,
            (std::vector<std::string>{std::min(keys[1], keys[2]), std::max(keys[1], keys[2])}));
  EXPECT_FALSE(exists(base_dir(f, keys[0]) + ".size"));
  // The sweeper that removal started gcs too (the operator's cap, below):
  // it is done once the trash is empty.
  for (int i = 0; i < 200; ++i) {
    Output left =
        run_process({"sh", "-c", "ls -A '" + f.data() + "/chock/trash' | grep -vc '^.sweep.lock$'"});
    if (left.out == "0\n") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  // The operator's cap, below even the base in use: every unused one goes, the one in use stays.
  ::mkdir((f.config() + "/chock").c_str(), 0755);
  write_file(f.config() + "/chock/config.zon", ".{ .bases_max_size = \"1MiB\" }\n");
  Output cap = f.chock({"workspace", "gc", "--older-than", "1"});
  ASSERT_EQ(cap.status, 0) << describe(cap);
  EXPECT_NE(cap.err.find("removed 1 shared base(s)"), std::string::npos) << describe(cap);
  EXPECT_NE(cap.err.find("kept 1 in use"), std::string::npos) << describe(cap);
  EXPECT_EQ(bases_of(f).bases, std::vector<std::string>{keys[2]});
  // A session made after all of it finds its base whole.
  Output still = f.chock({"run", "--session", session_id(f.run({"--keep"}, "true")), "--", "cat", "a.txt"});
  EXPECT_EQ(still.out, "commit 2\n") << describe(still);
  // A cap that is not a size is a clear error naming the file.
  write_file(f.config() + "/chock/config.zon", ".{ .bases_max_size = \"lots\" }\n");
  Output bad = f.chock({"workspace", "gc"});
  EXPECT_EQ(bad.status, 2) << describe(bad);
  EXPECT_NE(bad.err.find("config.zon:1:"), std::string::npos) << describe(bad);
  EXPECT_NE(bad.err.find("bases_max_size"), std::string::npos) << describe(bad);
  Output bad_flag = f.chock({"workspace", "gc", "--max-size", "10GB"});
  EXPECT_EQ(bad_flag.status, 2) << describe(bad_flag);
  EXPECT_NE(bad_flag.err.find("--max-size"), std::string::npos) << describe(bad_flag);
}

TEST(SharedBase, AChockKilledWhileItMakesABaseLeavesNoneHalfMadeThatASessionWouldUse) {
  Fixture f;
  f.init_git();
  many_files(f, 3000, 64);
  RunOptions o = f.options();
  std::vector<std::string> env = merged_environment(o);
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string bin = chock_binary();
  std::vector<std::string> args{bin, "run", "--keep", "--project", f.project(), "--", "true"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  // Killed later each time, until a kill lands while the checkout is under way.
  bool caught = false;
  for (int delay_ms = 5; delay_ms <= 600 && !caught; delay_ms += 10) {
    ASSERT_EQ(run_process({"rm", "-rf", f.data() + "/chock"}).status, 0);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attr, 0);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    pid_t pid = 0;
    ASSERT_EQ(::posix_spawn(&pid, bin.c_str(), &fa, &attr, argv.data(), envp.data()), 0);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    ::kill(-pid, SIGKILL);  // chock and the git it runs
    int status = 0;
    ::waitpid(pid, &status, 0);
    // Whatever the kill left, what stands as a base is whole: every tracked
    // file (3,003) and the .git file, and its index.
    for (const auto& name : bases_of(f).bases) {
      Output files = run_process({"sh", "-c", "find '" + base_dir(f, name) + "/tree' -type f | wc -l"});
      EXPECT_EQ(files.out, "3004\n") << "a half-made base stands in place after a kill at " << delay_ms
                                     << " ms";
      EXPECT_TRUE(exists(base_dir(f, name) + "/index"));
    }
    caught = !bases_of(f).leftovers.empty();
    if (!caught && !bases_of(f).bases.empty()) break;  // the base was whole before the kill: later ones too
  }
  if (!caught) GTEST_SKIP() << "no kill landed during the checkout of the base on this machine";
  // The kill landed during the making: nothing calls that a base.
  EXPECT_TRUE(bases_of(f).bases.empty());
  // The next session makes its own, whole, and sees every file.
  Output next = f.run({"--keep"}, "ls m*/ | grep -c '^f'");
  ASSERT_EQ(next.status, 0) << describe(next);
  EXPECT_EQ(next.out, "3000\n");
  // gc removes the leftovers.
  Output gc = f.chock({"workspace", "gc"});
  EXPECT_EQ(gc.status, 0) << describe(gc);
  EXPECT_TRUE(bases_of(f).leftovers.empty());
  EXPECT_EQ(bases_of(f).bases.size(), 1U);
}

}  // namespace
}  // namespace chock::test::ws
