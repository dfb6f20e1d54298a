// The limits through the real `chock sandbox`, not the limits-run stand-in:
// the flags as the CLI parses them, the floor as the sandbox core applies it
// (keeper, middle and program in their namespaces), chock's own line on
// stderr, and the --result JSON. Also runs in the test VM (tests/vm), where
// the managed cgroup is ok instead of unsupported.
#include <gtest/gtest.h>
#include <linux/magic.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "process.hpp"
#include "result_run.hpp"

namespace {

using chock::test::Output;
using chock::test::program;
using chock::test::TempDir;

using chock::test::limits::chock_sandbox;
using SandboxRun = chock::test::limits::ResultRun;

using Pair = std::pair<std::uint64_t, std::uint64_t>;  // soft, hard

// A directory the program (nobody, for a root caller) may write into.
std::string open_dir(const TempDir& dir) {
  std::string d = dir / "w";
  ::mkdir(d.c_str(), 01777);
  ::chmod(d.c_str(), 01777);
  return d;
}

bool has_line(const std::string& text, const std::string& line) {
  return ("\n" + text).find("\n" + line + "\n") != std::string::npos;
}

std::string killed_by(const SandboxRun& r) {
  const auto& k = r.result.at("limits").at("killed_by");
  return k.is_null() ? std::string() : k.get<std::string>();
}

std::map<std::string, Pair> rlimits_of(const SandboxRun& r) {
  std::map<std::string, Pair> out;
  for (const auto& e : r.result.at("limits").at("rlimits")) out[e.at("name")] = {e.at("soft"), e.at("hard")};
  return out;
}

std::string read_or_empty(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// The cgroup2 mount point, from mountinfo (parsed here, not by the code under test).
std::string cgroup2_mount_point() {
  std::istringstream in(read_or_empty("/proc/self/mountinfo"));
  for (std::string line; std::getline(in, line);) {
    if (line.find(" - cgroup2 ") == std::string::npos) continue;
    std::istringstream fields(line);
    std::string f[5];
    for (auto& x : f) fields >> x;
    return f[4];
  }
  return {};
}

bool names_both(const std::string& words) {
  std::istringstream in(words);
  bool memory = false, pids = false;
  for (std::string w; in >> w;) {
    memory = memory || w == "memory";
    pids = pids || w == "pids";
  }
  return memory && pids;
}

// A machine like this project's: memory and pids missing from the cgroup2
// mount's controllers and each held by a cgroup v1 hierarchy of
// /proc/self/cgroup. nullopt when the machine is not like that (with why).
std::optional<std::string> v1_machine_cgroup2_point(std::string* why) {
  std::string point = cgroup2_mount_point();
  if (point.empty()) {
    *why = "no cgroup2 mount here: the reason is \"no cgroup2 mount\", not the v1 one";
    return std::nullopt;
  }
  if (names_both(read_or_empty(point + "/cgroup.controllers"))) {
    *why = "the cgroup2 mount at " + point + " has memory and pids: they are delegated here";
    return std::nullopt;
  }
  std::istringstream in(read_or_empty("/proc/self/cgroup"));
  bool v1_memory = false, v1_pids = false;
  for (std::string line; std::getline(in, line);) {
    auto a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos || line.substr(0, a) == "0") continue;
    std::string controllers = line.substr(a + 1, b - a - 1);
    std::replace(controllers.begin(), controllers.end(), ',', ' ');
    std::istringstream words(controllers);
    for (std::string w; words >> w;) {
      v1_memory = v1_memory || w == "memory";
      v1_pids = v1_pids || w == "pids";
    }
  }
  if (!v1_memory || !v1_pids) {
    *why = "memory and pids are not both held by cgroup v1 here (/proc/self/cgroup)";
    return std::nullopt;
  }
  return point;
}

// The cgroup row every call reports: unsupported on a v1 machine, ok in the
// test VM (which delegates memory and pids), one of the two elsewhere.
void expect_cgroup_state(const SandboxRun& r) {
  ASSERT_TRUE(r.result.is_object()) << r.out.err;
  std::string state = r.result["limits"]["cgroup"];
  std::string why;
  if (v1_machine_cgroup2_point(&why)) {
    EXPECT_EQ(state, "unsupported");
  } else if (std::getenv("CHOCK_VM_CGROUP_PARENT") != nullptr) {
    EXPECT_EQ(state, "ok") << r.result["limits"].dump();
  } else {
    EXPECT_TRUE(state == "ok" || state == "unsupported") << state;
  }
  if (state == "unsupported") {
    EXPECT_FALSE(r.result["limits"]["cgroup_reason"].get<std::string>().empty());
  }
}

bool cgroup_ok(const SandboxRun& r) {
  return r.result["limits"]["cgroup"] == "ok";
}

TEST(ChockSandboxLimits, DefaultFloorLeavesAnOrdinaryProgramAlone) {
  SandboxRun r = chock_sandbox({}, {program("limit-bomb"), "ok"});
  EXPECT_EQ(r.out.status, 0) << r.out.err;
  EXPECT_EQ(r.out.out, "ok\n");
  EXPECT_EQ(r.out.err, "");  // no line of chock's own
  expect_cgroup_state(r);
  EXPECT_TRUE(r.result["limits"]["killed_by"].is_null());
  auto rl = rlimits_of(r);
  EXPECT_EQ(rl["core"], Pair(0, 0));
  EXPECT_EQ(rl["nofile"], Pair(1024, 1024));
  EXPECT_EQ(rl.count("data"), 0U) << "RLIMIT_DATA is set only when asked for";
  EXPECT_EQ(rl["fsize"], Pair(1ULL << 30, 1ULL << 30));
  EXPECT_EQ(rl["cpu"], Pair(3600, 3630));
}

TEST(ChockSandboxLimits, FdBombIsStoppedAtNofileAndNamed) {
  SandboxRun r = chock_sandbox({"--nofile", "64"}, {program("limit-bomb"), "fd"});
  EXPECT_EQ(r.out.status, 1) << r.out.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out.err, m, std::regex("open refused after ([0-9]+) files: EMFILE")))
      << r.out.err;
  EXPECT_LE(std::stoi(m[1]), 61);  // 64 with stdin, stdout and stderr
  EXPECT_GE(std::stoi(m[1]), 50);
  EXPECT_TRUE(has_line(r.out.err, "chock: the program was stopped by the limit on open files, which is 64"))
      << r.out.err;
  expect_cgroup_state(r);
  EXPECT_EQ(killed_by(r), "open_files");
  EXPECT_EQ(r.result["limits"]["killed_by_limit"], 64);
  EXPECT_EQ(rlimits_of(r)["nofile"], Pair(64, 64));
}

TEST(ChockSandboxLimits, ForkBombIsBoundedAtPidsAndNamed) {
  SandboxRun r = chock_sandbox({"--pids", "16"}, {program("limit-bomb"), "fork"});
  EXPECT_EQ(r.out.status, 1) << r.out.err;
  // 16 and Chock's own keeper: the keeper, the program and 15 children.
  EXPECT_NE(r.out.err.find("fork refused after 15 children: EAGAIN"), std::string::npos) << r.out.err;
  EXPECT_TRUE(has_line(r.out.err, "chock: the program was stopped by the limit on processes, which is 16"))
      << r.out.err;
  expect_cgroup_state(r);
  EXPECT_EQ(killed_by(r), "processes");
  EXPECT_EQ(r.result["limits"]["killed_by_limit"], 16);
  if (cgroup_ok(r)) {
    // pids.max refuses first (RLIMIT_NPROC is one above it) and pids.events says so.
    EXPECT_EQ(r.result["limits"]["pids_max"], 17);
    EXPECT_GE(r.result["limits"]["events"]["pids_max"].get<int>(), 1);
  } else {
    EXPECT_EQ(rlimits_of(r)["nproc"], Pair(17, 17));
  }
}

TEST(ChockSandboxLimits, WritingPastFsizeGetsSigxfszAndIsNamed) {
  TempDir dir("chock-sandbox-fsize");
  std::string w = open_dir(dir);
  SandboxRun r = chock_sandbox({"--rw", w, "--fsize", "1MiB"}, {program("limit-bomb"), "write", w + "/big"});
  EXPECT_EQ(r.out.status, 128 + SIGXFSZ) << r.out.err;
  EXPECT_TRUE(has_line(r.out.err, "chock: the program was stopped by the limit on file size, which is 1 MiB"))
      << r.out.err;
  expect_cgroup_state(r);
  EXPECT_EQ(r.result["signal_name"], "SIGXFSZ");
  EXPECT_EQ(killed_by(r), "file_size");
  EXPECT_EQ(r.result["limits"]["killed_by_limit"], 1 << 20);
  EXPECT_TRUE(r.result["limits"]["core_dump_suppressed"].get<bool>());
  struct stat st {};
  ASSERT_EQ(::stat((w + "/big").c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 1 << 20);
}

TEST(ChockSandboxLimits, CpuSpinGetsSigxcpuAndIsNamed) {
  SandboxRun r = chock_sandbox({"--cpu", "1"}, {program("limit-bomb"), "spin"});
  EXPECT_EQ(r.out.status, 128 + SIGXCPU) << r.out.err;
  EXPECT_TRUE(has_line(r.out.err, "chock: the program was stopped by the limit on CPU time, which is 1 s"))
      << r.out.err;
  expect_cgroup_state(r);
  EXPECT_EQ(r.result["signal_name"], "SIGXCPU");
  EXPECT_EQ(killed_by(r), "cpu_time");
  EXPECT_EQ(r.result["limits"]["killed_by_limit"], 1);
  EXPECT_EQ(rlimits_of(r)["cpu"], Pair(1, 31));
}

// The neighbour: the same signal, raised by the program itself, is not a limit.
TEST(ChockSandboxLimits, SigxcpuRaisedByTheProgramIsNotNamed) {
  SandboxRun r = chock_sandbox({"--cpu", "1"}, {program("limit-bomb"), "raise", std::to_string(SIGXCPU)});
  EXPECT_EQ(r.out.status, 128 + SIGXCPU) << r.out.err;
  EXPECT_EQ(killed_by(r), "");
  EXPECT_EQ(r.out.err.find("stopped by the limit"), std::string::npos) << r.out.err;
  EXPECT_NE(r.out.err.find("chock: the program was killed by SIGXCPU"), std::string::npos) << r.out.err;
}

// The call's memory, every process of it together: memory.max where cgroup
// v2 memory is delegated (the VM suite: the kernel's OOM killer ends one
// process, whose parent may go on and fail), else measured by the keeper,
// which ends the whole call with SIGKILL. Either way the line names the limit.
void expect_stopped_by_memory(const SandboxRun& r, std::uint64_t limit, const std::string& size) {
  if (cgroup_ok(r))
    EXPECT_NE(r.out.status, 0) << r.out.err;
  else
    EXPECT_EQ(r.out.status, 128 + SIGKILL) << r.out.err;
  EXPECT_EQ(killed_by(r), "memory") << r.result.dump();
  EXPECT_EQ(r.result["limits"]["killed_by_limit"], limit);
  EXPECT_EQ(rlimits_of(r).count("data"), 0U);
  if (cgroup_ok(r)) {
    EXPECT_EQ(r.result["limits"]["memory_max"], limit);
    EXPECT_TRUE(
        has_line(r.out.err, "chock: the program was stopped by the limit on memory, which is " + size))
        << r.out.err;
    return;
  }
  EXPECT_EQ(r.result["limits"]["memory_measured"]["limit"], limit) << r.result.dump();
  EXPECT_NE(
      r.out.err.find("chock: the program was stopped by the limit on memory, which is " + size +
                     ", measured by Chock: cgroup v2 memory is unavailable here (the call's processes held "),
      std::string::npos)
      << r.out.err;
}

TEST(ChockSandboxLimits, MemoryHogUnderMemoryIsStoppedAndNamed) {
  SandboxRun r = chock_sandbox({"--memory", "256MiB"}, {program("limit-bomb"), "mem", "16"});
  expect_stopped_by_memory(r, 256ULL << 20, "256 MiB");
  // A fast hog (one process filling memory as fast as it can) is stopped
  // before it holds more than the limit plus the documented margin: what
  // it fills in one shortest interval (5 ms) plus a sample's own time.
  if (!cgroup_ok(r)) {
    const std::uint64_t peak = r.result["limits"]["memory_measured"]["peak"];
    EXPECT_LT(peak, (256ULL + 64) << 20) << r.result.dump();
  }
}

// Four processes of 100 MiB each, each under 256 MiB, together over it.
TEST(ChockSandboxLimits, ManyProcessesTogetherOverMemoryAreStoppedAsOneCall) {
  SandboxRun r = chock_sandbox({"--memory", "256MiB"}, {program("limit-bomb"), "mem_procs", "4", "100"});
  expect_stopped_by_memory(r, 256ULL << 20, "256 MiB");
}

// Shared memory is the call's memory too.
TEST(ChockSandboxLimits, SharedMemoryHogIsStoppedAndNamed) {
  SandboxRun r = chock_sandbox({"--memory", "128MiB"}, {program("limit-bomb"), "shm", "8"});
  expect_stopped_by_memory(r, 128ULL << 20, "128 MiB");
}

// The neighbour: the same four processes under the default limit (2 GiB)
// run to the end.
TEST(ChockSandboxLimits, ManyProcessesUnderTheDefaultMemoryRunToTheEnd) {
  SandboxRun r = chock_sandbox({}, {program("limit-bomb"), "mem_procs", "4", "100"});
  EXPECT_EQ(r.out.status, 0) << r.out.err;
  EXPECT_EQ(killed_by(r), "");
  if (!cgroup_ok(r)) {
    EXPECT_EQ(r.result["limits"]["memory_measured"]["limit"], 2ULL << 30) << r.result.dump();
    EXPECT_GE(r.result["limits"]["memory_measured"]["peak"].get<std::uint64_t>(), 400ULL << 20)
        << r.result.dump();
  }
}

// RLIMIT_DATA, asked for by name: a process's own allocation is refused.
TEST(ChockSandboxLimits, DataLimitAskedForRefusesAnAllocation) {
  SandboxRun r = chock_sandbox({"--data", "256MiB"}, {program("limit-bomb"), "mem", "16"});
  EXPECT_EQ(r.out.status, 1) << r.out.err;
  EXPECT_NE(r.out.err.find("ENOMEM"), std::string::npos) << r.out.err;
  EXPECT_EQ(rlimits_of(r)["data"], Pair(256ULL << 20, 256ULL << 20));
  EXPECT_EQ(killed_by(r), "memory");
}

// Issue 4: on a machine whose memory and pids are held by cgroup v1, the
// cgroup row says exactly that, and the call still runs under the floor.
TEST(ChockSandboxLimits, CgroupV1MachineReadsUnsupportedWithThatReason) {
  std::string why;
  auto point = v1_machine_cgroup2_point(&why);
  if (!point) GTEST_SKIP() << why;
  SandboxRun r = chock_sandbox({}, {program("limit-bomb"), "ok"});
  EXPECT_EQ(r.out.status, 0) << r.out.err;
  ASSERT_TRUE(r.result.is_object()) << r.out.err;
  EXPECT_EQ(r.result["limits"]["cgroup"], "unsupported");
  EXPECT_EQ(r.result["limits"]["cgroup_reason"],
            "no delegated ancestor: the cgroup2 hierarchy at " + *point +
                " has no memory and pids controllers (held by cgroup v1)");
  EXPECT_TRUE(r.result["limits"]["memory_max"].is_null());
  // The floor still holds the call.
  EXPECT_EQ(rlimits_of(r)["nofile"], Pair(1024, 1024));
  EXPECT_EQ(rlimits_of(r)["core"], Pair(0, 0));
}

// A refusal before anything starts: one line, 125, the marker never written.
void expect_refused(const std::vector<std::string>& flags, const std::string& line) {
  TempDir dir("chock-sandbox-refused");
  std::string w = open_dir(dir);
  std::vector<std::string> all{"--rw", w};
  all.insert(all.end(), flags.begin(), flags.end());
  SandboxRun r = chock_sandbox(all, {"/bin/sh", "-c", "touch " + w + "/ran"});
  EXPECT_EQ(r.out.status, 125) << r.out.err;
  EXPECT_EQ(r.out.err, line + "\n");
  EXPECT_FALSE(chock::test::exists(w + "/ran")) << "the program ran: " << line;
  ASSERT_TRUE(r.result.is_object());
  EXPECT_EQ(r.result["setup_failure"]["step"], "prepare");
  EXPECT_TRUE(r.result["exit_code"].is_null());
}

TEST(ChockSandboxLimits, SuppliedCgroupThatIsNotADirectoryIsRefused) {
  TempDir dir("chock-sandbox-cgroup");
  chock::test::write_file(dir / "file", "x");
  expect_refused({"--cgroup", dir / "file"},
                 "chock: --cgroup: " + (dir / "file") + ": ENOTDIR (Not a directory)");
  expect_refused({"--cgroup", dir / "absent"},
                 "chock: --cgroup: " + (dir / "absent") + ": ENOENT (No such file or directory)");
}

TEST(ChockSandboxLimits, SuppliedCgroupThatIsNotCgroup2IsRefused) {
  TempDir dir("chock-sandbox-cgroup");
  for (const std::string& d : {dir.path(), std::string("/tmp")}) {
    SCOPED_TRACE(d);
    TempDir w("chock-sandbox-refused");
    SandboxRun r =
        chock_sandbox({"--rw", open_dir(w), "--cgroup", d}, {"/bin/sh", "-c", "touch " + w / "w/ran"});
    EXPECT_EQ(r.out.status, 125);
    EXPECT_TRUE(std::regex_match(
        r.out.err,
        std::regex("chock: supplied cgroup is not on a cgroup v2 file system: descriptor [0-9]+\n")))
        << r.out.err;
    EXPECT_FALSE(chock::test::exists(w / "w/ran"));
  }
}

// Where clone3 answers ENOSYS (a kernel before 5.3, a container's filter),
// every process of the call is made with clone(2) instead, and a supplied
// cgroup, which only clone3 can place a process in, is refused.
TEST(ChockSandboxLimits, WhereClone3AnswersEnosysTheCallRunsAndASuppliedCgroupIsRefused) {
  TempDir dir("chock-sandbox-enosys");
  std::string w = open_dir(dir);
  SandboxRun r = chock::test::limits::run_with_result(
      {program("filter-exec"), "--hide-clone3", "--", chock::test::chock_binary(), "sandbox", "--ro",
       chock::test::stage_dir(), "--rw", w},
      {}, {"/bin/sh", "-c", "touch " + w + "/ran"});
  EXPECT_EQ(r.out.status, 0) << r.out.err;
  EXPECT_TRUE(chock::test::exists(w + "/ran"));
  EXPECT_EQ(r.result["exit_code"], 0);

  std::string cgroup;
  for (const char* d : {"/sys/fs/cgroup", "/sys/fs/cgroup/unified"}) {
    struct statfs fs {};
    if (cgroup.empty() && ::statfs(d, &fs) == 0 && fs.f_type == CGROUP2_SUPER_MAGIC) cgroup = d;
  }
  if (cgroup.empty()) GTEST_SKIP() << "no cgroup2 mount at /sys/fs/cgroup or /sys/fs/cgroup/unified";
  Output refused = chock::test::run_process({program("filter-exec"), "--hide-clone3", "--",
                                             chock::test::chock_binary(), "sandbox", "--cgroup", cgroup, "--",
                                             "/bin/sh", "-c", "touch " + w + "/ran-in-cgroup"});
  EXPECT_EQ(refused.status, 125) << refused.err;
  EXPECT_NE(refused.err.find("supplied cgroup: clone3 is not available"), std::string::npos) << refused.err;
  EXPECT_FALSE(chock::test::exists(w + "/ran-in-cgroup"));
}

TEST(ChockSandboxLimits, ValuesChockCannotHonourAreOneLineAnd125) {
  const std::pair<std::vector<std::string>, std::string> cases[] = {
      {{"--memory", "5MB"}, "chock: --memory 5MB: say KiB, MiB, GiB or TiB (powers of 1024)"},
      {{"--nofile", "0"},
       "chock: limit --nofile 0 cannot be honoured: the least Chock can run a program under is 1"},
      {{"--pids", "0"}, "chock: limit --pids 0 cannot be honoured: the program itself is a process"},
      {{"--cpu", "0"}, "chock: limit --cpu 0 cannot be honoured: the kernel treats 0 seconds as 1"},
      {{"--fsize", "1x"}, "chock: --fsize 1x: unknown unit; sizes look like 4096, 512MiB or 2GiB"},
  };
  for (const auto& [flags, line] : cases) {
    SCOPED_TRACE(line);
    expect_refused(flags, line);
  }
}

}  // namespace
