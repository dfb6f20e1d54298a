// The managed cgroup through the real `chock sandbox` binary, in the test VM
// (tests/vm) where cgroup2 delegates memory and pids: the kill named from
// the cgroup's own events, and the cgroup gone when chock returns.
// CHOCK_VM_CGROUP_PARENT names the delegated cgroup Chock makes its child in.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <regex>

#include <nlohmann/json.hpp>

#include "process.hpp"
#include "result_run.hpp"

namespace {

using chock::test::program;
using chock::test::TempDir;
using chock::test::limits::chock_children;
using chock::test::limits::chock_sandbox;
using SandboxRun = chock::test::limits::ResultRun;

class ChockSandboxVm : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* p = std::getenv("CHOCK_VM_CGROUP_PARENT");
    if (p == nullptr || *p == '\0')
      GTEST_SKIP()
          << "needs a cgroup2 tree with memory and pids delegated: runs in the test VM (ctest -L vm)";
    parent_ = p;
    ASSERT_TRUE(chock_children(parent_).empty()) << "a chock cgroup is already there";
  }
  // Every call leaves its parent as it found it.
  void TearDown() override {
    if (!parent_.empty()) {
      EXPECT_TRUE(chock_children(parent_).empty()) << "left behind: " << chock_children(parent_).front();
    }
  }
  std::string parent_;
};

TEST_F(ChockSandboxVm, ProgramRunsInAManagedCgroupThatIsGoneAfterTheCall) {
  SandboxRun r = chock_sandbox({}, {"/bin/cat", "/proc/self/cgroup"});
  ASSERT_EQ(r.out.status, 0) << r.out.err;
  EXPECT_EQ(r.result["limits"]["cgroup"], "ok") << r.result.dump();
  EXPECT_EQ(r.result["limits"]["memory_max"], 2ULL << 30);
  EXPECT_EQ(r.result["limits"]["pids_max"], 257);
  // No cgroup namespace: the program sees the host's path of its cgroup, a
  // chock-* child of the delegated parent.
  std::smatch m;
  ASSERT_TRUE(std::regex_match(r.out.out, m, std::regex("0::(.*/chock-[0-9]+-[0-9]+)\n"))) << r.out.out;
  std::string rel = parent_.substr(std::string("/sys/fs/cgroup").size());
  EXPECT_EQ(m[1].str().rfind(rel + "/chock-", 0), 0u) << m[1] << " is not below " << parent_;
  struct stat st {};
  errno = 0;
  EXPECT_NE(::stat(("/sys/fs/cgroup" + m[1].str()).c_str(), &st), 0);
  EXPECT_EQ(errno, ENOENT) << "/sys/fs/cgroup" << m[1] << " is still there";
}

TEST_F(ChockSandboxVm, PidsLimitIsNamedThroughPidsEvents) {
  SandboxRun r = chock_sandbox({"--pids", "16"}, {program("limit-bomb"), "fork"});
  EXPECT_EQ(r.out.status, 1) << r.out.err;
  // pids.max 17: 16 and Chock's own keeper; RLIMIT_NPROC is one above it, so
  // the cgroup is what refuses the fork.
  EXPECT_NE(r.out.err.find("fork refused after 15 children: EAGAIN"), std::string::npos) << r.out.err;
  EXPECT_EQ(r.result["limits"]["cgroup"], "ok") << r.result.dump();
  EXPECT_EQ(r.result["limits"]["pids_max"], 17);
  EXPECT_GE(r.result["limits"]["events"]["pids_max"].get<int>(), 1) << r.result.dump();
  for (const auto& e : r.result["limits"]["rlimits"])
    if (e["name"] == "nproc") {
      EXPECT_EQ(e["soft"], 18);
    }
  EXPECT_EQ(r.result["limits"]["killed_by"], "processes");
  EXPECT_EQ(r.result["limits"]["killed_by_limit"], 16);
  EXPECT_NE(r.out.err.find("chock: the program was stopped by the limit on processes, which is 16\n"),
            std::string::npos)
      << r.out.err;
}

TEST_F(ChockSandboxVm, MemoryKillIsNamedThroughMemoryEvents) {
  // Shared anonymous memory is charged to the cgroup and not to RLIMIT_DATA:
  // only memory.max stops it, by the OOM killer's SIGKILL.
  SandboxRun r = chock_sandbox({"--memory", "64MiB"}, {program("limit-bomb"), "shm", "8"});
  EXPECT_EQ(r.out.status, 128 + SIGKILL) << r.out.err;
  EXPECT_EQ(r.result["limits"]["cgroup"], "ok") << r.result.dump();
  EXPECT_EQ(r.result["limits"]["memory_max"], 64ULL << 20);
  EXPECT_GE(r.result["limits"]["events"]["memory_oom_kill"].get<int>(), 1) << r.result.dump();
  EXPECT_EQ(r.result["limits"]["killed_by"], "memory");
  EXPECT_EQ(r.result["limits"]["killed_by_limit"], 64ULL << 20);
  EXPECT_NE(r.out.err.find("chock: the program was stopped by the limit on memory, which is 64 MiB\n"),
            std::string::npos)
      << r.out.err;
  EXPECT_EQ(r.out.err.find("killed by SIGKILL"), std::string::npos) << r.out.err;  // named, not bare
}

TEST_F(ChockSandboxVm, SuppliedCgroupHoldsTheProgram) {
  std::string cg = parent_ + "/supplied-sandbox-" + std::to_string(::getpid());
  ASSERT_EQ(::mkdir(cg.c_str(), 0755), 0) << cg << ": " << std::strerror(errno);
  SandboxRun r = chock_sandbox({"--cgroup", cg}, {"/bin/cat", "/proc/self/cgroup"});
  EXPECT_EQ(r.out.status, 0) << r.out.err;
  EXPECT_EQ(r.out.out, "0::" + cg.substr(std::string("/sys/fs/cgroup").size()) + "\n");
  EXPECT_EQ(r.result["limits"]["cgroup"], "supplied");
  EXPECT_TRUE(r.result["limits"]["memory_max"].is_null());
  EXPECT_TRUE(chock_children(cg).empty());
  for (int i = 0; i < 100 && ::rmdir(cg.c_str()) != 0; ++i) ::usleep(10000);
}

// A chock killed with SIGKILL during a call cannot remove its cgroup (its
// processes die with it); the next call made below the same parent removes
// it once it is a few seconds old, and never one whose chock still runs.
TEST_F(ChockSandboxVm, ACgroupLeftByAKilledChockIsRemovedByTheNextCall) {
  const std::string running = parent_ + "/chock-" + std::to_string(::getpid()) + "-77";  // this process runs
  ASSERT_EQ(::mkdir(running.c_str(), 0755), 0) << running << ": " << std::strerror(errno);
  const std::string chock = chock::test::chock_binary(), stage = chock::test::stage_dir();
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const int null = ::open("/dev/null", O_RDWR);
    ::dup2(null, 0), ::dup2(null, 1), ::dup2(null, 2);
    ::execl(chock.c_str(), "chock", "sandbox", "--ro", stage.c_str(), "--", "/bin/sleep", "60", nullptr);
    ::_exit(127);
  }
  const std::string prefix = "chock-" + std::to_string(pid) + "-";
  std::string left;
  for (int i = 0; i < 1000 && left.empty(); ++i) {
    for (const auto& name : chock_children(parent_))
      if (name.rfind(prefix, 0) == 0) left = parent_ + "/" + name;
    if (left.empty()) ::usleep(10000);
  }
  ASSERT_FALSE(left.empty()) << "chock " << pid << " made no cgroup below " << parent_;
  ::usleep(200000);  // the call is under way
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  // Its processes die with it; its cgroup stays, empty.
  bool emptied = false;
  for (int i = 0; i < 500 && !emptied; ++i) {
    std::ifstream events(left + "/cgroup.events");
    std::string text((std::istreambuf_iterator<char>(events)), std::istreambuf_iterator<char>());
    emptied = text.find("populated 0") != std::string::npos;
    if (!emptied) ::usleep(10000);
  }
  ASSERT_TRUE(emptied) << left << " still holds a process of the killed call";
  struct stat st {};
  ASSERT_EQ(::stat(left.c_str(), &st), 0) << "nothing was left to remove: " << left;
  ::sleep(6);  // past the age a live chock's empty cgroup never reaches
  SandboxRun r = chock_sandbox({}, {"/bin/true"});
  EXPECT_EQ(r.out.status, 0) << r.out.err;
  errno = 0;
  EXPECT_NE(::stat(left.c_str(), &st), 0) << left << " was not removed by the next call";
  EXPECT_EQ(errno, ENOENT);
  EXPECT_EQ(::stat(running.c_str(), &st), 0) << "the next call removed " << running << ", whose pid runs";
  ::rmdir(running.c_str());
}

}  // namespace
