// The git workspace through `chock run`: a throwaway worktree at the
// project's own path, a read-only real .git, commits that stay in the
// session until applied, dirty import, and sessions that persist.
#include <sys/stat.h>
#include <unistd.h>

#include "support.hpp"

namespace chock::test::ws {
namespace {

TEST(GitWorkspace, WriteInsideStaysOutOfTheProjectAndACommitIsAppliedWithItsMessage) {
  Fixture f;
  f.init_git();
  Output o = f.run({},
                   "pwd; echo inside > inside.txt && echo more >> a.txt && git add -A && "
                   "git commit -q -m 'agent: add inside.txt' && git log -1 --format=%an");
  ASSERT_EQ(o.status, 0) << describe(o);
  std::string id = session_id(o);
  ASSERT_FALSE(id.empty()) << describe(o);
  // Inside, the workspace is at the project's own path, and the commit is the agent's.
  EXPECT_NE(o.out.find(f.project() + "\n"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("Chock Agent"), std::string::npos) << o.out;
  EXPECT_FALSE(exists(f.file("inside.txt")));
  EXPECT_EQ(read_file(f.file("a.txt")), "alpha\n");
  EXPECT_EQ(git_ok(f.project(), {"log", "-1", "--format=%s"}), "initial");

  Output apply = f.chock({"apply", id, "--yes"});
  ASSERT_EQ(apply.status, 0) << describe(apply);
  EXPECT_EQ(git_ok(f.project(), {"log", "-1", "--format=%s"}), "agent: add inside.txt");
  EXPECT_EQ(read_file(f.file("inside.txt")), "inside\n");
  EXPECT_EQ(read_file(f.file("a.txt")), "alpha\nmore\n");
  EXPECT_EQ(git_ok(f.project(), {"status", "--porcelain"}), "");
  // Applied work is no longer parked.
  EXPECT_NE(git(f.project(), {"rev-parse", "-q", "--verify", "refs/chock/" + id}).status, 0);
}

// Chock reads HEAD from git's files rather than asking git; wherever the
// branch is kept (a loose ref, packed-refs only, a detached HEAD, a linked
// worktree), the session starts at the commit git names, and where the
// files are unusual (a symbolic ref, an unborn branch) git is asked.
TEST(GitWorkspace, ASessionStartsAtTheCommitGitCallsHEADWhereverTheBranchIsKept) {
  Fixture f;
  f.init_git();
  auto session_head = [&](const std::string& project) {
    Output o = f.chock({"run", "--project", project, "--", "git", "rev-parse", "HEAD"});
    EXPECT_EQ(o.status, 0) << describe(o);
    return o.out;
  };
  const std::string first = git_ok(f.project(), {"rev-parse", "HEAD"});
  EXPECT_EQ(session_head(f.project()), first + "\n") << "a loose branch";

  write_file(f.file("a.txt"), "second\n");
  f.commit_all("second");
  git_ok(f.project(), {"tag", "-a", "-m", "peeled in packed-refs", "v2"});
  git_ok(f.project(), {"pack-refs", "--all"});
  ASSERT_FALSE(exists(f.file(".git/refs/heads/main")));
  const std::string second = git_ok(f.project(), {"rev-parse", "HEAD"});
  EXPECT_EQ(session_head(f.project()), second + "\n") << "a branch in packed-refs only";

  git_ok(f.project(), {"checkout", "-q", "--detach", "HEAD~1"});
  EXPECT_EQ(session_head(f.project()), first + "\n") << "a detached HEAD";
  git_ok(f.project(), {"checkout", "-q", "main"});

  const std::string linked = f.project() + "/../linked";
  git_ok(f.project(), {"worktree", "add", "-q", "-b", "side", linked, first});
  EXPECT_EQ(session_head(linked), first + "\n") << "a linked worktree's own HEAD";

  git_ok(f.project(), {"symbolic-ref", "refs/heads/alias", "refs/heads/main"});
  git_ok(f.project(), {"symbolic-ref", "HEAD", "refs/heads/alias"});
  EXPECT_EQ(session_head(f.project()), second + "\n") << "a branch that is a symbolic ref";

  git_ok(f.project(), {"checkout", "-q", "--orphan", "unborn"});
  Output unborn = f.chock({"run", "--", "true"});
  EXPECT_EQ(unborn.status, 0) << describe(unborn);
  EXPECT_NE(unborn.err.find("overlay workspace"), std::string::npos)
      << "a repository with no commit on its branch is not a git workspace: " << describe(unborn);

  write_file(f.file(".git/HEAD"), std::string(40, 'e') + "\n");
  Output missing = f.chock({"run", "--", "true"});
  EXPECT_NE(missing.status, 0) << describe(missing);
  EXPECT_NE(missing.err.find("read the base commit into the index: fatal: Not a valid object name " +
                             std::string(40, 'e')),
            std::string::npos)
      << describe(missing);
}

TEST(GitWorkspace, WithoutATerminalApplyRefusesAndSaysHow) {
  Fixture f;
  f.init_git();
  Output o = f.run({}, "echo x > x.txt && git add x.txt && git commit -q -m x");
  ASSERT_EQ(o.status, 0) << describe(o);
  std::string id = session_id(o);
  Output apply = f.chock({"apply", id});
  EXPECT_EQ(apply.status, 1) << describe(apply);
  EXPECT_NE(apply.err.find("chock apply " + id + " --yes"), std::string::npos) << apply.err;
  EXPECT_NE(apply.err.find("refs/chock/" + id), std::string::npos) << apply.err;
  EXPECT_FALSE(exists(f.file("x.txt")));
}

TEST(GitWorkspace, OnATerminalApplyAsksAndTakesTheAnswer) {
  if (::access("/usr/bin/script", X_OK) != 0) GTEST_SKIP() << "script(1) from util-linux is not installed";
  Fixture f;
  f.init_git();
  Output o = f.run({}, "echo x > x.txt && git add x.txt && git commit -q -m 'agent: x'");
  ASSERT_EQ(o.status, 0) << describe(o);
  std::string id = session_id(o);
  // script(1) gives chock a terminal; the answer comes on it.
  auto on_terminal = [&](const std::string& answer) {
    RunOptions r;
    r.cwd = f.project();
    r.env = {{"XDG_DATA_HOME", f.data()}};
    r.stdin_data = answer;
    return run_process({"script", "-qec", chock_binary() + " apply " + id, "/dev/null"}, r);
  };
  Output no = on_terminal("n\n");
  EXPECT_EQ(no.status, 1) << describe(no);
  EXPECT_NE(no.out.find("workspace.apply asks: go ahead? [y]es, [n]o, [a]lways for this session"),
            std::string::npos)
      << no.out;
  EXPECT_NE(no.out.find("not applied: you answered no"), std::string::npos) << no.out;
  EXPECT_FALSE(exists(f.file("x.txt")));
  Output yes = on_terminal("y\n");
  EXPECT_EQ(yes.status, 0) << describe(yes);
  EXPECT_EQ(git_ok(f.project(), {"log", "-1", "--format=%s"}), "agent: x");

  // `a`: yes, and this session does not ask again, even with nobody at a terminal.
  ASSERT_EQ(f.run({"--session", id}, "echo y > y.txt && git add y.txt && git commit -q -m 'agent: y'").status,
            0);
  Output always = on_terminal("a\n");
  EXPECT_EQ(always.status, 0) << describe(always);
  ASSERT_EQ(f.run({"--session", id}, "echo z > z.txt && git add z.txt && git commit -q -m 'agent: z'").status,
            0);
  Output unasked = f.chock({"apply", id});
  EXPECT_EQ(unasked.status, 0) << describe(unasked);
  EXPECT_EQ(git_ok(f.project(), {"log", "-1", "--format=%s"}), "agent: z");
}

TEST(GitWorkspace, TheRealGitIsReadOnlyInsideAndUntouchedAfter) {
  Fixture f;
  f.init_git();
  std::string git_dir = f.project() + "/.git";
  // --no-optional-locks: our own status must not refresh the index.
  std::string status_before =
      git_ok(f.project(), {"--no-optional-locks", "status", "--porcelain=v2", "--branch"});
  auto before = snapshot(git_dir);
  std::string refs_before = git_ok(f.project(), {"for-each-ref"});
  // Each attempt prints its name and the shell's error; the commit, a branch,
  // a moved main and a tag are the allowed neighbours: they go to the
  // session's own refs, never to the real ones.
  const std::string script =
      "try() { name=$1; shift; if \"$@\" 2>/tmp/err; then echo \"WROTE $name\"; else echo \"refused $name: "
      "$(cat /tmp/err)\"; fi; }\n"
      "R=/run/chock/git/repo\nV=/run/chock/git/view\n"
      "try branch git branch evil\n"
      "try update-ref git update-ref refs/heads/main HEAD\n"
      "try tag git tag evil-tag\n"
      "try ref-file sh -c \"echo 0000000000000000000000000000000000000000 > $V/refs/heads/main\"\n"
      "try packed-refs sh -c \"echo x >> $V/packed-refs\"\n"
      "try log mkdir -p $R/logs\n"
      "try index sh -c \"echo x > $R/index\"\n"
      "try worktrees mkdir -p $R/worktrees/evil\n"
      "try object sh -c \"echo x > $R/objects/evil\"\n"
      "try config sh -c \"echo '[core]' >> $R/config\"\n"
      "grep ' /run/chock/git/repo/objects ' /proc/self/mountinfo\n"
      "echo inside > inside.txt && git add inside.txt && git commit -q -m inside && echo COMMITTED\n";
  Output o = f.run({}, script);
  ASSERT_EQ(o.status, 0) << describe(o);
  for (const char* name : {"ref-file", "packed-refs", "log", "index", "worktrees", "object", "config"}) {
    std::string line = std::string("refused ") + name + ":";
    auto at = o.out.find(line);
    ASSERT_NE(at, std::string::npos) << name << "\n" << o.out;
    std::string rest = o.out.substr(at, o.out.find('\n', at) - at);
    // A root caller's call runs as 65534, for whom root's files are closed
    // before the mount is asked; the owner meets the read-only mount itself.
    bool erofs = rest.find("Read-only file system") != std::string::npos;
    bool eacces = rest.find("Permission denied") != std::string::npos;
    EXPECT_TRUE(erofs || (running_as_root() && eacces)) << rest;
  }
  const std::string objects_mount = " /run/chock/git/repo/objects ";
  auto mount = o.out.find(objects_mount);
  ASSERT_NE(mount, std::string::npos) << o.out;
  EXPECT_EQ(o.out.substr(mount + objects_mount.size(), 3), "ro,") << o.out.substr(mount, 80);
  for (const char* name : {"branch", "update-ref", "tag"})
    EXPECT_NE(o.out.find(std::string("WROTE ") + name + "\n"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("COMMITTED"), std::string::npos) << o.out;

  EXPECT_EQ(snapshot(git_dir), before) << "the real .git changed";
  EXPECT_EQ(git_ok(f.project(), {"--no-optional-locks", "status", "--porcelain=v2", "--branch"}),
            status_before);
  EXPECT_EQ(git_ok(f.project(), {"for-each-ref"}), refs_before);
  EXPECT_FALSE(exists(git_dir + "/worktrees"));
}

TEST(GitWorkspace, ACommitSurvivesEnvIAndItsObjectsStayInTheSession) {
  Fixture f;
  f.init_git();
  std::string objects = f.project() + "/.git/objects";
  auto before = snapshot(objects);
  Output o = f.run({},
                   "echo deep > deep.txt && env -i PATH=/usr/bin:/bin git add deep.txt && "
                   "env -i PATH=/usr/bin:/bin git commit -q -m deep && git log -1 --format=%H");
  ASSERT_EQ(o.status, 0) << describe(o);
  std::string commit = o.out.substr(o.out.rfind('\n', o.out.size() - 2) + 1);
  commit.pop_back();
  EXPECT_EQ(snapshot(objects), before) << "a new object landed in the real .git/objects";
  EXPECT_NE(git(f.project(), {"cat-file", "-e", commit}).status, 0) << "the commit is in the real repository";
  std::string id = session_id(o);
  Output apply = f.chock({"apply", id, "--yes"});
  ASSERT_EQ(apply.status, 0) << describe(apply);
  EXPECT_EQ(git_ok(f.project(), {"rev-parse", "HEAD"}), commit);
}

TEST(GitWorkspace, ADirtyProjectShowsTheCommittedStateUnlessAllowDirty) {
  Fixture f;
  f.init_git();
  write_file(f.file("a.txt"), "alpha, edited\n");
  write_file(f.file("new.txt"), "brand new\n");
  ::unlink(f.file("b.txt").c_str());
  git_ok(f.project(), {"init", "-q", f.file("nested")});  // untracked nested repository: skipped
  const std::string look =
      "cat a.txt; test -e b.txt && echo B-PRESENT || echo B-ABSENT; "
      "test -e new.txt && echo NEW-PRESENT || echo NEW-ABSENT";

  Output clean = f.run({}, look);
  ASSERT_EQ(clean.status, 0) << describe(clean);
  EXPECT_EQ(clean.out, "alpha\nB-PRESENT\nNEW-ABSENT\n");

  Output dirty = f.run({"--allow-dirty"}, look + "; git status --porcelain");
  ASSERT_EQ(dirty.status, 0) << describe(dirty);
  EXPECT_EQ(dirty.out, "alpha, edited\nB-ABSENT\nNEW-PRESENT\n M a.txt\n D b.txt\n?? new.txt\n");
  EXPECT_NE(dirty.err.find("carried in 1 modified, 1 added and 1 deleted"), std::string::npos) << dirty.err;
  EXPECT_NE(dirty.err.find("skipped nested/"), std::string::npos) << dirty.err;
  // The project itself is as the person left it.
  EXPECT_EQ(read_file(f.file("a.txt")), "alpha, edited\n");
}

TEST(GitWorkspace, ASecondCallInTheSessionSeesTheFirstCallsFiles) {
  Fixture f;
  f.init_git();
  Output first = f.run({"--keep"}, "echo from-the-first-call > notes.txt");
  ASSERT_EQ(first.status, 0) << describe(first);
  std::string id = session_id(first);
  ASSERT_FALSE(id.empty());
  Output second = f.run({"--session", id}, "cat notes.txt");
  ASSERT_EQ(second.status, 0) << describe(second);
  EXPECT_EQ(second.out, "from-the-first-call\n");
  EXPECT_EQ(session_id(second), "") << "a continued session is not announced as new";
  // A fresh session does not see it.
  Output other = f.run({}, "cat notes.txt");
  EXPECT_NE(other.status, 0);
  EXPECT_FALSE(exists(f.file("notes.txt")));
}

TEST(GitWorkspace, BadSessionIdsAreRefusedInOneLine) {
  Fixture f;
  f.init_git();
  Output bad = f.run({"--session", "../x"}, "true");
  EXPECT_EQ(bad.status, 125);
  EXPECT_NE(bad.err.find("bad session id '../x'"), std::string::npos) << bad.err;
  Output unknown = f.run({"--session", "nosuchsession"}, "true");
  EXPECT_EQ(unknown.status, 125);
  EXPECT_NE(unknown.err.find("no session 'nosuchsession'"), std::string::npos) << unknown.err;
}

TEST(GitWorkspace, RemoveRefusesWhileCommitsAreUnappliedAndForceParksThem) {
  Fixture f;
  f.init_git();
  Output o = f.run({}, "echo w > w.txt && git add w.txt && git commit -q -m work && git rev-parse HEAD");
  ASSERT_EQ(o.status, 0) << describe(o);
  std::string id = session_id(o);
  std::string head = o.out.substr(0, 40);

  Output rm = f.chock({"workspace", "remove", id});
  EXPECT_EQ(rm.status, 1) << describe(rm);
  EXPECT_NE(rm.err.find("1 unapplied commit"), std::string::npos) << rm.err;
  EXPECT_TRUE(exists(f.sessions() + "/" + id + "/session.json"));
  Output clear = f.chock({"workspace", "clear"});
  EXPECT_EQ(clear.status, 1) << describe(clear);
  EXPECT_TRUE(exists(f.sessions() + "/" + id + "/session.json"));

  Output list = f.chock({"workspace", "list"});
  ASSERT_EQ(list.status, 0) << describe(list);
  EXPECT_NE(list.out.find(id + "   git"), std::string::npos) << list.out;
  EXPECT_NE(list.out.find("1 commits"), std::string::npos) << list.out;

  Output forced = f.chock({"workspace", "remove", id, "--force"});
  ASSERT_EQ(forced.status, 0) << describe(forced);
  EXPECT_FALSE(exists(f.sessions() + "/" + id));
  EXPECT_EQ(git_ok(f.project(), {"rev-parse", "refs/chock/" + id}), head) << "a forced removal lost a commit";
}

TEST(GitWorkspace, AnAppliedSessionIsRemovedWithoutForce) {
  Fixture f;
  f.init_git();
  Output o = f.run({}, "echo w > w.txt && git add w.txt && git commit -q -m work");
  std::string id = session_id(o);
  ASSERT_EQ(f.chock({"apply", id, "--yes"}).status, 0);
  Output rm = f.chock({"workspace", "remove", id});
  EXPECT_EQ(rm.status, 0) << describe(rm);
  EXPECT_FALSE(exists(f.sessions() + "/" + id));
}

}  // namespace
}  // namespace chock::test::ws
