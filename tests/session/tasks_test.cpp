// Background calls: `chock run --background` returns at once with a task id,
// the task's output is written by Chock and read (never edited) by later
// calls of the session, and a cancel ends every process of the task.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>

#include "support.hpp"

namespace chock::test::ws {
namespace {

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::string trimmed(std::string s) {
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

TEST(Tasks, ABackgroundCallReturnsAtOnceAndWaitGivesItsOutput) {
  Fixture f;
  f.init_git();
  const auto start = std::chrono::steady_clock::now();
  auto started = f.run({"--background"}, "echo started; sleep 2; echo done");
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_EQ(started.status, 0) << describe(started);
  EXPECT_LT(took, std::chrono::milliseconds(1500)) << "the call's 2 s were waited for";
  const std::string id = trimmed(started.out);
  ASSERT_EQ(id.size(), 11U) << describe(started);  // SESSION-NN
  auto waited = f.chock({"tasks", "wait", id, "--timeout", "30"});
  EXPECT_EQ(waited.status, 0) << describe(waited);
  EXPECT_EQ(waited.out, "started\ndone\n");
  auto listed = f.chock({"tasks", "list"});
  EXPECT_TRUE(has(listed.out, id + "  exited (0)")) << listed.out;
}

TEST(Tasks, LaterCallsReadTheOutputAndCannotEditIt) {
  Fixture f;
  f.init_git();
  auto started = f.run({"--background"}, "echo evidence");
  const std::string id = trimmed(started.out);
  ASSERT_EQ(f.chock({"tasks", "wait", id, "--timeout", "30"}).status, 0);
  const std::string session = id.substr(0, 8);
  auto later = f.run({"--session", session},
                     "cat /run/chock/tasks/task-01.out; "
                     "echo forged >> /run/chock/tasks/task-01.out 2>/dev/null; echo \"append $?\"; "
                     "rm -f /run/chock/tasks/task-01.out 2>/dev/null; echo \"rm $?\"; "
                     "mv /run/chock/tasks/task-01.out /run/chock/tasks/x 2>/dev/null; echo \"mv $?\"; "
                     "echo forged > /run/chock/tasks/task-02.out 2>/dev/null; echo \"new $?\"");
  EXPECT_EQ(later.status, 0) << describe(later);
  EXPECT_EQ(later.out, "evidence\nappend 2\nrm 1\nmv 1\nnew 2\n") << describe(later);
  EXPECT_EQ(f.chock({"tasks", "show", id}).out, "evidence\n");
}

TEST(Tasks, CancelEndsTheTasksWholeTreeADaemonIncluded) {
  Fixture f;
  f.init_git();
  auto started = f.run({"--background"}, "setsid sleep 3719 & echo up; sleep 3720");
  const std::string id = trimmed(started.out);
  ASSERT_EQ(id.size(), 11U) << describe(started);
  // Running: the daemon and the call's own sleep are there.
  bool up = false;
  for (int i = 0; i < 200 && !up; ++i) {
    up = run_process({"pgrep", "-f", "^sleep 3719"}).status == 0;
    if (!up) ::usleep(20000);
  }
  ASSERT_TRUE(up) << "the task's daemon never appeared";
  auto cancelled = f.chock({"tasks", "cancel", id});
  EXPECT_EQ(cancelled.status, 0) << describe(cancelled);
  EXPECT_EQ(run_process({"pgrep", "-f", "^sleep 37(19|20)"}).status, 1) << "a process of the task survived";
  auto listed = f.chock({"tasks", "list"});
  EXPECT_TRUE(has(listed.out, id + "  cancelled")) << listed.out;
  auto again = f.chock({"tasks", "cancel", id});
  EXPECT_EQ(again.status, 1);
}

// A task's mounts below /run/chock are a shell call's of a session that has
// a task (docs/mounts.md's table).
TEST(Tasks, ATasksMountsAreAShellCallsAndASessionKeepsAtMost32) {
  Fixture f;
  f.init_git();
  auto started = f.run({"--background"}, "grep -o ' /run/chock[^ ]*' /proc/self/mountinfo | sort");
  const std::string id = trimmed(started.out);
  auto waited = f.chock({"tasks", "wait", id, "--timeout", "30"});
  const std::string hooks = exists(f.project() + "/.git/hooks") ? " /run/chock/git/view/hooks\n" : "";
  EXPECT_EQ(waited.out,
            " /run/chock/bin/git\n /run/chock/cache\n /run/chock/git/admin\n /run/chock/git/common\n"
            " /run/chock/git/repo/objects\n /run/chock/git/view\n" +
                hooks + " /run/chock/scratch\n /run/chock/tasks\n")
      << describe(waited);
  const std::string session = id.substr(0, 8);
  for (int n = 2; n <= 32; ++n)
    ASSERT_EQ(f.run({"--session", session, "--background"}, "true").status, 0) << n;
  auto past = f.run({"--session", session, "--background"}, "true");
  EXPECT_EQ(past.status, 125) << describe(past);
  EXPECT_TRUE(has(past.err, "the session has 32 tasks, the most it keeps")) << describe(past);
}

TEST(Tasks, OutputPastEightMebibytesIsCutAndSaidSo) {
  Fixture f;
  f.init_git();
  auto started = f.run({"--background"}, "head -c 9000000 /dev/zero | tr '\\0' a");
  const std::string id = trimmed(started.out);
  auto waited = f.chock({"tasks", "wait", id, "--timeout", "60"});
  EXPECT_EQ(waited.status, 0) << waited.err;
  const std::string said =
      "\nchock: the task's output passed its cap of 8 MiB; 611392 bytes more were dropped\n";
  ASSERT_EQ(waited.out.size(), (8U << 20) + said.size());
  EXPECT_EQ(waited.out.substr(8U << 20), said);
  EXPECT_EQ(waited.out.find_first_not_of('a'), 8U << 20);
}

// What decides a task's state is nothing a call can open: a later call that
// takes a lock on every file it can see of the tasks (a read-only mount is
// enough for flock) does not keep an ended task running.
TEST(Tasks, ACallHoldingLocksOnTheTasksFilesCannotKeepAnEndedTaskRunning) {
  Fixture f;
  f.init_git();
  auto started = f.run({"--background"}, "echo ended");
  const std::string id = trimmed(started.out);
  ASSERT_EQ(f.chock({"tasks", "wait", id, "--timeout", "30"}).status, 0);
  const std::string session = id.substr(0, 8);
  auto holder = f.run({"--session", session, "--background"},
                      "cd /run/chock/tasks && for f in task-01*; do flock -x \"$f\" -c 'sleep 20' & done; "
                      "sleep 1; echo holding; wait");
  const std::string attacker = trimmed(holder.out);
  ASSERT_EQ(attacker.size(), 11U) << describe(holder);
  for (int i = 0; i < 250 && !has(f.chock({"tasks", "show", attacker}).out, "holding"); ++i) ::usleep(20000);
  ASSERT_TRUE(has(f.chock({"tasks", "show", attacker}).out, "holding")) << "the locks were never taken";
  const auto t0 = std::chrono::steady_clock::now();
  auto waited = f.chock({"tasks", "wait", id, "--timeout", "5"});
  EXPECT_EQ(waited.status, 0) << describe(waited);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2))
      << "the ended task was seen running";
  EXPECT_TRUE(has(f.chock({"tasks", "list"}).out, id + "  exited (0)"));
  EXPECT_EQ(f.chock({"tasks", "cancel", attacker}).status, 0);
}

// A cancel signals the runner it pinned: a record whose pid now names
// another process (as after the runner ended and its pid was taken again)
// signals nobody.
TEST(Tasks, CancelNeverSignalsAProcessThatTookTheRunnersPid) {
  Fixture f;
  f.init_git();
  auto started = f.run({"--background"}, "sleep 30");
  const std::string id = trimmed(started.out);
  ASSERT_EQ(id.size(), 11U) << describe(started);
  const std::string record = f.sessions() + "/" + id.substr(0, 8) + "/tasks/task-01.json";
  std::string text;
  for (int i = 0; i < 250 && !has(text = read_file(record), "\"running\""); ++i) ::usleep(20000);
  ASSERT_TRUE(has(text, "\"running\"")) << text;
  // A process of the caller's that is not the runner, named in its place.
  const pid_t decoy = ::fork();
  ASSERT_GE(decoy, 0);
  if (decoy == 0) {
    ::execlp("sleep", "sleep", "300", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  const std::string pid = "\"pid\":";
  const std::size_t at = text.find(pid);
  ASSERT_NE(at, std::string::npos) << text;
  const std::size_t end = text.find_first_of(",}", at);
  std::string forged = text.substr(0, at) + pid + std::to_string(decoy) + text.substr(end);
  write_file(record, forged);
  auto refused = f.chock({"tasks", "cancel", id});
  EXPECT_EQ(refused.status, 1) << describe(refused);
  EXPECT_TRUE(has(refused.err, "is not running")) << describe(refused);
  int status = 0;
  EXPECT_EQ(::waitpid(decoy, &status, WNOHANG), 0) << "the process that took the pid was signalled";
  ::kill(decoy, SIGKILL);
  ::waitpid(decoy, &status, 0);
  write_file(record, text);
  EXPECT_EQ(f.chock({"tasks", "cancel", id}).status, 0);
}

TEST(Tasks, ABadTaskIdIsAClearError) {
  Fixture f;
  auto bad = f.chock({"tasks", "wait", "nonsense"});
  EXPECT_EQ(bad.status, 2);
  EXPECT_TRUE(has(bad.err, "a task id looks like SESSION-NN")) << bad.err;
}

}  // namespace
}  // namespace chock::test::ws
