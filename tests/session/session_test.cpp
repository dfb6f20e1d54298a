// The call in a session as a library service: a test program drives the
// engine (chock/session.hpp) the way chock run, chock mcp and an embedder
// do, with no chock binary. Calls of one session at once, a background call,
// a cancel that reaches a daemon the call left, and an apply that waits for
// a running call; and the program that embeds the engine is never started
// again by it (its helpers are chock-helper).
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <future>
#include <mutex>
#include <string>
#include <thread>

#include "chock/session.hpp"
#include "chock/workspace.hpp"
#include "session/tasks.hpp"
#include "support.hpp"

namespace chock::test::session_engine {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// Every start of this program appends a line to a file named after the
// program's own inode, so a start by anything that re-executes it (as
// `/proc/self/exe`) is seen, whatever its arguments or environment.
std::string starts_file() {
  struct stat st {};
  if (::stat("/proc/self/exe", &st) != 0) return "";
  return "/tmp/chock-session-test-starts." + std::to_string(st.st_dev) + "." + std::to_string(st.st_ino);
}

const bool kCounted = [] {
  const std::string path = starts_file();
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd >= 0) {
    const std::string line = std::to_string(::getpid()) + "\n";
    (void)!::write(fd, line.data(), line.size());
    ::close(fd);
  }
  return true;
}();

// The engine reads the data, state, config and cache directories from this
// process's environment, as Chock always does: each test's own.
class SessionEngine : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const auto& [name, value] : f_.options().env) ::setenv(name.c_str(), value.c_str(), 1);
    f_.init_git();
  }

  session::Request request(std::vector<std::string> argv) const {
    session::Request r;
    r.project = f_.project();
    r.argv = std::move(argv);
    return r;
  }

  ws::Fixture f_;
};

// Collects a call's output and Chock's lines.
struct Seen {
  std::mutex mutex;
  std::string out, lines;
  session::Hooks hooks() {
    session::Hooks h;
    h.output = [this](int, std::string_view bytes) {
      std::lock_guard g(mutex);
      out.append(bytes);
    };
    h.say = [this](const std::string& line) {
      std::lock_guard g(mutex);
      lines += line + "\n";
    };
    return h;
  }
};

// A session kept for more calls; its id.
std::string kept(const SessionEngine& t, const ws::Fixture& f, const std::string& script = "true") {
  session::Request r;
  r.project = f.project();
  r.keep = true;
  r.argv = {"sh", "-c", script};
  Seen seen;
  auto o = session::call(r, seen.hooks());
  EXPECT_TRUE(o) << (o ? "" : o.error().message());
  if (!o) return "";
  EXPECT_TRUE(o->created);
  EXPECT_EQ(o->result->exit_status(), 0) << seen.out << seen.lines;
  (void)t;
  return o->session;
}

// Host processes whose command line holds `marker`.
int processes_with(const std::string& marker) {
  int n = 0;
  DIR* d = ::opendir("/proc");
  if (d == nullptr) return -1;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    std::ifstream in(std::string("/proc/") + e->d_name + "/cmdline");
    std::string cmd((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (cmd.find(marker) != std::string::npos) ++n;
  }
  ::closedir(d);
  return n;
}

template <class Check>
bool within(milliseconds limit, Check check) {
  const auto until = Clock::now() + limit;
  while (Clock::now() < until) {
    if (check()) return true;
    std::this_thread::sleep_for(milliseconds(20));
  }
  return check();
}

TEST_F(SessionEngine, AStartOfThisProgramIsCountedFromHere) {
  // Truncated once the suite runs: from here, a line is a start of this
  // program by something else (the last test reads it).
  ASSERT_TRUE(kCounted);
  const int fd = ::open(starts_file().c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOFOLLOW);
  ASSERT_GE(fd, 0) << starts_file();
  ::close(fd);
}

TEST_F(SessionEngine, ACallInANewSessionThenASecondCallInIt) {
  Seen first;
  session::Request r = request({"sh", "-c", "echo made > made.txt && echo said"});
  r.keep = true;
  auto one = session::call(r, first.hooks());
  ASSERT_TRUE(one) << one.error().message();
  EXPECT_TRUE(one->created);
  ASSERT_TRUE(one->result);
  EXPECT_EQ(one->result->exit_status(), 0) << first.out << first.lines;
  EXPECT_EQ(first.out, "said\n");
  EXPECT_NE(first.lines.find("session " + one->session), std::string::npos) << first.lines;
  // Nothing of the call reached the project.
  EXPECT_FALSE(exists(f_.file("made.txt")));

  Seen second;
  session::Request again = request({"cat", "made.txt"});
  again.session = one->session;
  auto two = session::call(again, second.hooks());
  ASSERT_TRUE(two) << two.error().message();
  EXPECT_FALSE(two->created);
  EXPECT_EQ(two->session, one->session);
  EXPECT_EQ(two->result->exit_status(), 0) << second.lines;
  EXPECT_EQ(second.out, "made\n");
}

TEST_F(SessionEngine, ASessionOfOneCallThatLeftNothingIsRemoved) {
  Seen seen;
  auto o = session::call(request({"true"}), seen.hooks());
  ASSERT_TRUE(o) << o.error().message();
  EXPECT_TRUE(o->created);
  EXPECT_TRUE(o->removed) << seen.lines;
  EXPECT_FALSE(workspace::load(o->session));
}

TEST_F(SessionEngine, ABackgroundCallAnswersAtOnceAndItsOutputIsRead) {
  const std::string id = kept(*this, f_);
  ASSERT_FALSE(id.empty());
  session::Request r = request({"sh", "-c", "sleep 2; echo from-the-task"});
  r.session = id;
  r.background = true;
  const auto t0 = Clock::now();
  auto o = session::call(r);
  const auto answered = Clock::now() - t0;
  ASSERT_TRUE(o) << o.error().message();
  ASSERT_FALSE(o->task.empty());
  EXPECT_FALSE(o->result);
  EXPECT_LT(answered, milliseconds(1500));
  auto task = session::find_task(o->task);
  ASSERT_TRUE(task) << task.error().message();
  ASSERT_TRUE(within(milliseconds(60000), [&] {
    auto now = session::find_task(o->task);
    return now && !session::task_running(*now) && now->state.value("state", "") == "exited";
  }));
  auto ended = session::find_task(o->task);
  ASSERT_TRUE(ended);
  auto out = session::task_output(*ended);
  ASSERT_TRUE(out);
  EXPECT_NE(out->find("from-the-task"), std::string::npos) << *out;
  EXPECT_EQ(ended->state.value("exit_status", -1), 0);
}

TEST_F(SessionEngine, ACancelEndsADaemonTheCallLeft) {
  // A process that left its parent's session and process group, then the
  // call waits: the cancel reaches it all the same.
  const std::string marker = "2147483" + std::to_string(::getpid() % 1000);
  std::atomic<bool> started{false};
  session::Hooks hooks;
  hooks.started = [&] { started = true; };
  session::Call call(
      request({"sh", "-c", "setsid sleep " + marker + " </dev/null >/dev/null 2>&1 & sleep 600"}), hooks);
  call.start();
  ASSERT_TRUE(within(milliseconds(30000), [&] {
    return processes_with(std::string("sleep") + '\0' + marker) > 0;
  })) << "the daemon never appeared";
  EXPECT_TRUE(started.load());
  const auto t0 = Clock::now();
  call.cancel();
  auto o = call.wait();
  ASSERT_TRUE(o) << o.error().message();
  ASSERT_TRUE(o->result);
  EXPECT_TRUE(o->result->cancelled);
  EXPECT_TRUE(within(milliseconds(1000), [&] {
    return processes_with(std::string("sleep") + '\0' + marker) == 0;
  })) << "the daemon outlived the cancel";
  EXPECT_LT(Clock::now() - t0, milliseconds(2000));
}

TEST_F(SessionEngine, TwoCallsOfOneSessionRunAtOnce) {
  const std::string id = kept(*this, f_);
  ASSERT_FALSE(id.empty());
  std::atomic<bool> long_started{false}, long_ended{false};
  session::Request slow = request({"sleep", "5"});
  slow.session = id;
  session::Hooks hooks;
  hooks.started = [&] { long_started = true; };
  hooks.ended = [&] { long_ended = true; };
  session::Call sleeping(slow, hooks);
  sleeping.start();
  ASSERT_TRUE(within(milliseconds(30000), [&] { return long_started.load(); }));
  session::Request quick = request({"cat", "a.txt"});
  quick.session = id;
  Seen seen;
  const auto t0 = Clock::now();
  auto o = session::call(quick, seen.hooks());
  const auto took = Clock::now() - t0;
  ASSERT_TRUE(o) << o.error().message();
  EXPECT_EQ(o->result->exit_status(), 0) << seen.lines;
  EXPECT_EQ(seen.out, "alpha\n");
  EXPECT_LT(took, milliseconds(1000)) << seen.lines;
  EXPECT_FALSE(long_ended.load()) << "the first call was over before the second answered";
  auto first = sleeping.wait();
  ASSERT_TRUE(first);
  EXPECT_EQ(first->result->exit_status(), 0);
}

TEST_F(SessionEngine, ApplyWhileACallRunsWaitsForIt) {
  const std::string id =
      kept(*this, f_, "echo new > new.txt && git add new.txt && git commit -qm 'a new file'");
  ASSERT_FALSE(id.empty());
  std::atomic<bool> started{false};
  std::promise<Clock::time_point> ended_at;
  session::Request slow = request({"sleep", "2"});
  slow.session = id;
  session::Hooks hooks;
  hooks.started = [&] { started = true; };
  hooks.ended = [&] { ended_at.set_value(Clock::now()); };
  session::Call running(slow, hooks);
  running.start();
  ASSERT_TRUE(within(milliseconds(30000), [&] { return started.load(); }));
  auto applied = workspace::apply(id, workspace::Mode::merge, [](const workspace::ApplyPlan&) {
    return workspace::Approval{true, "", false};
  });
  const auto applied_at = Clock::now();
  ASSERT_TRUE(applied) << applied.error().message();
  EXPECT_EQ(applied->state, workspace::ApplyOutcome::State::applied) << applied->message;
  EXPECT_TRUE(exists(f_.file("new.txt")));
  auto call_ended = ended_at.get_future();
  ASSERT_EQ(call_ended.wait_for(std::chrono::seconds(0)), std::future_status::ready)
      << "apply returned while the call still ran";
  EXPECT_GE(applied_at, call_ended.get());
  ASSERT_TRUE(running.wait());
}

TEST_F(SessionEngine, ZzzThisProgramWasNeverStartedAgain) {
  // The holders, sweepers and task runners the tests above made are
  // chock-helper; this program started none of itself.
  std::this_thread::sleep_for(milliseconds(300));
  const std::string starts = read_file(starts_file());
  EXPECT_EQ(starts, "") << "this program was started again by the engine (pids: " << starts << ")";
}

}  // namespace
}  // namespace chock::test::session_engine
