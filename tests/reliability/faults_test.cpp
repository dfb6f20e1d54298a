// Faults: `chock` killed with SIGKILL at moments spread over what it does
// (a new session and its worktree, a call's start-up, the call, its log
// lines, apply, workspace remove). After each kill nothing of the call runs
// on and no mount is left; the real repository passes `git fsck`, its
// branch and working tree are before or after an apply and never between;
// and at the end every commit a call made is still reachable (from its
// session, from refs/chock/<session> or from the branch), and every session
// either takes a call or is listed with what is wrong.
#include <unistd.h>

#include <chrono>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "reliability_support.hpp"
#include "support.hpp"

namespace chock::test::reliability {
namespace {

using ws::describe;
using ws::Fixture;
using ws::session_id;

enum class Phase { new_session, call, apply, remove };
constexpr const char* kPhaseNames[] = {"new session", "call in a session", "apply", "workspace remove"};

class Faults : public ::testing::Test {
 protected:
  void SetUp() override {
    // Kept sessions' overlays are held, briefly: `strace -f` waits for a holder to end.
    f.set_env("CHOCK_OVERLAY_HOLD_MS", "300");
    f.init_git();
    marker_ = "reliability-" + std::to_string(::getpid());
  }
  RunOptions options() const {
    RunOptions o = f.options();
    o.timeout = std::chrono::seconds(120);
    return o;
  }
  // A call that commits; its message names it, and the marker names its processes.
  std::vector<std::string> committing(const std::string& message, const std::string& session) const {
    std::vector<std::string> args{"run"};
    if (session.empty())
      args.emplace_back("--keep");
    else
      args.insert(args.end(), {"--session", session});
    args.insert(args.end(), {"--", "sh", "-c",
                             "echo " + message + " > " + message + ".txt && git add " + message +
                                 ".txt && git -c user.name=t -c user.email=t@t commit -qm " + message +
                                 " && echo committed " + message + " && : " + marker_});
    return args;
  }
  std::vector<std::string> sessions() const {
    std::vector<std::string> out;
    Output list = test::chock({"workspace", "list", "--json"}, options());
    for (std::size_t at = list.out.find("\"id\":"); at != std::string::npos;
         at = list.out.find("\"id\":", at + 1)) {
      const std::size_t start = list.out.find('"', at + 5) + 1;
      out.push_back(list.out.substr(start, list.out.find('"', start) - start));
    }
    return out;
  }
  // What must hold after every kill.
  void expect_nothing_left(const std::string& when) const {
    bool gone = false;
    for (int i = 0; i < 100 && !gone; ++i) {
      gone = processes_with(marker_).empty();
      if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    EXPECT_TRUE(gone) << when << ": a process of the call runs on";
    const Footprint left = footprint(Watched{{f.project(), f.data()}, f.data(), f.data(), {}});
    EXPECT_EQ(left.mounts_below, 0U) << when;
    EXPECT_EQ(left.zombies, 0U) << when;
    Output fsck = ws::git(f.project(), {"fsck", "--no-progress", "--no-dangling"});
    EXPECT_EQ(fsck.status, 0) << when << ": " << describe(fsck);
    // The real working tree matches its branch: an apply is all there or not at all.
    Output status = ws::git(f.project(), {"status", "--porcelain", "--untracked-files=no"});
    EXPECT_EQ(status.out, "") << when << ": the real working tree is between two states";
  }

  // Every session takes a call or says what is wrong with it; every commit in
  // `made` is reachable from a session, refs/chock/<session> or a branch.
  void expect_every_commit_reachable(const std::vector<std::string>& made) const {
    std::set<std::string> reachable;
    auto collect = [&](const std::string& text) {
      for (std::size_t start = 0, end; start < text.size(); start = end + 1) {
        end = text.find('\n', start);
        if (end == std::string::npos) end = text.size();
        reachable.insert(text.substr(start, end - start));
      }
    };
    collect(ws::git(f.project(), {"log", "--format=%s", "--branches", "--glob=refs/chock/*"}).out);
    Output list = test::chock({"workspace", "list"}, options());
    ASSERT_EQ(list.status, 0) << describe(list);
    for (const auto& id : sessions()) {
      Output o = test::chock({"run", "--session", id, "--", "git", "log", "--format=%s"}, options());
      if (o.status == 0)
        collect(o.out);
      else
        EXPECT_TRUE(has(list.out, id)) << "session " << id << " neither works nor is listed: " << describe(o);
    }
    for (const auto& m : made) EXPECT_TRUE(reachable.count(m) == 1) << "commit " << m << " was lost";
  }

  Fixture f;
  std::string marker_;
};

TEST_F(Faults, KilledAtMomentsSpreadOverItsWorkLosesNoCommitAndLeavesNothingBehind) {
  const std::size_t points = profile_count(60, 420);
  std::mt19937 random(static_cast<unsigned>(::getpid()));
  // How long each phase takes unkilled, measured on this machine first.
  std::map<Phase, std::chrono::microseconds> takes;
  std::vector<std::string> made;  // messages of commits whose call ended on its own
  std::size_t message = 0;
  auto timed = [&](const std::vector<std::string>& args) {
    const auto start = std::chrono::steady_clock::now();
    Output o = test::chock(args, options());
    return std::pair{
        o, std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start)};
  };
  {
    auto [o, t] = timed(committing("m" + std::to_string(message), ""));
    ASSERT_EQ(o.status, 0) << describe(o);
    made.push_back("m" + std::to_string(message++));
    takes[Phase::new_session] = t;
    const std::string id = session_id(o);
    auto [c, tc] = timed(committing("m" + std::to_string(message), id));
    ASSERT_EQ(c.status, 0) << describe(c);
    made.push_back("m" + std::to_string(message++));
    takes[Phase::call] = tc;
    auto [a, ta] = timed({"apply", id, "--yes"});
    ASSERT_EQ(a.status, 0) << describe(a);
    takes[Phase::apply] = ta;
    auto [r, tr] = timed({"workspace", "remove", id, "--force"});
    ASSERT_EQ(r.status, 0) << describe(r);
    takes[Phase::remove] = tr;
  }
  std::map<Phase, std::size_t> killed;
  for (std::size_t point = 0; point < points; ++point) {
    const Phase phase = static_cast<Phase>(point % 4);
    std::vector<std::string> live = sessions();
    // A session to work in: one that exists, else a new one made unkilled.
    if (live.empty() || (phase != Phase::new_session && point % 8 == 1)) {
      Output o = test::chock(committing("m" + std::to_string(message), ""), options());
      ASSERT_EQ(o.status, 0) << describe(o);
      made.push_back("m" + std::to_string(message++));
      live.push_back(session_id(o));
    }
    const std::string session = live[random() % live.size()];
    std::vector<std::string> args;
    const std::string name = "m" + std::to_string(message++);
    switch (phase) {
      case Phase::new_session:
        args = committing(name, "");
        break;
      case Phase::call:
        args = committing(name, session);
        break;
      case Phase::apply:
        args = {"apply", session, "--yes"};
        break;
      case Phase::remove:
        args = {"workspace", "remove", session, "--force"};
        break;
    }
    const auto span = takes[phase].count();
    const std::chrono::microseconds at(static_cast<long long>(random() % static_cast<unsigned>(span + 1)));
    Killed k = run_and_kill(args, options(), at);
    if (k.killed)
      ++killed[phase];
    else if (k.status == 0 && (phase == Phase::new_session || phase == Phase::call))
      made.push_back(name);
    expect_nothing_left(std::string(kPhaseNames[static_cast<int>(phase)]) + " killed at " +
                        std::to_string(at.count()) + " us (point " + std::to_string(point) + ")");
    if (HasFailure()) break;
  }
  expect_every_commit_reachable(made);
  std::size_t total = 0;
  for (const auto& [phase, n] : killed) total += n;
  RecordProperty("killed", static_cast<int>(total));
  std::printf(
      "reliability: %zu points, %zu kills (new session %zu, call %zu, apply %zu, remove %zu), "
      "%zu commits made, all reachable\n",
      points, total, killed[Phase::new_session], killed[Phase::call], killed[Phase::apply],
      killed[Phase::remove], made.size());
  EXPECT_GE(total, points / 4) << "too few points landed while chock ran";
}

// The same promises, with each kill landing on a step named in advance: the
// steps of each command are found by tracing it once unkilled (strace -f), and
// each run is killed as it enters one of them (strace's syscall injection),
// from the same state as the traced run. Every commit made inside counts,
// killed or not: the call says so on its stdout, which outlives chock. The
// short profile kills at sixteen steps spread over each command; the long
// one at every step.
TEST_F(Faults, KilledBeforeEachNamedStepLosesNoCommitAndLeavesNothingBehind) {
  if (const std::string why = strace_unusable(); !why.empty()) GTEST_SKIP() << why;
  // Ten more files: a commit that changes one is near enough for a derived base.
  for (int i = 0; i < 10; ++i) write_file(f.file("f" + std::to_string(i) + ".txt"), "0\n");
  f.commit_all("ten more");
  std::vector<std::string> made;
  std::size_t message = 0, moves = 0;
  // The real branch moves on: one file changed (the next base is derived) or every one (checked out).
  auto move_branch = [&](bool every) {
    ++moves;
    for (int i = 0; i < (every ? 10 : 1); ++i)
      write_file(f.file("f" + std::to_string(i) + ".txt"), std::to_string(moves) + "\n");
    f.commit_all("moved " + std::to_string(moves));
  };
  auto new_session = [&] {
    const std::string name = "m" + std::to_string(message++);
    Output o = test::chock(committing(name, ""), options());
    EXPECT_EQ(o.status, 0) << describe(o);
    made.push_back(name);
    return session_id(o);
  };
  struct Phase {
    const char* name;
    bool commits;  // its command makes a commit named by `message`
  };
  const Phase phases[] = {{"new session, its base checked out", true},
                          {"new session, its base derived", true},
                          {"call in a session", true},
                          {"apply after the branch moved", false},
                          {"workspace remove --force", false}};
  // Brings the state a phase's command starts from; its command.
  auto prepare = [&](std::size_t phase, const std::string& name) -> std::vector<std::string> {
    switch (phase) {
      case 0:
        move_branch(true);
        return committing(name, "");
      case 1:
        move_branch(false);
        return committing(name, "");
      case 2:
        return committing(name, new_session());
      case 3: {
        const std::string id = new_session();
        move_branch(false);
        return {"apply", id, "--yes"};
      }
      default:
        return {"workspace", "remove", new_session(), "--force"};
    }
  };
  const std::size_t per_phase = profile_count(16, 100000);
  std::size_t total_points = 0, total_kills = 0;
  for (std::size_t phase = 0; phase < std::size(phases); ++phase) {
    std::string name = "m" + std::to_string(message++);
    const std::vector<Step> steps = steps_of(prepare(phase, name), options());
    ASSERT_FALSE(steps.empty()) << phases[phase].name << ": the traced run failed or took no step";
    if (phases[phase].commits) made.push_back(name);
    std::size_t points = 0, kills = 0, inside = 0, killed_after = 0;
    for (const Step& step : spread(steps, per_phase)) {
      name = "m" + std::to_string(message++);
      const std::vector<std::string> args = prepare(phase, name);
      const Killed k = kill_before(step, args, options());
      ++points;
      kills += k.killed ? 1 : 0;
      // The call's own stdout says whether its commit was made, even when chock was killed after.
      if (phases[phase].commits && has(k.out, "committed " + name + "\n")) {
        made.push_back(name);
        ++inside;
        killed_after += k.killed ? 1 : 0;
      }
      expect_nothing_left(std::string(phases[phase].name) + ", killed before " + step.what + " (" +
                          step.syscall + " #" + std::to_string(step.occurrence) + ")");
      if (HasFailure()) return;
    }
    std::printf(
        "reliability: %s: %zu steps, killed before %zu of them, %zu kills landed, %zu commits made inside "
        "(%zu of them by calls whose chock was then killed)\n",
        phases[phase].name, steps.size(), points, kills, inside, killed_after);
    EXPECT_GE(kills * 4, points * 3) << phases[phase].name << ": too few kills landed on their step";
    total_points += points;
    total_kills += kills;
  }
  expect_every_commit_reachable(made);
  RecordProperty("killed", static_cast<int>(total_kills));
  std::printf("reliability: %zu named steps, %zu kills, %zu commits made\n", total_points, total_kills,
              made.size());
}

}  // namespace
}  // namespace chock::test::reliability
