// The overlay workspace of a project that is not git, adopt, and denied
// files (for both kinds of workspace).
#include <sys/stat.h>
#include <unistd.h>

#include <ctime>

#include "chock/workspace.hpp"
#include "support.hpp"

namespace chock::test::ws {
namespace {

const std::string kNotice = workspace::kDenyNotice;

TEST(OverlayWorkspace, WritesNeverReachTheProjectAndAdoptListsWhatChanged) {
  Fixture f;
  f.init_plain();
  ::mkdir(f.file("d").c_str(), 0755);
  write_file(f.file("d/old.txt"), "old\n");
  auto before = snapshot(f.project());
  Output o = f.run({},
                   "echo more >> a.txt && rm b.txt && echo new > added.txt && "
                   "rm -r d && mkdir d && echo fresh > d/fresh.txt && ls");
  ASSERT_EQ(o.status, 0) << describe(o);
  EXPECT_EQ(o.out, "a.txt\nadded.txt\nd\nsub\n");
  std::string id = session_id(o);
  ASSERT_FALSE(id.empty()) << describe(o);
  EXPECT_NE(o.err.find("overlay workspace"), std::string::npos) << o.err;
  EXPECT_EQ(snapshot(f.project()), before) << "a write inside reached the project";

  // Work not adopted yet is not removed without --force.
  Output rm = f.chock({"workspace", "remove", id});
  EXPECT_EQ(rm.status, 1) << describe(rm);
  EXPECT_NE(rm.err.find("not adopted"), std::string::npos) << rm.err;

  Output adopt = f.chock({"workspace", "adopt", id});
  ASSERT_EQ(adopt.status, 0) << describe(adopt);
  EXPECT_EQ(adopt.out,
            "changed\ta.txt\n"
            "added\tadded.txt\n"
            "added\td/fresh.txt\n"
            "deleted\tb.txt\n"
            "deleted\td/old.txt\n");
  std::string dest = f.project() + "/.chock-adopted/" + id;
  EXPECT_EQ(read_file(dest + "/a.txt"), "alpha\nmore\n");
  EXPECT_EQ(read_file(dest + "/added.txt"), "new\n");
  EXPECT_EQ(read_file(dest + "/d/fresh.txt"), "fresh\n");
  EXPECT_FALSE(exists(dest + "/b.txt"));
  // The list file: a first line saying how it is written, then the same lines.
  std::string list = read_file(dest + ".txt");
  EXPECT_EQ(list.rfind("# chock workspace adopt " + id + ": ", 0), 0U) << list;
  EXPECT_EQ(list.substr(list.find('\n') + 1), adopt.out);
  // Nothing of the project itself changed.
  EXPECT_EQ(read_file(f.file("a.txt")), "alpha\n");
  EXPECT_EQ(read_file(f.file("b.txt")), "bravo\n");

  Output rm2 = f.chock({"workspace", "remove", id});
  EXPECT_EQ(rm2.status, 0) << describe(rm2);
}

// An adopt keeps the second of the last call; a call in that same second
// is new work all the same: remove without --force keeps it.
TEST(OverlayWorkspace, WorkOfACallInTheSecondOfAnAdoptIsNotTakenForAdopted) {
  Fixture f;
  f.init_plain();
  Output first = f.run({"--keep"}, "echo one > one.txt");
  ASSERT_EQ(first.status, 0) << describe(first);
  const std::string id = session_id(first);
  bool same_second = false;
  for (int attempt = 0; attempt < 10 && !same_second; ++attempt) {
    const std::time_t before = std::time(nullptr);
    Output adopt = f.chock({"workspace", "adopt", id});
    ASSERT_EQ(adopt.status, 0) << describe(adopt);
    Output again = f.run({"--session", id}, "echo " + std::to_string(attempt) + " > two.txt");
    ASSERT_EQ(again.status, 0) << describe(again);
    same_second = std::time(nullptr) == before;
  }
  if (!same_second) GTEST_SKIP() << "no adopt and call fell in one second in 10 tries (a slow machine)";
  Output rm = f.chock({"workspace", "remove", id});
  EXPECT_EQ(rm.status, 1) << "the call after the adopt was taken for adopted work: " << describe(rm);
  EXPECT_NE(rm.err.find("not adopted"), std::string::npos) << rm.err;
  EXPECT_TRUE(exists(f.sessions() + "/" + id));
}

TEST(OverlayWorkspace, ASecondCallSeesTheFirstCallsFiles) {
  Fixture f;
  f.init_plain();
  Output first = f.run({}, "echo kept > kept.txt");
  ASSERT_EQ(first.status, 0) << describe(first);
  Output second = f.run({"--session", session_id(first)}, "cat kept.txt");
  ASSERT_EQ(second.status, 0) << describe(second);
  EXPECT_EQ(second.out, "kept\n");
  EXPECT_FALSE(exists(f.file("kept.txt")));
}

TEST(DeniedFiles, GitWorkspaceShowsTheNoticeAndHoldsNoneOfTheBytes) {
  Fixture f;
  f.init_git();
  write_file(f.file(".gitignore"), "*.env\n");
  f.commit_all("ignore env files");
  write_file(f.file("local.env"),
             "UNTRACKED-SECRET-c41d2\n");  // untracked: carried by --allow-dirty, but denied
  // From inside, every object the sandbox can reach is read too: the bytes
  // are in none of them.
  Output o = f.run({"--allow-dirty", "--deny", "local.env"},
                   "cat local.env; cat a.txt; git status --porcelain --ignored; "
                   "git cat-file --batch-all-objects --batch | grep -c UNTRACKED-SECRET");
  ASSERT_EQ(o.status, 1) << describe(o);  // grep -c found nothing
  EXPECT_EQ(o.out, kNotice + "alpha\n!! local.env\n0\n");
  std::string dir = f.sessions() + "/" + session_id(o);
  EXPECT_EQ(files_containing(dir, "UNTRACKED-SECRET-c41d2"), std::vector<std::string>{});
  EXPECT_EQ(read_file(f.file("local.env")), "UNTRACKED-SECRET-c41d2\n");
}

// A file git has committed is in the objects the sandbox reads (git show
// HEAD:secret.env would print it), so denying it cannot keep its bytes out:
// the call is refused and says why, whether the file is in HEAD or only in
// the history of some branch.
TEST(DeniedFiles, AFileGitHasCommittedCannotBeDeniedAndTheCallIsRefused) {
  Fixture f;
  f.init_git();
  write_file(f.file("secret.env"), "TRACKED-SECRET-7f3a9\n");
  f.commit_all("a tracked secret");
  Output o = f.run({"--deny", "secret.env"}, "git show HEAD:secret.env");
  EXPECT_EQ(o.status, 125) << describe(o);
  EXPECT_EQ(o.out, "");
  EXPECT_NE(o.err.find("--deny secret.env: git has this file in commit "), std::string::npos) << o.err;
  EXPECT_EQ(session_id(o), "");

  git_ok(f.project(), {"rm", "-q", "secret.env"});
  f.commit_all("forget it");
  Output history = f.run({"--deny", "secret.env"}, "git log -p --all | grep -c TRACKED-SECRET");
  EXPECT_EQ(history.status, 125) << describe(history);
  EXPECT_NE(history.err.find("--deny secret.env: git has this file in commit "), std::string::npos)
      << history.err;
}

TEST(DeniedFiles, OverlayWorkspaceShowsTheNoticeAndAdoptSkipsIt) {
  Fixture f;
  f.init_plain();
  ::mkdir(f.file("conf").c_str(), 0755);
  write_file(f.file("conf/key.pem"), "OVERLAY-SECRET-99b1\n");
  Output o = f.run({"--deny", "conf/key.pem"}, "cat conf/key.pem; echo x > x.txt");
  ASSERT_EQ(o.status, 0) << describe(o);
  EXPECT_EQ(o.out, kNotice);
  std::string id = session_id(o);
  EXPECT_EQ(files_containing(f.sessions() + "/" + id, "OVERLAY-SECRET-99b1"), std::vector<std::string>{});
  Output adopt = f.chock({"workspace", "adopt", id});
  ASSERT_EQ(adopt.status, 0) << describe(adopt);
  // The notice is never adopted as work (a root caller's notice sits in its
  // copy of the project, anyone else's in the upper layer, listed as skipped).
  EXPECT_EQ(adopt.out.substr(0, 12), "added\tx.txt\n") << adopt.out;
  EXPECT_EQ(adopt.out.find("changed\tconf/key.pem"), std::string::npos) << adopt.out;
  EXPECT_EQ(adopt.out.find("added\tconf/key.pem"), std::string::npos) << adopt.out;
  EXPECT_FALSE(exists(f.project() + "/.chock-adopted/" + id + "/conf/key.pem"));
  EXPECT_EQ(read_file(f.file("conf/key.pem")), "OVERLAY-SECRET-99b1\n");
}

TEST(DeniedFiles, BadDenyPathsAreRefusedWithOneLineNamingThem) {
  Fixture f;
  f.init_git();
  struct Case {
    std::string path;
    std::string says;
  };
  for (const Case& c :
       {Case{"../outside", "'..' is refused"}, Case{"/etc/passwd", "absolute paths are refused"},
        Case{"*.env", "globs are refused"}, Case{"sub/", "names a directory"},
        Case{"sub", "is a directory in the project"}, Case{".git/config", "paths inside .git are refused"}}) {
    Output o = f.run({"--deny", c.path}, "echo RAN");
    EXPECT_EQ(o.status, 125) << c.path << "\n" << describe(o);
    EXPECT_EQ(o.out, "") << c.path;
    EXPECT_NE(o.err.find("--deny " + c.path + ": " + c.says), std::string::npos) << o.err;
    EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << o.err;
  }
  EXPECT_FALSE(exists(f.sessions()) && !snapshot(f.sessions()).empty()) << "a refused call made a session";
}

}  // namespace
}  // namespace chock::test::ws
