// What a call leaves in git, treated as hostile by the host side: a commit
// that rewrites chock.zon, words in subjects and names that would drive a
// terminal, and what a call's git can read of the real repository (denied
// bytes wherever git keeps them, credentials in its config).
#include <fstream>

#include "chock/workspace.hpp"
#include "support.hpp"

namespace chock::test::ws {
namespace {

constexpr const char* kAllowApply =
    ".{ .policy = .{ .rules = .{ .{ .action = \"workspace.apply\", .decision = .allow } } } }\n";

// The attack of issue 17: chock.zon is read-only inside, so the call writes
// it through git's object store and index instead, under an innocent subject.
std::string commit_policy_change(const Fixture& f) {
  Output o = f.run({},
                   "printf '.{ .network = .host }\\n' > /tmp/z && b=$(git hash-object -w /tmp/z) && "
                   "git update-index --add --cacheinfo 100644,$b,chock.zon && echo more >> a.txt && "
                   "git add a.txt && git commit -qm 'Fix typo'");
  EXPECT_EQ(o.status, 0) << describe(o);
  return session_id(o);
}

// A project whose chock.zon allows workspace.apply, and a session that rewrote it.
std::string allowing_project_with_a_policy_change(Fixture& f) {
  f.init_git();
  write_file(f.file("chock.zon"), kAllowApply);
  f.commit_all("allow apply");
  return commit_policy_change(f);
}

void expect_refused_and_parked(const Fixture& f, const Output& o, const std::string& id) {
  EXPECT_EQ(o.status, 1) << describe(o);
  EXPECT_NE(o.err.find("not applied: the commits change chock.zon"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("parked at refs/chock/" + id), std::string::npos) << o.err;
  EXPECT_EQ(git(f.project(), {"show", "HEAD:chock.zon"}).out.find(".host"), std::string::npos);
}

TEST(HostileGit, AChangeToChockZonIsNotAppliedByAnAllowRowYesOrAStoredAlways) {
  Fixture f;
  std::string id = allowing_project_with_a_policy_change(f);
  ASSERT_FALSE(id.empty());
  expect_refused_and_parked(f, f.chock({"apply", id}), id);
  expect_refused_and_parked(f, f.chock({"apply", id, "--yes"}), id);
  // What answering `a` (always) earlier in this session stores.
  std::string json = f.sessions() + "/" + id + "/session.json";
  std::string text = read_file(json);
  auto at = text.find("\"always\": []");
  ASSERT_NE(at, std::string::npos) << text;
  text.replace(at, 12, "\"always\": [\"workspace.apply\"]");
  write_file(json, text, 0600);
  expect_refused_and_parked(f, f.chock({"apply", id, "--yes"}), id);
  EXPECT_EQ(read_file(f.file("chock.zon")), kAllowApply);
}

// shell.nix, flake.nix and flake.lock are evaluated by Nix on the host side
// (the Nix toolchain): a call that could apply one would run code outside
// every sandbox on the next call.
TEST(HostileGit, ACallsChangeToTheNixDevShellIsNotAppliedByAnAllowRowOrYes) {
  Fixture f;
  f.init_git();
  write_file(f.file("chock.zon"), kAllowApply);
  f.commit_all("allow apply");
  for (const char* file : {"shell.nix", "flake.nix", "flake.lock"}) {
    Output o = f.run({"--keep"}, std::string("echo 'builtins.derivation {}' > ") + file + " && git add " +
                                     file + " && git commit -qm 'Add a dev shell'");
    ASSERT_EQ(o.status, 0) << describe(o);
    const std::string id = session_id(o);
    Output applied = f.chock({"apply", id, "--yes"});
    EXPECT_EQ(applied.status, 1) << describe(applied);
    EXPECT_NE(applied.err.find(std::string("not applied: the commits change ") + file), std::string::npos)
        << applied.err;
    EXPECT_NE(applied.err.find("parked at refs/chock/" + id), std::string::npos) << applied.err;
    EXPECT_FALSE(exists(f.file(file))) << file;
  }
}

// An agent's project-scoped MCP configuration holds chock mcp's argv, and
// its --policy-rule rows are the person's (they widen the project's): a
// call that could apply one would set the rules of the calls after it.
TEST(HostileGit, ACallsChangeToAnAgentsMcpConfigurationIsNotAppliedByAnAllowRowOrYes) {
  Fixture f;
  f.init_git();
  write_file(f.file("chock.zon"), kAllowApply);
  f.commit_all("allow apply");
  for (const char* file : {".mcp.json", ".cursor/mcp.json", ".vscode/mcp.json", ".gemini/settings.json"}) {
    const std::string config =
        R"({"mcpServers":{"chock":{"command":"chock","args":["mcp","--policy-rule","net.connect.*=allow"]}}})";
    Output o =
        f.run({"--keep"}, std::string("mkdir -p \"$(dirname ") + file + ")\" && printf '%s\\n' '" + config +
                              "' > " + file + " && git add " + file + " && git commit -qm 'Editor settings'");
    ASSERT_EQ(o.status, 0) << describe(o);
    const std::string id = session_id(o);
    Output applied = f.chock({"apply", id, "--yes"});
    EXPECT_EQ(applied.status, 1) << describe(applied);
    EXPECT_NE(applied.err.find(std::string("not applied: the commits change ") + file), std::string::npos)
        << applied.err;
    EXPECT_NE(applied.err.find("parked at refs/chock/" + id), std::string::npos) << applied.err;
    EXPECT_FALSE(exists(f.file(file))) << file;
  }
  // The neighbour: any other file of the same range applies with the allow row.
  Output o = f.run({"--keep"}, "echo notes > notes.json && git add notes.json && git commit -qm Notes");
  ASSERT_EQ(o.status, 0) << describe(o);
  Output applied = f.chock({"apply", session_id(o), "--yes"});
  EXPECT_EQ(applied.status, 0) << describe(applied);
  EXPECT_TRUE(exists(f.file("notes.json")));
}

TEST(HostileGit, ACallCannotGiveAProjectWithoutChockZonOne) {
  Fixture f;
  f.init_git();
  std::string id = commit_policy_change(f);
  expect_refused_and_parked(f, f.chock({"apply", id, "--yes"}), id);
  EXPECT_FALSE(exists(f.file("chock.zon")));
}

TEST(HostileGit, TheLibraryRefusesAConfigurationChangeItsApproverDidNotConfirm) {
  Fixture f;
  f.init_git();
  std::string id = commit_policy_change(f);
  ::setenv("XDG_DATA_HOME", f.data().c_str(), 1);
  std::vector<std::string> seen;
  auto approve_all = [&](const workspace::ApplyPlan& plan) {
    seen = plan.configuration;
    return workspace::Approval{true, ""};
  };
  auto outcome = workspace::apply(id, workspace::Mode::merge, approve_all);
  ::unsetenv("XDG_DATA_HOME");
  ASSERT_TRUE(outcome.has_value()) << outcome.error().message();
  EXPECT_EQ(seen, std::vector<std::string>{"chock.zon"});
  EXPECT_EQ(outcome->state, workspace::ApplyOutcome::State::refused);
  EXPECT_NE(outcome->message.find("the commits change chock.zon"), std::string::npos) << outcome->message;
  EXPECT_FALSE(exists(f.file("chock.zon")));
}

TEST(HostileGit, OnATerminalTheDiffIsShownAndOnlyAnExplicitYesApplies) {
  Fixture f;
  std::string id = allowing_project_with_a_policy_change(f);
  Output no = f.on_terminal({"apply", id}, "a\n");  // "always" is not offered, so not a yes
  EXPECT_NE(no.out.find("| +.{ .network = .host }"), std::string::npos) << describe(no);
  EXPECT_NE(no.out.find("| -.{ .policy"), std::string::npos) << describe(no);
  EXPECT_NE(no.out.find("chock.zon (+1 -1)"), std::string::npos) << describe(no);
  EXPECT_NE(no.out.find("a.txt (+1 -0)"), std::string::npos) << describe(no);
  EXPECT_EQ(no.out.find("[a]lways"), std::string::npos) << describe(no);
  EXPECT_NE(no.out.find("not applied: you answered no"), std::string::npos) << describe(no);
  EXPECT_EQ(read_file(f.file("chock.zon")), kAllowApply);

  Output yes = f.on_terminal({"apply", id}, "y\n");
  EXPECT_EQ(yes.status, 0) << describe(yes);
  EXPECT_NE(yes.out.find("applied 1 commit of session " + id), std::string::npos) << describe(yes);
  EXPECT_EQ(read_file(f.file("chock.zon")), ".{ .network = .host }\n");
}

TEST(HostileGit, TheApplyQuestionListsPathsAndShowsTheCallsWordsEscaped) {
  Fixture f;
  f.init_git();
  // A subject that would set the clipboard, erase its own line and paint a
  // fake line; a file name with a newline and an escape.
  Output o =
      f.run({},
            "printf x > \"$(printf 'new\\nfile\\033[2K')\" && git add -A && "
            "git commit -qm \"$(printf 'fix\\033]52;c;cHduZWQ=\\007\\033[2K\\033[1Aapplied cleanly')\"");
  ASSERT_EQ(o.status, 0) << describe(o);
  std::string id = session_id(o);
  // The project's branch, as a person could name it: an 8-bit CSI in UTF-8.
  git_ok(f.project(), {"checkout", "-q", "-b",
                       "feature\xc2\x9b"
                       "2J"});
  Output asked = f.on_terminal({"apply", id}, "n\n");
  EXPECT_EQ(asked.out.find('\x1b'), std::string::npos) << describe(asked);
  EXPECT_EQ(asked.out.find("\xc2\x9b"), std::string::npos) << describe(asked);
  EXPECT_NE(asked.out.find("fix\\x1b]52;c;cHduZWQ=\\x07\\x1b[2K\\x1b[1Aapplied cleanly"), std::string::npos)
      << describe(asked);
  EXPECT_NE(asked.out.find("refs/heads/feature\\u009b2J"), std::string::npos) << describe(asked);
  EXPECT_NE(asked.out.find("changing 1 path(s)"), std::string::npos) << describe(asked);
  EXPECT_NE(asked.out.find("new\\nfile\\x1b[2K (+1 -0)"), std::string::npos) << describe(asked);
  EXPECT_NE(asked.out.find("not applied: you answered no"), std::string::npos) << describe(asked);
}

// A denied .env whose bytes git still holds three ways, none reachable from
// a branch or a tag: staged and never committed, staged then unstaged (a
// dangling blob), and committed then amended out (only the reflog has it).
void plant_denied_versions(const Fixture& f) {
  write_file(f.file(".env"), "TOKEN=AMENDED_OUT\n");
  write_file(f.file("a.txt"), "alpha 2\n");
  git_ok(f.project(), {"add", ".env", "a.txt"});
  git_ok(f.project(), {"commit", "-qm", "second"});
  git_ok(f.project(), {"rm", "-q", "--cached", ".env"});
  git_ok(f.project(), {"commit", "-q", "--amend", "-m", "second"});
  write_file(f.file(".env"), "TOKEN=DANGLING\n");
  git_ok(f.project(), {"add", ".env"});
  git_ok(f.project(), {"rm", "-q", "--cached", ".env"});
  write_file(f.file(".env"), "TOKEN=STAGED\n");
  git_ok(f.project(), {"add", ".env"});
}

// Every object the call's git can name, from every pack index and loose
// object under its git dirs, printed by git itself.
constexpr const char* kEveryObject =
    "{ for i in $(find /run/chock/git -name '*.idx'); do git show-index < $i | cut -d' ' -f2; done; "
    "find /run/chock/git/repo/objects /run/chock/git/common/objects -type f -path "
    "'*/objects/[0-9a-f][0-9a-f]/*' | "
    "sed 's|.*/objects/||; s|/||'; } | sort -u | while read h; do git cat-file -p $h; done 2>/dev/null | "
    "grep -a TOKEN; echo objects-read";

TEST(HostileGit, ADeniedFilesBytesAreNotInTheSandboxWhereverGitKeepsThem) {
  Fixture f;
  f.init_git();
  plant_denied_versions(f);
  // Outside, git holds all three: the defence below is what hides them.
  Output outside = git(f.project(), {"fsck", "--unreachable", "--no-reflogs"});
  ASSERT_NE(outside.out.find("unreachable blob"), std::string::npos) << outside.out;
  Output o =
      f.run({"--deny", ".env"}, std::string(kEveryObject) +
                                    " && cat .env && git log --format=%s && git show -q HEAD~1 && "
                                    "git blame a.txt && echo more >> a.txt && git commit -qam third && "
                                    "git log -1 --format=%s");
  EXPECT_EQ(o.status, 0) << describe(o);
  EXPECT_EQ(o.out.find("TOKEN"), std::string::npos) << describe(o);
  EXPECT_NE(o.out.find("objects-read"), std::string::npos) << describe(o);
  EXPECT_NE(o.out.find("chock: this file is denied by the project"), std::string::npos) << describe(o);
  EXPECT_NE(o.out.find("second\ninitial\n"), std::string::npos) << describe(o);
  EXPECT_NE(o.out.find("alpha 2"), std::string::npos) << describe(o);
  EXPECT_NE(o.out.find("\nthird\n"), std::string::npos) << describe(o);
  // A later call of the session sees a branch made since, and still no token.
  write_file(f.file("b.txt"), "bravo 2\n");
  git_ok(f.project(), {"checkout", "-q", "-b", "later"});
  git_ok(f.project(), {"commit", "-qm", "on later", "--", "b.txt"});
  // ...and not a branch made since that holds the denied file itself.
  git_ok(f.project(), {"checkout", "-q", "-b", "leaky"});
  git_ok(f.project(), {"commit", "-qm", "commits the staged .env"});
  Output again =
      f.run({"--session", session_id(o)},
            std::string(kEveryObject) + " && git log -1 --format=%s later && git branch --list leaky");
  EXPECT_EQ(again.status, 0) << describe(again);
  EXPECT_EQ(again.out.find("TOKEN"), std::string::npos) << describe(again);
  EXPECT_NE(again.out.find("on later\n"), std::string::npos) << describe(again);
  EXPECT_EQ(again.out.find("leaky"), std::string::npos) << describe(again);
  EXPECT_NE(again.err.find("refs/heads/leaky is not in this call's view of the repository"),
            std::string::npos)
      << describe(again);
}

TEST(HostileGit, TheRepositorysCredentialsNeverReachACall) {
  Fixture f;
  f.init_git();
  git_ok(f.project(), {"remote", "add", "origin", "https://x-access-token:SECRET1@example.com/o/r.git"});
  git_ok(f.project(), {"remote", "add", "mirror", "https://example.com/m.git?private_token=SECRET2"});
  git_ok(f.project(), {"config", "http.https://example.com/.extraheader", "AUTHORIZATION: basic SECRET3"});
  git_ok(f.project(), {"config", "credential.helper", "store --file /SECRET4"});
  git_ok(f.project(), {"config", "core.sshCommand", "ssh -i /SECRET5"});
  git_ok(f.project(), {"config", "url.https://SECRET6@example.com/.insteadOf", "https://example.com/"});
  write_file(f.project() + "/.git/more-config", "[http]\n\textraheader = AUTHORIZATION: bearer SECRET7\n");
  git_ok(f.project(), {"config", "include.path", "more-config"});
  Output o = f.run({},
                   "git config -l --show-origin; git remote -v; git log -1 --format=%s; "
                   "find /run/chock/git -type f -exec cat {} + | grep -a -c SECRET; "
                   "ls /run/chock/git/repo");
  EXPECT_EQ(o.out.find("SECRET"), std::string::npos) << describe(o);
  EXPECT_NE(o.out.find("origin\thttps://example.com/o/r.git (fetch)"), std::string::npos) << describe(o);
  EXPECT_NE(o.out.find("mirror\thttps://example.com/m.git (push)"), std::string::npos) << describe(o);
  EXPECT_NE(o.out.find("\ninitial\n0\nobjects\n"), std::string::npos) << describe(o);
}

}  // namespace
}  // namespace chock::test::ws
