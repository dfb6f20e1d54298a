// A sandbox begun before its Config is complete (chock run begins it while
// the session opens) is used only for the call it was begun for: a call that
// asks for another network or another uid never runs in it, and one dropped
// unused leaves no process behind.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "chock/sandbox.hpp"
#include "process.hpp"
#include "support.hpp"

namespace chock {
namespace {

using test::core::trim;

std::string host_net_namespace() {
  char buf[64] = {};
  const ssize_t n = readlink("/proc/self/ns/net", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
}

// The pids of this process's children.
std::string children() {
  return trim(test::read_file("/proc/self/task/" + std::to_string(getpid()) + "/children"));
}

// Runs `script` in a sandbox begun from `early` and finished with `config`;
// what it wrote to $OUT (a file in a directory bound read-write).
std::string run_begun(const Config& early, Config config, const std::string& script) {
  test::TempDir dir;
  chmod(dir.path().c_str(), 0777);
  const std::string out = dir / "out";
  config.binds.push_back(Bind{dir.path(), dir.path(), Access::read_write});
  config.argv = {"/bin/sh", "-c", script + " > " + out};
  auto begun = begin(early);
  if (!begun) return "begin: " + begun.error().message();
  auto child = spawn(config, std::move(*begun));
  if (!child) return "spawn: " + child.error().message();
  const Result r = child->wait();
  if (r.exit_status() != 0) return "status " + std::to_string(r.exit_status()) + ": " + r.to_json();
  return test::exists(out) ? trim(test::read_file(out)) : "no " + out;
}

TEST(Begun, ACallWithoutNetworkNeverRunsInASandboxBegunWithTheHostsNetwork) {
  const std::string host = host_net_namespace();
  ASSERT_FALSE(host.empty());
  Config early, none, shared;
  early.network = Network::host;
  none.network = Network::none;
  shared.network = Network::host;
  const std::string inside = run_begun(early, none, "readlink /proc/self/ns/net");
  EXPECT_TRUE(inside.starts_with("net:[")) << inside;
  EXPECT_NE(inside, host) << "a call with no network ran in the host's network namespace";
  // The neighbours: begun as it is finished, each way.
  EXPECT_EQ(run_begun(early, shared, "readlink /proc/self/ns/net"), host);
  const std::string own = run_begun(none, none, "readlink /proc/self/ns/net");
  EXPECT_TRUE(own.starts_with("net:[")) << own;
  EXPECT_NE(own, host);
}

TEST(Begun, ACallAsAnotherUidNeverRunsInASandboxBegunForTheDefaultOne) {
  if (geteuid() != 0) GTEST_SKIP() << "only a root caller gives a call a uid";
  Config early, other;
  early.user = 65534;
  other.user = 4321;
  EXPECT_EQ(run_begun(early, other, "id -u"), "4321");
  EXPECT_EQ(run_begun(early, early, "id -u"), "65534");
}

TEST(Begun, ALimitAskedForLaterIsNotLostToASandboxBegunWithout) {
  Config early, limited;
  limited.limits.open_files = 64;
  EXPECT_EQ(run_begun(early, limited, "ulimit -n"), "64");
}

TEST(Begun, OneDroppedUnusedLeavesNoProcessBehind) {
  const std::string before = children();
  {
    auto begun = begin(Config{});
    ASSERT_TRUE(begun) << begun.error().message();
    EXPECT_NE(children(), before) << "nothing was begun";
  }
  EXPECT_EQ(children(), before);
}

}  // namespace
}  // namespace chock
