// The cgroup v2 paths, for real: run inside the test VM (tests/vm), where
// cgroup2 has memory and pids delegated, as root and as an unprivileged uid.
// CHOCK_VM_CGROUP_PARENT names the delegated cgroup Chock should make its
// child in; CHOCK_VM_REFUSING_CGROUP a cgroup the kernel refuses to place
// this caller's processes in.
#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <regex>

#include <nlohmann/json.hpp>

#include "process.hpp"
#include "result_run.hpp"

namespace {

using chock::test::program;
using chock::test::TempDir;

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

using VmRun = chock::test::limits::ResultRun;
using chock::test::limits::chock_children;

// `limits-run --result FILE FLAGS -- COMMAND`.
VmRun limits_run(const std::vector<std::string>& flags, const std::vector<std::string>& command) {
  return chock::test::limits::run_with_result({program("limits-run")}, flags, command);
}

class CgroupVm : public ::testing::Test {
 protected:
  void SetUp() override {
    parent_ = env("CHOCK_VM_CGROUP_PARENT");
    if (parent_.empty())
      GTEST_SKIP()
          << "needs a cgroup2 tree with memory and pids delegated: runs in the test VM (ctest -L vm)";
  }
  std::string parent_;
};

TEST_F(CgroupVm, ManagedCgroupIsOkLimitedAndRemovedAfterTheCall) {
  VmRun r = limits_run({}, {"/bin/cat", "/proc/self/cgroup"});
  ASSERT_EQ(r.out.status, 0) << r.out.err;
  EXPECT_EQ(r.result["limits"]["cgroup"], "ok") << r.result.dump();
  EXPECT_EQ(r.result["limits"]["memory_max"], 2ULL << 30);
  EXPECT_EQ(r.result["limits"]["pids_max"], 257);
  // The program ran inside a chock-* child of the delegated cgroup.
  EXPECT_TRUE(std::regex_search(r.out.out, std::regex("^0::.*/chock-[0-9]+-[0-9]+\n$"))) << r.out.out;
  EXPECT_TRUE(chock_children(parent_).empty()) << "left behind: " << chock_children(parent_).front();
}

TEST_F(CgroupVm, MemoryKillIsNamedThroughMemoryEvents) {
  // Shared memory is charged to the cgroup but not to RLIMIT_DATA: only
  // memory.max stops it, with the OOM killer.
  VmRun r = limits_run({"--memory", "64MiB"}, {program("limit-bomb"), "shm", "8"});
  EXPECT_EQ(r.out.status, 128 + SIGKILL) << r.out.err;
  EXPECT_GE(r.result["limits"]["events"]["memory_oom_kill"].get<int>(), 1) << r.result.dump();
  EXPECT_EQ(r.result["limits"]["killed_by"], "memory");
  EXPECT_NE(r.out.err.find("chock: the program was stopped by the limit on memory, which is 64 MiB"),
            std::string::npos)
      << r.out.err;
}

TEST_F(CgroupVm, PidsLimitIsNamedThroughPidsEvents) {
  VmRun r = limits_run({"--pids", "16"}, {program("limit-bomb"), "fork"});
  EXPECT_EQ(r.out.status, 1) << r.out.err;
  // pids.max is 17 (16 and Chock's own keeper); here only the program's tree is in it.
  EXPECT_NE(r.out.err.find("fork refused after 16 children: EAGAIN"), std::string::npos) << r.out.err;
  EXPECT_GE(r.result["limits"]["events"]["pids_max"].get<int>(), 1) << r.result.dump();
  EXPECT_EQ(r.result["limits"]["killed_by"], "processes");
  EXPECT_NE(r.out.err.find("the limit on processes, which is 16"), std::string::npos) << r.out.err;
}

TEST_F(CgroupVm, TeardownKillsWhatTheProgramLeftBehind) {
  TempDir dir("chock-vm-orphan");
  std::string w = dir / "w";
  ::mkdir(w.c_str(), 01777);
  ::chmod(w.c_str(), 01777);
  VmRun r = limits_run({}, {program("limit-bomb"), "orphan", w + "/pid"});
  ASSERT_EQ(r.out.status, 0) << r.out.err;
  pid_t orphan = std::atoi(chock::test::read_file(w + "/pid").c_str());
  ASSERT_GT(orphan, 1);
  // A daemon in a new session outlives its parent; only cgroup.kill reaches it.
  errno = 0;
  EXPECT_EQ(::kill(orphan, 0), -1) << "pid " << orphan << " survived the call";
  EXPECT_EQ(errno, ESRCH);
  EXPECT_TRUE(chock_children(parent_).empty());
}

std::string snapshot(const std::string& cg) {
  std::string s;
  for (const char* f : {"memory.max", "memory.swap.max", "pids.max", "memory.high"})
    s += std::string(f) + "=" + chock::test::read_file(cg + "/" + f);
  return s;
}

TEST_F(CgroupVm, SuppliedCgroupHoldsTheProgramAndChockWritesNothingInIt) {
  std::string cg = parent_ + "/supplied-" + std::to_string(::getpid());
  ASSERT_EQ(::mkdir(cg.c_str(), 0755), 0) << cg << ": " << std::strerror(errno);
  chock::test::write_file(cg + "/pids.max", "6\n");
  std::string before = snapshot(cg);
  VmRun r = limits_run({"--cgroup", cg}, {"/bin/cat", "/proc/self/cgroup"});
  EXPECT_EQ(r.out.status, 0) << r.out.err;
  EXPECT_EQ(r.out.out, "0::" + cg.substr(std::string("/sys/fs/cgroup").size()) + "\n");
  EXPECT_EQ(r.result["limits"]["cgroup"], "supplied");
  EXPECT_TRUE(r.result["limits"]["memory_max"].is_null());
  // The caller's own pids.max stops a fork bomb; Chock reads none of its
  // events, so it names nothing.
  VmRun bomb = limits_run({"--cgroup", cg}, {program("limit-bomb"), "fork"});
  EXPECT_EQ(bomb.out.status, 1) << bomb.out.err;
  EXPECT_NE(bomb.out.err.find("fork refused after 5 children: EAGAIN"), std::string::npos) << bomb.out.err;
  EXPECT_TRUE(bomb.result["limits"]["killed_by"].is_null()) << bomb.result.dump();
  EXPECT_EQ(snapshot(cg), before);
  EXPECT_TRUE(chock_children(cg).empty());
  for (int i = 0; i < 100 && ::rmdir(cg.c_str()) != 0; ++i) ::usleep(10000);
}

TEST_F(CgroupVm, APlacementTheKernelRefusesStartsNothing) {
  std::string refusing = env("CHOCK_VM_REFUSING_CGROUP");
  ASSERT_FALSE(refusing.empty());
  TempDir dir("chock-vm-refused");
  std::string w = dir / "w";
  ::mkdir(w.c_str(), 01777);
  ::chmod(w.c_str(), 01777);
  VmRun r = limits_run({"--cgroup", refusing}, {"/bin/touch", w + "/ran"});
  EXPECT_EQ(r.out.status, 125) << r.out.err;
  EXPECT_NE(r.out.err.find("supplied cgroup: the kernel refused to create the process in it"),
            std::string::npos)
      << r.out.err;
  EXPECT_FALSE(chock::test::exists(w + "/ran"));
}

TEST_F(CgroupVm, SuppliedCgroupUnderAFilterAnsweringEnosysIsUnsupported) {
  TempDir dir("chock-vm-enosys");
  std::string w = dir / "w";
  ::mkdir(w.c_str(), 01777);
  ::chmod(w.c_str(), 01777);
  VmRun r = limits_run({"--enosys-clone3", "--cgroup", parent_}, {"/bin/touch", w + "/ran"});
  EXPECT_EQ(r.out.status, 125) << r.out.err;
  EXPECT_NE(r.out.err.find("clone3 is not available"), std::string::npos) << r.out.err;
  EXPECT_FALSE(chock::test::exists(w + "/ran"));
}

}  // namespace
