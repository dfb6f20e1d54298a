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
                                 " && : " + marker_});
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
  // Every session takes a call or says what is wrong with it; every commit is reachable.
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

}  // namespace
}  // namespace chock::test::reliability
