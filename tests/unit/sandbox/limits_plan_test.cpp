// The limits layer's pure parts: the floor's plan, cgroup text parsing, sizes,
// and the rules that name a kill (and refuse to name one on thin evidence).
#include <gtest/gtest.h>
#include <signal.h>

#include "sandbox/cgroup.hpp"
#include "sandbox/kill_naming.hpp"
#include "sandbox/rlimits.hpp"
#include "util/size.hpp"

namespace {

using namespace chock;

rlimits::Machine roomy(bool per_userns = true) {
  rlimits::Machine m;
  m.nproc_per_userns = per_userns;
  m.hard.fill(RLIM_INFINITY);
  return m;
}

TEST(RlimitsPlan, DefaultsMatchTheIssue) {
  auto plan = rlimits::prepare(Limits{}, roomy());
  ASSERT_TRUE(plan);
  auto get = [&](int r) { return *rlimits::find(*plan, r); };
  EXPECT_EQ(get(RLIMIT_CORE).hard, 0u);
  EXPECT_EQ(get(RLIMIT_NOFILE).soft, 1024u);
  EXPECT_EQ(get(RLIMIT_FSIZE).soft, 1ULL << 30);
  EXPECT_EQ(get(RLIMIT_CPU).soft, 3600u);
  EXPECT_EQ(get(RLIMIT_CPU).hard, 3630u);
  EXPECT_EQ(get(RLIMIT_NPROC).hard, 256u + rlimits::kOwnTasks);
  // RLIMIT_DATA only when asked for: sanitizers reserve tens of TiB.
  for (int unset :
       {RLIMIT_DATA, RLIMIT_AS, RLIMIT_STACK, RLIMIT_RSS, RLIMIT_MEMLOCK, RLIMIT_SIGPENDING, RLIMIT_MSGQUEUE})
    EXPECT_EQ(rlimits::find(*plan, unset), nullptr) << unset;
  for (std::size_t i = 0; i < plan->count; ++i)
    if (plan->entries[i].resource != RLIMIT_CPU) {
      EXPECT_EQ(plan->entries[i].soft, plan->entries[i].hard);
    }
}

TEST(RlimitsPlan, NprocOnlyWhereCountedPerUserNamespace) {
  auto plan = rlimits::prepare(Limits{}, roomy(false));
  ASSERT_TRUE(plan);
  EXPECT_EQ(rlimits::find(*plan, RLIMIT_NPROC), nullptr);
  EXPECT_TRUE(rlimits::release_counts_nproc_per_userns("5.14.0"));
  EXPECT_TRUE(rlimits::release_counts_nproc_per_userns("6.1.0-57-cloud-amd64"));
  EXPECT_FALSE(rlimits::release_counts_nproc_per_userns("5.13.19"));
  EXPECT_FALSE(rlimits::release_counts_nproc_per_userns("4.19.0"));
}

TEST(RlimitsPlan, ATighterCallerLowersDefaultsButRefusesExplicitValues) {
  auto m = roomy();
  m.hard.at(RLIMIT_NOFILE) = 512;
  auto plan = rlimits::prepare(Limits{}, m);
  ASSERT_TRUE(plan);
  EXPECT_EQ(rlimits::find(*plan, RLIMIT_NOFILE)->soft, 512u);
  Limits l;
  l.open_files = 1000;
  auto refused = rlimits::prepare(l, m);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().kind, Errc::bad_config);
  EXPECT_NE(refused.error().message().find("this process's own hard limit is 512"), std::string::npos);
}

TEST(RlimitsPlan, CpuKeepsItsGraceAndRefusesWhatCannotFit) {
  Limits l;
  l.cpu_seconds = 5;
  auto plan = rlimits::prepare(l, roomy());
  ASSERT_TRUE(plan);
  EXPECT_EQ(rlimits::find(*plan, RLIMIT_CPU)->hard, 35u);
  auto m = roomy();
  m.hard.at(RLIMIT_CPU) = 20;
  EXPECT_FALSE(rlimits::prepare(l, m));
}

TEST(CgroupText, FindsTheCgroup2MountAndTheOwnPath) {
  const char* mi =
      "24 1 0:22 / /sys/fs/cgroup/memory rw,relatime shared:9 - cgroup cgroup rw,memory\n"
      "30 1 0:27 /sub /sys/fs/cgroup/uni\\040fied rw,relatime - cgroup2 cgroup2 rw\n";
  auto m = cgroup::find_cgroup2_mount(mi);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->point, "/sys/fs/cgroup/uni fied");
  EXPECT_EQ(m->root, "/sub");
  EXPECT_FALSE(cgroup::find_cgroup2_mount("24 1 0:22 / /x rw - ext4 /dev/sda rw\n"));
  EXPECT_EQ(cgroup::unified_path("4:memory:/a\n0::/user.slice/x.scope\n"), "/user.slice/x.scope");
  EXPECT_FALSE(cgroup::unified_path("4:memory:/a\n"));
  EXPECT_TRUE(cgroup::lists_memory_and_pids("cpu io memory pids\n"));
  EXPECT_FALSE(cgroup::lists_memory_and_pids("cpu memory hugetlb\n"));
  EXPECT_FALSE(cgroup::lists_memory_and_pids("memorypids\n"));
  EXPECT_EQ(cgroup::event_count("low 0\nhigh 0\nmax 12\noom 1\noom_kill 1\n", "max"), 12u);
  EXPECT_EQ(cgroup::event_count("oom 3\noom_kill 2\n", "oom_kill"), 2u);
}

TEST(Sizes, BinaryUnitsOnly) {
  EXPECT_EQ(*parse_size("--memory", "512MiB"), 512ULL << 20);
  EXPECT_EQ(*parse_size("--memory", "2GiB"), 2ULL << 30);
  EXPECT_EQ(*parse_size("--fsize", "4096"), 4096u);
  EXPECT_FALSE(parse_size("--memory", "2GB"));
  EXPECT_FALSE(parse_size("--memory", "99999999999TiB"));
  EXPECT_FALSE(parse_count("--pids", "-1"));
  EXPECT_EQ(format_size(512ULL << 20), "512 MiB");
  EXPECT_EQ(format_size(1000), "1000 bytes");
}

struct Naming : ::testing::Test {
  static Limits with_data() {
    Limits l;
    l.data_bytes = 16ULL << 30;
    return l;
  }
  rlimits::Plan plan = *rlimits::prepare(with_data(), roomy());
  LimitsReport report;
  KillFacts facts() {
    KillFacts f;
    f.plan = &plan;
    f.processes_allowed = 256;
    f.evidence.traced = 1;
    return f;
  }
};

TEST_F(Naming, CgroupEventsNameMemoryAndProcesses) {
  report.cgroup = CgroupState::ok;
  report.memory_max = 64 << 20;
  report.memory_oom_kills = 1;
  auto f = facts();
  f.signal = SIGKILL;
  name_kill(f, report);
  EXPECT_EQ(report.killed_by, "memory");
  EXPECT_EQ(kill_message(report), "chock: the program was stopped by the limit on memory, which is 64 MiB");
}

// The keeper measured the call past its limit and ended it: named, with how.
TEST_F(Naming, TheKeepersMeasurementNamesMemoryAndSaysHow) {
  report.memory_measured_limit = 256ULL << 20;
  report.memory_measured_why = "cgroup v2 memory is unavailable here";
  report.memory_measured_peak = (260ULL << 20) + 12345;
  auto f = facts();
  f.signal = SIGKILL;
  name_kill(f, report);
  EXPECT_EQ(report.killed_by, "") << "a SIGKILL without the keeper's word is nobody's limit";
  f.evidence.memory_over = 1;
  name_kill(f, report);
  EXPECT_EQ(report.killed_by, "memory");
  EXPECT_EQ(report.killed_by_limit, 256ULL << 20);
  EXPECT_EQ(
      kill_message(report),
      "chock: the program was stopped by the limit on memory, which is 256 MiB, measured by Chock: cgroup "
      "v2 memory is unavailable here (the call's processes held 260 MiB)");
}

// The interval shortens as the call nears its limit.
TEST(MemoryInterval, ShortensNearTheLimit) {
  EXPECT_EQ(exit_watch::memory_interval_usec(2ULL << 30, 0), exit_watch::kMemoryIntervalMaxUsec);
  EXPECT_EQ(exit_watch::memory_interval_usec(2ULL << 30, 2ULL << 30), exit_watch::kMemoryIntervalMinUsec);
  EXPECT_EQ(exit_watch::memory_interval_usec(2ULL << 30, 3ULL << 30), exit_watch::kMemoryIntervalMinUsec);
  const long mid = exit_watch::memory_interval_usec(2ULL << 30, (2ULL << 30) - (256ULL << 20));
  EXPECT_GT(mid, exit_watch::kMemoryIntervalMinUsec);
  EXPECT_LT(mid, exit_watch::kMemoryIntervalMaxUsec);
}

TEST_F(Naming, NothingIsNamedForASuccessOrForChocksOwnKill) {
  auto f = facts();
  f.evidence.exit_fds_max = 5000;
  f.exit_code = 0;
  name_kill(f, report);
  EXPECT_EQ(report.killed_by, "");
  f.exit_code.reset();
  f.signal = SIGKILL;
  f.ended_by_chock = true;
  name_kill(f, report);
  EXPECT_EQ(report.killed_by, "");
}

TEST_F(Naming, ASignalAloneNamesNothing) {
  for (int sig : {SIGXCPU, SIGXFSZ, SIGKILL}) {
    auto f = facts();
    f.signal = sig;
    name_kill(f, report);
    EXPECT_EQ(report.killed_by, "") << sig;
  }
}

TEST_F(Naming, EachPieceOfEvidenceNamesItsLimit) {
  auto f = facts();
  f.exit_code = 1;
  f.evidence.exit_fds_max = 1024;
  name_kill(f, report);
  EXPECT_EQ(report.killed_by, "open_files");
  EXPECT_EQ(kill_message(report), "chock: the program was stopped by the limit on open files, which is 1024");
  f.evidence.exit_fds_max = 1023;
  name_kill(f, report);
  EXPECT_EQ(report.killed_by, "");
  f.evidence.tasks_peak = 256;
  name_kill(f, report);
  EXPECT_EQ(report.killed_by, "processes");
  f.evidence.tasks_peak = 0;
  f.evidence.exit_data_max = (16ULL << 30) - (32 << 20);
  name_kill(f, report);
  EXPECT_EQ(report.killed_by, "memory");
  f.evidence.exit_data_max = 8ULL << 30;
  name_kill(f, report);
  EXPECT_EQ(report.killed_by, "");
  f.signal = SIGXFSZ;
  f.evidence.xfsz_efbig = 1;
  name_kill(f, report);
  EXPECT_EQ(report.killed_by, "file_size");
  EXPECT_EQ(kill_message(report), "chock: the program was stopped by the limit on file size, which is 1 GiB");
  EXPECT_TRUE(report.core_dump_suppressed);
}

}  // namespace
