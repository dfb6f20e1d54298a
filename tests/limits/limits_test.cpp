// The limits layer, for real, through limits-run (the layer alone around one
// program). Each limit is tried by a program that runs into it; each test
// asserts how it was stopped and that Chock named it, and a neighbour that
// only looks like it (a program raising the signal itself, one that fills its
// fd table and closes it again) is not named.
#include <gtest/gtest.h>
#include <linux/magic.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <algorithm>
#include <map>
#include <regex>

#include <nlohmann/json.hpp>

#include "process.hpp"

namespace {

using chock::test::Output;
using chock::test::program;
using chock::test::TempDir;

struct LimitsRun {
  Output out;
  nlohmann::json result;
};

LimitsRun limits_run(const std::vector<std::string>& flags, const std::vector<std::string>& command,
                     std::chrono::milliseconds timeout = std::chrono::milliseconds(60000)) {
  TempDir dir("chock-limits");
  std::string file = dir / "result.json";
  std::vector<std::string> argv{program("limits-run"), "--result", file};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.emplace_back("--");
  argv.insert(argv.end(), command.begin(), command.end());
  chock::test::RunOptions opts;
  opts.timeout = timeout;
  LimitsRun r;
  r.out = chock::test::run_process(argv, opts);
  if (chock::test::exists(file)) r.result = nlohmann::json::parse(chock::test::read_file(file));
  return r;
}

std::string killed_by(const LimitsRun& r) {
  const auto& k = r.result.at("limits").at("killed_by");
  return k.is_null() ? std::string() : k.get<std::string>();
}

// A directory the program (nobody, for a root caller) may write into.
std::string open_dir(const TempDir& dir) {
  std::string d = dir / "w";
  ::mkdir(d.c_str(), 01777);
  ::chmod(d.c_str(), 01777);
  return d;
}

TEST(LimitsFloor, DefaultFloorLeavesAnOrdinaryProgramAlone) {
  LimitsRun r = limits_run({}, {program("limit-bomb"), "ok"});
  EXPECT_EQ(r.out.status, 0) << r.out.err;
  EXPECT_EQ(r.out.out, "ok\n");
  ASSERT_TRUE(r.result.is_object()) << r.out.err;
  EXPECT_TRUE(r.result["limits"]["killed_by"].is_null());
  EXPECT_EQ(r.out.err.find("chock: the program was stopped"), std::string::npos) << r.out.err;
  using Pair = std::pair<std::uint64_t, std::uint64_t>;
  std::map<std::string, Pair> rl;
  for (const auto& e : r.result["limits"]["rlimits"]) rl[e["name"]] = {e["soft"], e["hard"]};
  EXPECT_EQ(rl["core"], Pair(0ULL, 0ULL));
  EXPECT_EQ(rl["nofile"], Pair(1024ULL, 1024ULL));
  EXPECT_EQ(rl.count("data"), 0U) << "RLIMIT_DATA is set only when asked for";
  EXPECT_EQ(rl["fsize"], Pair(1ULL << 30, 1ULL << 30));
  EXPECT_EQ(rl["cpu"], Pair(3600ULL, 3630ULL));
}

TEST(LimitsFloor, CgroupStateIsSaidWithItsReason) {
  LimitsRun r = limits_run({}, {program("limit-bomb"), "ok"});
  ASSERT_TRUE(r.result.is_object()) << r.out.err;
  std::string state = r.result["limits"]["cgroup"];
  if (state == "unsupported") {
    std::string reason = r.result["limits"]["cgroup_reason"];
    EXPECT_FALSE(reason.empty());
    std::fprintf(stderr, "cgroup unsupported here: %s\n", reason.c_str());
  } else {
    EXPECT_EQ(state, "ok");
    EXPECT_EQ(r.result["limits"]["memory_max"], 2ULL << 30);
  }
}

TEST(LimitsFloor, FdBombIsStoppedAtTheLimitAndNamed) {
  LimitsRun r = limits_run({"--nofile", "64"}, {program("limit-bomb"), "fd"});
  EXPECT_EQ(r.out.status, 1);
  // 64 descriptors in all: stdin, stdout, stderr, anything the caller let
  // through, and the bomb's own.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out.err, m, std::regex("open refused after ([0-9]+) files: EMFILE")))
      << r.out.err;
  EXPECT_LE(std::stoi(m[1]), 61);
  EXPECT_GE(std::stoi(m[1]), 50);
  ASSERT_TRUE(r.result.is_object()) << r.out.err;
  EXPECT_EQ(killed_by(r), "open_files");
  EXPECT_EQ(r.result["limits"]["killed_by_limit"], 64);
  EXPECT_NE(r.out.err.find("chock: the program was stopped by the limit on open files, which is 64"),
            std::string::npos)
      << r.out.err;
}

TEST(LimitsFloor, FdTableFilledThenEmptiedIsNotNamed) {
  LimitsRun r = limits_run({"--nofile", "64"}, {program("limit-bomb"), "fd-then-close"});
  EXPECT_EQ(r.out.status, 0) << r.out.err;
  EXPECT_EQ(killed_by(r), "");
}

TEST(LimitsFloor, ForkBombIsBoundedAndNamed) {
  LimitsRun r = limits_run({"--pids", "16"}, {program("limit-bomb"), "fork"});
  EXPECT_EQ(r.out.status, 1) << r.out.err;
  // 16 + Chock's own keeper are written; limits-run has no keeper inside the
  // namespace, so the program and 16 children fill it.
  EXPECT_NE(r.out.err.find("fork refused after 16 children: EAGAIN"), std::string::npos) << r.out.err;
  EXPECT_EQ(killed_by(r), "processes");
  EXPECT_EQ(r.result["limits"]["killed_by_limit"], 16);
  EXPECT_NE(r.out.err.find("the limit on processes, which is 16"), std::string::npos) << r.out.err;
}

TEST(LimitsFloor, WritingPastFsizeGetsSigxfszAndIsNamed) {
  TempDir dir("chock-fsize");
  LimitsRun r = limits_run({"--fsize", "1MiB"}, {program("limit-bomb"), "write", open_dir(dir) + "/big"});
  ASSERT_TRUE(r.out.signal.has_value() || r.out.status == 128 + SIGXFSZ) << r.out.status << r.out.err;
  EXPECT_EQ(r.out.status, 128 + SIGXFSZ);
  EXPECT_EQ(r.result["signal_name"], "SIGXFSZ");
  EXPECT_EQ(killed_by(r), "file_size");
  EXPECT_NE(r.out.err.find("the limit on file size, which is 1 MiB"), std::string::npos) << r.out.err;
  struct stat st {};
  ASSERT_EQ(::stat((dir / "w/big").c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 1 << 20);
}

TEST(LimitsFloor, SigxfszRaisedByTheProgramItselfIsNotNamed) {
  LimitsRun r = limits_run({"--fsize", "1MiB"}, {program("limit-bomb"), "raise", std::to_string(SIGXFSZ)});
  EXPECT_EQ(r.out.status, 128 + SIGXFSZ);
  EXPECT_EQ(killed_by(r), "");
  EXPECT_TRUE(r.result["limits"]["core_dump_suppressed"].get<bool>());
}

TEST(LimitsFloor, CpuSpinGetsSigxcpuFirstAndIsNamed) {
  LimitsRun r = limits_run({"--cpu", "1"}, {program("limit-bomb"), "spin"});
  EXPECT_EQ(r.out.status, 128 + SIGXCPU) << r.out.err;
  EXPECT_EQ(r.result["signal_name"], "SIGXCPU");
  EXPECT_EQ(killed_by(r), "cpu_time");
  EXPECT_NE(r.out.err.find("the limit on CPU time, which is 1 s"), std::string::npos) << r.out.err;
  for (const auto& e : r.result["limits"]["rlimits"])
    if (e["name"] == "cpu") {
      EXPECT_EQ(e["hard"], 31);
    }
}

TEST(LimitsFloor, SigxcpuRaisedByTheProgramItselfIsNotNamed) {
  LimitsRun r = limits_run({"--cpu", "1"}, {program("limit-bomb"), "raise", std::to_string(SIGXCPU)});
  EXPECT_EQ(r.out.status, 128 + SIGXCPU);
  EXPECT_EQ(killed_by(r), "");
}

// RLIMIT_DATA, asked for by name. (--memory, the call's memory as a whole,
// is measured by the sandbox's keeper in its own pid namespace, which this
// program has not: ChockSandboxLimits tests it.)
TEST(LimitsFloor, MemoryHogUnderDataIsStoppedAndNamed) {
  LimitsRun r = limits_run({"--data", "256MiB"}, {program("limit-bomb"), "mem", "16"});
  EXPECT_EQ(r.out.status, 1) << r.out.err;
  EXPECT_NE(r.out.err.find("allocation refused after"), std::string::npos) << r.out.err;
  EXPECT_NE(r.out.err.find("ENOMEM"), std::string::npos) << r.out.err;
  EXPECT_EQ(killed_by(r), "memory");
  EXPECT_NE(r.out.err.find("the limit on memory, which is 256 MiB"), std::string::npos) << r.out.err;
}

TEST(LimitsFlags, ValuesChockCannotHonourAreRefusedWithOneLine) {
  struct Case {
    std::vector<std::string> flags;
    std::string says;
  } cases[] = {
      {{"--memory", "2GB"}, "--memory 2GB: say KiB, MiB, GiB or TiB"},
      {{"--memory", "lots"}, "--memory lots: expected a number"},
      {{"--nofile", "99999999999"}, "limit --nofile 99999999999 cannot be honoured"},
      {{"--cpu", "0"}, "limit --cpu 0 cannot be honoured: the kernel treats 0 seconds as 1"},
      {{"--pids", "0"}, "limit --pids 0 cannot be honoured"},
      {{"--pids", "12x"}, "--pids 12x: expected a whole number"},
  };
  for (const auto& c : cases) {
    TempDir dir("chock-flags");
    std::string marker = open_dir(dir) + "/ran";
    LimitsRun r = limits_run(c.flags, {"/bin/sh", "-c", "touch " + marker});
    EXPECT_EQ(r.out.status, 125) << c.says;
    EXPECT_NE(r.out.err.find(c.says), std::string::npos) << r.out.err;
    EXPECT_EQ(std::count(r.out.err.begin(), r.out.err.end(), '\n'), 1) << r.out.err;
    EXPECT_FALSE(chock::test::exists(marker)) << "the program ran: " << c.says;
  }
}

// A supplied cgroup: every refusal starts nothing.
void expect_refused(const std::vector<std::string>& flags, const std::string& says) {
  TempDir dir("chock-supplied");
  std::string marker = open_dir(dir) + "/ran";
  LimitsRun r = limits_run(flags, {"/bin/sh", "-c", "touch " + marker});
  EXPECT_EQ(r.out.status, 125) << r.out.err;
  EXPECT_NE(r.out.err.find(says), std::string::npos) << r.out.err;
  EXPECT_FALSE(chock::test::exists(marker)) << "the program ran outside the supplied cgroup";
}

TEST(SuppliedCgroup, NotADirectoryIsRefused) {
  TempDir dir("chock-supplied");
  chock::test::write_file(dir / "file", "x");
  expect_refused({"--cgroup", dir / "file"}, "--cgroup: " + (dir / "file") + ": ENOTDIR");
}

TEST(SuppliedCgroup, ADirectoryThatIsNotCgroup2IsRefused) {
  TempDir dir("chock-supplied");
  expect_refused({"--cgroup", dir.path()}, "supplied cgroup is not on a cgroup v2 file system");
}

std::string some_cgroup2_directory() {
  for (const char* d : {"/sys/fs/cgroup", "/sys/fs/cgroup/unified"}) {
    struct statfs fs {};
    if (::statfs(d, &fs) == 0 && fs.f_type == CGROUP2_SUPER_MAGIC) return d;
  }
  return {};
}

TEST(SuppliedCgroup, AFilterAnsweringEnosysForClone3IsUnsupported) {
  std::string dir = some_cgroup2_directory();
  if (dir.empty()) GTEST_SKIP() << "no cgroup2 mount at /sys/fs/cgroup or /sys/fs/cgroup/unified";
  expect_refused(
      {"--enosys-clone3", "--cgroup", dir},
      "supplied cgroup: clone3 is not available (an old kernel, or a seccomp filter answering ENOSYS)");
}

}  // namespace
