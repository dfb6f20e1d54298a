// Issue 53's run: filtered calls, each one of the attacks on Chock's own host
// side (the broker flooded and sent into itself, connections closed with
// their answers unread, made-up names without end), drawn at random. Every
// call ends in time; in the library form (chock::spawn in this process,
// whose relay threads are this process's) no thread and no descriptor is
// left after each call; through `chock run` every session log verifies.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "chock/net.hpp"
#include "chock/sandbox.hpp"
#include "reliability_support.hpp"
#include "support.hpp"
#include "util/fd.hpp"
#include "world.hpp"

namespace chock::test::reliability {
namespace {

using Clock = std::chrono::steady_clock;

std::size_t entries(const char* dir) {
  std::size_t n = 0;
  if (DIR* d = ::opendir(dir)) {
    while (dirent* e = ::readdir(d)) n += e->d_name[0] != '.' ? 1 : 0;
    ::closedir(d);
  }
  return n;
}

struct Attack {
  std::vector<std::string> args;  // net-hostile's
  std::string says;               // on its stdout, how it was stopped
};

// Sized to pass each defence with as little work as will do it.
const Attack kAttacks[] = {
    {{"broker-flood"}, "flood EPIPE\nselfsend EPIPE\n"},
    {{"unread-streams", "3", "100"}, "unread 4 of 4\n"},
    {{"name-flood", "1040"}, "names noerror=1024 refused=16 other=0\n"},
};

// Whether `lines` names a defence's line for `attack`.
bool said_for(const Attack& attack, const std::string& err) {
  if (attack.args[0] == "broker-flood") return has(err, "the call lost its broker (CHOCK_BROKER_FD)");
  if (attack.args[0] == "name-flood")
    return has(err, "the call's resolver refused 16 questions for new names");
  return true;
}

// One call in this process, its stdout in `out`; what it printed and its result.
std::pair<std::string, Result> library_call(const Attack& attack, const std::string& out_path) {
  UniqueFd out(::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  Config c;
  c.argv = {program("net-hostile")};
  c.argv.insert(c.argv.end(), attack.args.begin(), attack.args.end());
  c.env = std::vector<std::string>{"PATH=/usr/bin:/bin"};
  c.binds.push_back({stage_dir(), "", Access::read_only});
  c.network = Network::filtered;
  c.stdio = {0, out.get(), 2};
  c.timeout = std::chrono::seconds(30);
  c.judge = std::make_shared<net::Judge>([](const std::string& action) {
    if (action.starts_with("net.connect.test.chock.")) return net::Ruling{true, "allow", "the test", ""};
    return net::Ruling{false, "deny", "the test", action + " is denied by the test"};
  });
  auto child = spawn(c);
  out.reset();
  if (!child) return {"spawn: " + child.error().message(), Result{}};
  Result r = child->wait();
  return {read_file(out_path), r};
}

TEST(HostileCalls, TwoHundredAttacksEndInTimeLeaveNothingBehindAndEveryLogVerifies) {
  CHOCK_NEED_WORLD();
  const std::size_t calls = profile_count(200, 1000);
  const unsigned seed = std::random_device{}();
  std::mt19937 draw(seed);
  std::printf("hostile calls: seed %u\n", seed);

  // `chock run` in a project whose calls are filtered, in a few sessions.
  ws::Fixture f;
  f.init_plain();
  write_file(f.file("chock.zon"),
             ".{\n    .network = .filtered,\n    .policy = .{ .rules = .{\n"
             "        .{ .action = \"net.connect.test.chock.*\", .decision = .allow },\n    } },\n}\n");
  ASSERT_EQ(::system(("cp " + program("net-hostile") + " " + f.file("net-hostile")).c_str()), 0);
  std::vector<std::string> sessions;
  RunOptions o = f.options();
  o.timeout = std::chrono::seconds(60);

  TempDir scratch("chock-hostile");
  const std::string out_path = scratch / "out";
  // Warmed up: the first call's one-time work (a thread pool, the judge's
  // lookups) is not a leak.
  library_call(kAttacks[1], out_path);
  const std::size_t tasks = entries("/proc/self/task");
  const std::size_t fds = entries("/proc/self/fd");

  std::size_t by_library = 0, by_chock = 0;
  double slowest = 0;
  for (std::size_t i = 0; i < calls; ++i) {
    const Attack& attack = kAttacks[draw() % 3];
    SCOPED_TRACE("call " + std::to_string(i) + ": " + attack.args[0]);
    const Clock::time_point start = Clock::now();
    if (i % 2 == 0) {
      ++by_library;
      const auto [printed, r] = library_call(attack, out_path);
      ASSERT_FALSE(r.timed_out) << printed;
      ASSERT_EQ(r.exit_status(), 0) << printed;
      EXPECT_TRUE(has(printed, attack.says)) << printed;
      std::string lines;
      for (const auto& l : r.network_refusals) lines += l + "\n";
      EXPECT_TRUE(said_for(attack, lines)) << lines;
      // The call's threads and sockets are gone with it: at once, or within 1 s.
      const auto until = Clock::now() + std::chrono::seconds(1);
      while (entries("/proc/self/task") != tasks && Clock::now() < until)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      ASSERT_EQ(entries("/proc/self/task"), tasks);
      ASSERT_EQ(entries("/proc/self/fd"), fds);
    } else {
      ++by_chock;
      std::vector<std::string> args{"run"};
      if (sessions.size() < 4) {
        args.push_back("--keep");
      } else {
        args.insert(args.end(), {"--session", sessions[draw() % sessions.size()]});
      }
      args.insert(args.end(), {"--timeout", "30", "--", "./net-hostile"});
      args.insert(args.end(), attack.args.begin(), attack.args.end());
      const Output out = test::chock(args, o);
      ASSERT_FALSE(out.timed_out) << ws::describe(out);
      ASSERT_EQ(out.status, 0) << ws::describe(out);
      EXPECT_TRUE(has(out.out, attack.says)) << ws::describe(out);
      EXPECT_TRUE(said_for(attack, out.err)) << out.err;
      if (sessions.size() < 4) sessions.push_back(ws::session_id(out));
    }
    const double took = std::chrono::duration<double>(Clock::now() - start).count();
    slowest = std::max(slowest, took);
    ASSERT_LT(took, 10.0) << "the call took " << took << " s";
  }
  for (const auto& id : sessions) {
    const Output verified = test::chock({"sessions", "verify", id}, o);
    EXPECT_EQ(verified.status, 0) << ws::describe(verified);
  }
  std::printf(
      "hostile calls: %zu in the library, %zu through chock run in %zu sessions; slowest %.3f s; threads "
      "%zu, "
      "descriptors %zu before and after\n",
      by_library, by_chock, sessions.size(), slowest, tasks, fds);
}

}  // namespace
}  // namespace chock::test::reliability
