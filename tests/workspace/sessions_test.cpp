// Sessions do not pile up: `chock run` without --session is a session of one
// call, removed when it leaves nothing to keep; `workspace list` says when
// each was made and used, newest first; `prune` removes what holds nothing
// any more, never unapplied work; `remove` takes the session's log with it.
#include <unistd.h>

#include <ctime>
#include <nlohmann/json.hpp>

#include "support.hpp"

namespace chock::test::ws {
namespace {

bool listed(const Fixture& f, const std::string& id) {
  return f.chock({"workspace", "list"}).out.find(id + " ") != std::string::npos;
}

TEST(OneCallSession, AGitCallThatMakesNoCommitIsRemovedAndItsLogStays) {
  Fixture f;
  f.init_git();
  // A change to the tree and to HOME (a tool's cache) is not work: work in a git session is a commit.
  Output o = f.run(
      {}, "echo scratch > a.txt; mkdir -p \"$HOME/.cache/tool\" && echo cached > \"$HOME/.cache/tool/x\"");
  ASSERT_EQ(o.status, 0) << describe(o);
  const std::string id = session_id(o);
  EXPECT_NE(o.err.find("a session of one call: kept only if it leaves work"), std::string::npos)
      << describe(o);
  EXPECT_NE(o.err.find("chock: session " + id + " removed: its call left no commit (--keep keeps a session)"),
            std::string::npos)
      << describe(o);
  EXPECT_FALSE(exists(f.sessions() + "/" + id));
  EXPECT_FALSE(listed(f, id));
  // The record of the call stays, and says how the session ended.
  EXPECT_TRUE(has_event(log_lines(f, id), "session.end", "\"reason\":\"nothing to keep\""));
  EXPECT_EQ(f.chock({"sessions", "verify", id}).status, 0);
  const std::string worktrees = git_ok(f.project(), {"worktree", "list", "--porcelain"});
  EXPECT_EQ(worktrees.find("worktree "), worktrees.rfind("worktree "))
      << "a worktree entry was left: " << worktrees;
}

TEST(OneCallSession, AFailedCallLeavesNoSession) {
  Fixture f;
  f.init_git();
  Output o = f.chock({"run", "--", "no-such-command-here"});
  EXPECT_EQ(o.status, 127) << describe(o);
  const std::string id = session_id(o);
  ASSERT_FALSE(id.empty()) << describe(o);
  EXPECT_NE(o.err.find("chock: session " + id + " removed"), std::string::npos) << describe(o);
  EXPECT_FALSE(exists(f.sessions() + "/" + id));
}

TEST(OneCallSession, AGitCallThatCommitsIsKeptAndSaysHowToApply) {
  Fixture f;
  f.init_git();
  Output o = f.run({}, "echo new > a.txt && git commit -qam 'Change a'");
  ASSERT_EQ(o.status, 0) << describe(o);
  const std::string id = session_id(o);
  EXPECT_NE(o.err.find("chock: session " + id + " kept: 1 commit(s) not applied; `chock apply " + id +
                       "` applies those of its HEAD, --session " + id + " continues it"),
            std::string::npos)
      << describe(o);
  EXPECT_TRUE(listed(f, id));
  Output apply = f.chock({"apply", id, "--yes"});
  EXPECT_EQ(apply.status, 0) << describe(apply);
  EXPECT_EQ(read_file(f.file("a.txt")), "new\n");
}

// Nothing is lost: a commit only a branch of the session's own reaches, or a
// stash, keeps the session, and remove refuses it without --force.
TEST(OneCallSession, WorkOnTheSessionsOwnBranchOrStashKeepsIt) {
  Fixture f;
  f.init_git();
  Output branch = f.run({},
                        "git checkout -q -b feat && git commit -q --allow-empty -m on-feat && "
                        "git checkout -q --detach HEAD~1");
  ASSERT_EQ(branch.status, 0) << describe(branch);
  const std::string id = session_id(branch);
  EXPECT_NE(branch.err.find("chock: session " + id + " kept: 1 commit(s)"), std::string::npos)
      << describe(branch);
  Output refused = f.chock({"workspace", "remove", id});
  EXPECT_EQ(refused.status, 1) << describe(refused);
  EXPECT_NE(refused.err.find("1 commit(s) on refs of its own (a branch, the stash)"), std::string::npos)
      << describe(refused);
  Output prune = f.chock({"workspace", "prune"});
  EXPECT_NE(prune.err.find("1 session(s) with unapplied work were kept"), std::string::npos)
      << describe(prune);
  EXPECT_TRUE(exists(f.sessions() + "/" + id));

  Output stash = f.run({}, "echo more >> a.txt && git stash -q");
  ASSERT_EQ(stash.status, 0) << describe(stash);
  EXPECT_NE(stash.err.find(" kept: "), std::string::npos) << describe(stash);
  EXPECT_TRUE(exists(f.sessions() + "/" + session_id(stash)));
}

TEST(OneCallSession, AnOverlayCallIsKeptOnlyWhenItChangedSomething) {
  Fixture f;
  f.init_plain();
  Output nothing = f.run({}, "cat a.txt >/dev/null; echo cached > \"$HOME/cache-file\"");
  ASSERT_EQ(nothing.status, 0) << describe(nothing);
  EXPECT_NE(nothing.err.find("removed: its call left no change"), std::string::npos) << describe(nothing);
  EXPECT_FALSE(exists(f.sessions() + "/" + session_id(nothing)));

  Output changed = f.run({}, "echo more >> a.txt");
  ASSERT_EQ(changed.status, 0) << describe(changed);
  const std::string id = session_id(changed);
  EXPECT_NE(changed.err.find("chock: session " + id + " kept: 1 changed path(s); `chock workspace adopt " +
                             id + "` copies them out"),
            std::string::npos)
      << describe(changed);
  EXPECT_TRUE(exists(f.sessions() + "/" + id));
}

TEST(OneCallSession, KeepKeepsAnEmptySessionForMoreCalls) {
  Fixture f;
  f.init_git();
  Output o = f.run({"--keep"}, "true");
  ASSERT_EQ(o.status, 0) << describe(o);
  const std::string id = session_id(o);
  EXPECT_NE(o.err.find("continue it with --session " + id), std::string::npos) << describe(o);
  EXPECT_EQ(o.err.find(" removed"), std::string::npos) << describe(o);
  // A continued session is never removed by its call, whatever the call leaves.
  Output next = f.run({"--session", id}, "true");
  EXPECT_EQ(next.status, 0) << describe(next);
  EXPECT_EQ(next.err.find(" removed"), std::string::npos) << describe(next);
  EXPECT_TRUE(exists(f.sessions() + "/" + id));
}

TEST(WorkspaceList, ShowsWhenEachSessionWasMadeAndUsedNewestUseFirst) {
  Fixture f;
  f.init_git();
  const std::string first = session_id(f.run({"--keep"}, "true"));
  ::sleep(1);
  const std::string second = session_id(f.run({"--keep"}, "echo x > new.txt"));
  ::sleep(1);
  ASSERT_EQ(f.run({"--session", first}, "true").status, 0);  // the first is now the last used
  Output list = f.chock({"workspace", "list"});
  ASSERT_EQ(list.status, 0) << describe(list);
  EXPECT_EQ(list.out.rfind("SESSION    KIND     MADE             LAST USED        UNAPPLIED      SIZE", 0),
            0U)
      << list.out;
  const auto at_first = list.out.find(first + " "), at_second = list.out.find(second + " ");
  ASSERT_NE(at_first, std::string::npos) << list.out;
  ASSERT_NE(at_second, std::string::npos) << list.out;
  EXPECT_LT(at_first, at_second) << list.out;
  const std::string row = list.out.substr(at_first, list.out.find('\n', at_first) - at_first);
  EXPECT_NE(row.find(" git "), std::string::npos) << row;
  EXPECT_NE(row.find(" 0 commits "), std::string::npos) << row;
  EXPECT_NE(row.find(" 20"), std::string::npos) << "made and last used are dates: " << row;
  EXPECT_NE(row.find("KiB"), std::string::npos) << row;
}

TEST(WorkspacePrune, RemovesAppliedAndEmptySessionsAndTheirLogsNeverUnappliedWork) {
  Fixture f;
  f.init_git();
  const std::string empty = session_id(f.run({"--keep"}, "true"));
  const std::string applied = session_id(f.run({}, "echo a > a.txt && git commit -qam A"));
  ASSERT_EQ(f.chock({"apply", applied, "--yes"}).status, 0);
  const std::string unapplied = session_id(f.run({}, "echo b > b.txt && git commit -qam B"));
  ASSERT_TRUE(listed(f, empty) && listed(f, applied) && listed(f, unapplied));

  // Unasked: the --keep session and the one used just now are someone's.
  Output unasked = f.chock({"workspace", "prune"});
  EXPECT_EQ(unasked.status, 0) << describe(unasked);
  EXPECT_NE(unasked.err.find("pruned 0 session(s)"), std::string::npos) << describe(unasked);
  EXPECT_NE(unasked.err.find("1 session(s) with unapplied work were kept; 1 used in the last day were kept "
                             "(name one, or --older-than DAYS); 1 made with --keep were kept"),
            std::string::npos)
      << describe(unasked);
  // --older-than: everything here was used just now, so nothing is old enough.
  Output young = f.chock({"workspace", "prune", "--older-than", "1"});
  EXPECT_EQ(young.status, 0) << describe(young);
  EXPECT_NE(young.err.find("pruned 0 session(s)"), std::string::npos) << describe(young);
  EXPECT_TRUE(listed(f, empty));

  // --older-than 0: any age, --keep or not; never the unapplied work.
  Output pruned = f.chock({"workspace", "prune", "--older-than", "0"});
  EXPECT_EQ(pruned.status, 0) << describe(pruned);
  EXPECT_NE(pruned.err.find("pruned 2 session(s)"), std::string::npos) << describe(pruned);
  EXPECT_NE(pruned.err.find("1 session(s) with unapplied work were kept"), std::string::npos)
      << describe(pruned);
  EXPECT_FALSE(listed(f, empty));
  EXPECT_FALSE(listed(f, applied));
  EXPECT_TRUE(listed(f, unapplied));
  EXPECT_EQ(log_path(f, empty), "");
  EXPECT_EQ(log_path(f, applied), "");
  EXPECT_NE(log_path(f, unapplied), "");
  // Named, the unapplied work still stays.
  Output named = f.chock({"workspace", "prune", unapplied});
  EXPECT_NE(named.err.find("pruned 0 session(s)"), std::string::npos) << describe(named);
  EXPECT_TRUE(listed(f, unapplied));
  // The unapplied commit still applies.
  EXPECT_EQ(f.chock({"apply", unapplied, "--yes"}).status, 0);
  EXPECT_EQ(read_file(f.file("b.txt")), "b\n");
}

// Sets a session's record as if it was made and last used `days` ago.
void age(const Fixture& f, const std::string& id, int days) {
  const std::string path = f.sessions() + "/" + id + "/session.json";
  auto record = nlohmann::json::parse(read_file(path));
  const auto then = static_cast<std::int64_t>(std::time(nullptr)) - static_cast<std::int64_t>(days) * 86400;
  record["created"] = then;
  record["last_run"] = then;
  write_file(path, record.dump(2) + "\n", 0600);
}

// Unasked, prune removes an empty session only once it is a day unused and
// was not made with --keep; a --keep session of any age stays until it is
// named or --older-than reaches it.
TEST(WorkspacePrune, LeavesKeptAndRecentSessionsUnlessNamedOrOlderThan) {
  Fixture f;
  f.init_git();
  auto applied_session = [&] {
    const std::string id = session_id(f.run({}, "echo x >> a.txt && git commit -qam X"));
    EXPECT_EQ(f.chock({"apply", id, "--yes"}).status, 0);
    return id;
  };
  const std::string old_plain = applied_session();
  const std::string recent_plain = applied_session();
  const std::string old_kept = session_id(f.run({"--keep"}, "true"));
  const std::string recent_kept = session_id(f.run({"--keep"}, "true"));
  age(f, old_plain, 3);
  age(f, old_kept, 3);

  Output unasked = f.chock({"workspace", "prune"});
  EXPECT_EQ(unasked.status, 0) << describe(unasked);
  EXPECT_NE(unasked.err.find("pruned 1 session(s)"), std::string::npos) << describe(unasked);
  EXPECT_FALSE(listed(f, old_plain));
  EXPECT_TRUE(listed(f, recent_plain));
  EXPECT_TRUE(listed(f, old_kept));
  EXPECT_TRUE(listed(f, recent_kept));

  // --older-than reaches a --keep session as old as it says, and no younger one.
  Output older = f.chock({"workspace", "prune", "--older-than", "2"});
  EXPECT_NE(older.err.find("pruned 1 session(s)"), std::string::npos) << describe(older);
  EXPECT_FALSE(listed(f, old_kept));
  EXPECT_TRUE(listed(f, recent_kept));
  EXPECT_TRUE(listed(f, recent_plain));

  // Named: whatever its age, --keep or not; no other session or log goes.
  Output named = f.chock({"workspace", "prune", recent_kept, recent_plain});
  EXPECT_EQ(named.status, 0) << describe(named);
  EXPECT_NE(named.err.find("pruned 2 session(s)"), std::string::npos) << describe(named);
  EXPECT_FALSE(listed(f, recent_kept));
  EXPECT_FALSE(listed(f, recent_plain));

  // A name that is no session is said, in one line.
  Output missing = f.chock({"workspace", "prune", "deadbeef"});
  EXPECT_EQ(missing.status, 125) << describe(missing);
  EXPECT_NE(missing.err.find("chock: no session 'deadbeef'"), std::string::npos) << describe(missing);
  Output malformed = f.chock({"workspace", "prune", "../x"});
  EXPECT_EQ(malformed.status, 2) << describe(malformed);
}

TEST(WorkspacePrune, RemovesTheLogsOfSessionsAlreadyGone) {
  Fixture f;
  f.init_plain();
  const std::string gone = session_id(f.run({}, "true"));  // removed at once, its log kept
  ASSERT_NE(log_path(f, gone), "");
  Output pruned = f.chock({"workspace", "prune"});
  EXPECT_EQ(pruned.status, 0) << describe(pruned);
  EXPECT_NE(pruned.err.find("pruned 0 session(s) and 1 log(s) of sessions already gone"), std::string::npos)
      << describe(pruned);
  EXPECT_EQ(log_path(f, gone), "");
}

TEST(WorkspaceRemove, TakesTheLogUnlessKeepLog) {
  Fixture f;
  f.init_git();
  const std::string a = session_id(f.run({"--keep"}, "true"));
  const std::string b = session_id(f.run({"--keep"}, "true"));
  Output ra = f.chock({"workspace", "remove", a});
  EXPECT_EQ(ra.status, 0) << describe(ra);
  EXPECT_NE(ra.err.find("removed session " + a + " and its log"), std::string::npos) << describe(ra);
  EXPECT_EQ(log_path(f, a), "");
  Output rb = f.chock({"workspace", "remove", b, "--keep-log"});
  EXPECT_EQ(rb.status, 0) << describe(rb);
  EXPECT_TRUE(has_event(log_lines(f, b), "session.end", "\"removed\":true"));
  EXPECT_EQ(f.chock({"sessions", "verify", b}).status, 0);
}

// "No such session" is one exit status in every command that takes one.
TEST(NoSuchSession, EveryCommandExits125AndSaysSoInOneLine) {
  Fixture f;
  f.init_git();
  const std::vector<std::vector<std::string>> commands = {
      {"run", "--session", "nosuch", "--", "true"},
      {"apply", "nosuch", "--yes"},
      {"workspace", "remove", "nosuch"},
      {"workspace", "adopt", "nosuch"},
      {"sessions", "verify", "nosuch"},
  };
  for (const auto& args : commands) {
    Output o = f.chock(args);
    EXPECT_EQ(o.status, 125) << describe(o);
    EXPECT_EQ(o.err.rfind("chock: no ", 0), 0U) << describe(o);
    EXPECT_NE(o.err.find("session 'nosuch'"), std::string::npos) << describe(o);
    EXPECT_EQ(o.err.find('\n'), o.err.size() - 1) << "more than one line: " << describe(o);
  }
}

}  // namespace
}  // namespace chock::test::ws
