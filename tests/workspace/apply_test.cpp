// chock apply's refusals, each caused for real in a real repository: after
// each the work is still at refs/chock/<session>, and a later apply works
// once the cause is gone.
#include <cstdlib>
#include <filesystem>

#include "chock/workspace.hpp"
#include "support.hpp"

namespace chock::test::ws {
namespace {

// A session with one commit changing a.txt's first line; returns its id and head.
struct Work {
  std::string id;
  std::string head;
};

Work commit_in_session(const Fixture& f, const std::string& first_line = "alpha from the agent") {
  Output o = f.run({}, "printf '%s\\n' '" + first_line +
                           "' > a.txt && git commit -q -am 'agent: rewrite a.txt' && git rev-parse HEAD");
  EXPECT_EQ(o.status, 0) << describe(o);
  return Work{session_id(o), o.out.substr(0, 40)};
}

void expect_parked(const Fixture& f, const Work& w, const Output& refusal, const std::string& reason) {
  EXPECT_EQ(refusal.status, 1) << describe(refusal);
  EXPECT_NE(refusal.err.find("not applied: " + reason), std::string::npos) << refusal.err;
  EXPECT_NE(refusal.err.find("parked at refs/chock/" + w.id), std::string::npos) << refusal.err;
  EXPECT_EQ(git_ok(f.project(), {"rev-parse", "refs/chock/" + w.id}), w.head);
}

void expect_applied(const Fixture& f, const Work& w) {
  Output ok = f.chock({"apply", w.id, "--yes"});
  ASSERT_EQ(ok.status, 0) << describe(ok);
  EXPECT_EQ(git_ok(f.project(), {"log", "-1", "--format=%s"}), "agent: rewrite a.txt");
  EXPECT_EQ(read_file(f.file("a.txt")), "alpha from the agent\n");
  // Nothing of Chock's stays in the repository but the refs it parks work at.
  for (const auto& entry : std::filesystem::directory_iterator(f.project() + "/.git"))
    EXPECT_FALSE(entry.path().filename().string().starts_with("chock")) << entry.path();
}

TEST(Apply, RefusedOnADirtyTree) {
  Fixture f;
  f.init_git();
  Work w = commit_in_session(f);
  write_file(f.file("b.txt"), "bravo, not committed\n");
  expect_parked(f, w, f.chock({"apply", w.id, "--yes"}), "the working tree has uncommitted changes (b.txt)");
  EXPECT_EQ(read_file(f.file("b.txt")), "bravo, not committed\n");
  git_ok(f.project(), {"checkout", "--", "b.txt"});
  expect_applied(f, w);
}

TEST(Apply, RefusedOnAConflictAndTheProjectIsUntouched) {
  Fixture f;
  f.init_git();
  Work w = commit_in_session(f);
  write_file(f.file("a.txt"), "alpha from the person\n");
  f.commit_all("person: rewrite a.txt");
  std::string tip = git_ok(f.project(), {"rev-parse", "HEAD"});
  expect_parked(f, w, f.chock({"apply", w.id, "--yes"}), "a conflict with refs/heads/main in a.txt");
  EXPECT_EQ(git_ok(f.project(), {"rev-parse", "HEAD"}), tip);
  EXPECT_EQ(read_file(f.file("a.txt")), "alpha from the person\n");
  EXPECT_EQ(git_ok(f.project(), {"status", "--porcelain"}), "");
  git_ok(f.project(), {"reset", "-q", "--hard", "HEAD~1"});
  expect_applied(f, w);
}

TEST(Apply, RefusedOnADetachedHead) {
  Fixture f;
  f.init_git();
  Work w = commit_in_session(f);
  git_ok(f.project(), {"checkout", "-q", "--detach"});
  expect_parked(f, w, f.chock({"apply", w.id, "--yes"}), "no branch is checked out");
  git_ok(f.project(), {"checkout", "-q", "main"});
  expect_applied(f, w);
}

TEST(Apply, RefusedWhileARebaseIsInProgress) {
  Fixture f;
  f.init_git();
  write_file(f.file("b.txt"), "bravo 2\n");
  f.commit_all("second");
  Work w = commit_in_session(f);
  // A real rebase, stopped by an --exec that fails: the tree stays clean.
  Output rebase = git(f.project(), {"rebase", "-q", "--exec", "false", "HEAD~1"});
  ASSERT_NE(rebase.status, 0) << "the rebase was meant to stop";
  ASSERT_TRUE(exists(f.project() + "/.git/rebase-merge"));
  expect_parked(f, w, f.chock({"apply", w.id, "--yes"}), "a rebase is in progress");
  git_ok(f.project(), {"rebase", "--abort"});
  expect_applied(f, w);
}

TEST(Apply, RefusedWhenTheBranchMovedSinceTheQuestion) {
  Fixture f;
  f.init_git();
  Work w = commit_in_session(f);
  // The library's approval seam: while the question is open, the person commits.
  ::setenv("XDG_DATA_HOME", f.data().c_str(), 1);
  std::string asked_tip;
  auto outcome = workspace::apply(w.id, workspace::Mode::merge, [&](const workspace::ApplyPlan& plan) {
    asked_tip = plan.tip;
    write_file(f.file("sub/c.txt"), "charlie moved\n");
    f.commit_all("person: moved the branch");
    return workspace::Approval{true, ""};
  });
  ::unsetenv("XDG_DATA_HOME");
  ASSERT_TRUE(outcome.has_value()) << outcome.error().message();
  EXPECT_EQ(outcome->state, workspace::ApplyOutcome::State::refused);
  EXPECT_NE(outcome->message.find("the branch moved since the question was asked"), std::string::npos)
      << outcome->message;
  EXPECT_NE(outcome->message.find("refs/chock/" + w.id), std::string::npos) << outcome->message;
  EXPECT_EQ(git_ok(f.project(), {"rev-parse", "refs/chock/" + w.id}), w.head);
  EXPECT_NE(git_ok(f.project(), {"rev-parse", "HEAD"}), asked_tip);
  EXPECT_EQ(git_ok(f.project(), {"log", "-1", "--format=%s"}), "person: moved the branch");

  // Asked again, the branch holds still: a merge commit with both lines of work.
  Output ok = f.chock({"apply", w.id, "--yes"});
  ASSERT_EQ(ok.status, 0) << describe(ok);
  EXPECT_EQ(git_ok(f.project(), {"log", "-1", "--format=%P"}).size(), 81U) << "not a merge commit";
  EXPECT_EQ(read_file(f.file("a.txt")), "alpha from the agent\n");
  EXPECT_EQ(read_file(f.file("sub/c.txt")), "charlie moved\n");
}

TEST(Apply, RebaseAndSquashModesKeepTheBranchLinear) {
  for (const char* mode : {"rebase", "squash"}) {
    Fixture f;
    f.init_git();
    Output o = f.run({},
                     "echo one > one.txt && git add one.txt && git commit -q -m one && "
                     "echo two > two.txt && git add two.txt && git commit -q -m two");
    ASSERT_EQ(o.status, 0) << describe(o);
    std::string id = session_id(o);
    write_file(f.file("b.txt"), "bravo moved\n");
    f.commit_all("person");
    Output ok = f.chock({"apply", id, "--yes", "--mode", mode});
    ASSERT_EQ(ok.status, 0) << mode << "\n" << describe(ok);
    std::string subjects = git_ok(f.project(), {"log", "--format=%s", "--first-parent"});
    std::string expected = std::string(mode) == "rebase"
                               ? "two\none\nperson\ninitial"
                               : "Chock session " + id + ": 2 commits\nperson\ninitial";
    EXPECT_EQ(subjects, expected) << mode;
    EXPECT_EQ(git_ok(f.project(), {"log", "-1", "--format=%P"}).size(), 40U) << mode << ": a merge commit";
    EXPECT_EQ(read_file(f.file("two.txt")), "two\n");
    EXPECT_EQ(read_file(f.file("b.txt")), "bravo moved\n");
  }
}

TEST(Apply, NothingToApplyIsSaidAndChangesNothing) {
  Fixture f;
  f.init_git();
  Output o = f.run({"--keep"}, "true");
  std::string id = session_id(o);
  Output apply = f.chock({"apply", id, "--yes"});
  EXPECT_EQ(apply.status, 0) << describe(apply);
  EXPECT_NE(apply.err.find("no commit to apply"), std::string::npos) << apply.err;
  EXPECT_NE(git(f.project(), {"rev-parse", "-q", "--verify", "refs/chock/" + id}).status, 0);
}

}  // namespace
}  // namespace chock::test::ws
