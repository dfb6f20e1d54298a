// The escape suite: every row of the seccomp section of the spec is an attack
// the `attack` program makes, run twice:
//   Sandbox: inside `chock sandbox`, every layer on, as the product runs it;
//   FilterOnly: under `filter-exec`, the seccomp filter and nothing else, so
//     the row proves this layer and not a namespace or a missing capability.
// A row names the status it must end with: the program's own exit code (0 or
// the errno it got) or 128+SIGSYS when the filter killed it.
#include <gtest/gtest.h>
#include <signal.h>

#include <cerrno>
#include <string>
#include <vector>

#include "process.hpp"

namespace chock::test {
namespace {

constexpr int kKilled = 128 + SIGSYS;
constexpr int kWorks = 0;
constexpr int kRefused = EPERM;
// The write-xor-execute rules and clone(CLONE_UNTRACED) stop the call for
// the keeper, which answers EPERM; the filter alone, with no keeper, gets
// ENOSYS from the kernel.
constexpr int kWxRefused = -1;
constexpr int kCarriesOn = 0;

struct Row {
  const char* attack;
  bool allow_jit;
  int expected;
};

int expected_status(const Row& row, bool filter_only) {
  if (row.expected != kWxRefused) return row.expected;
  return filter_only ? ENOSYS : EPERM;
}

std::vector<Row> rows() {
  std::vector<Row> out;
  // The 31: each dies, with and without --allow-jit.
  for (const char* call : {"unshare",
                           "setns",
                           "mount",
                           "umount2",
                           "move_mount",
                           "open_tree",
                           "fsopen",
                           "fsconfig",
                           "fsmount",
                           "fspick",
                           "mount_setattr",
                           "open_tree_attr",
                           "pivot_root",
                           "chroot",
                           "init_module",
                           "finit_module",
                           "delete_module",
                           "kexec_load",
                           "kexec_file_load",
                           "add_key",
                           "keyctl",
                           "request_key",
                           "ptrace",
                           "process_vm_readv",
                           "process_vm_writev",
                           "bpf",
                           "userfaultfd",
                           "reboot",
                           "syslog",
                           "sethostname",
                           "open_by_handle_at"}) {
    out.push_back({call, false, kKilled});
    out.push_back({call, true, kKilled});
  }
  const Row fixed[] = {
      {"x32_getpid", false, kKilled},
      {"x32_getpid", true, kKilled},
      {"execveat_empty_path", false, kKilled},
      {"execveat_empty_path", true, kKilled},
      {"execveat_path", false, kWorks},
      {"socket_vsock", false, kKilled},
      {"socket_vsock", true, kKilled},
      {"socket_vsock_high_bits", false, kKilled},
      {"socket_unix", false, kWorks},
      // no process escapes the keeper's tracing
      {"clone_untraced", false, kWxRefused},
      {"clone_untraced", true, kWxRefused},
      {"io_uring_setup", false, kRefused},
      {"io_uring_enter", false, kRefused},
      {"io_uring_register", false, kRefused},
      {"io_uring_then_carry_on", false, kCarriesOn},
      {"io_uring_setup", true, kRefused},
      {"io_uring_then_carry_on", true, kCarriesOn},
      // write xor execute
      {"mmap_rwx", false, kWxRefused},
      {"mmap_rwx_high_bits", false, kWxRefused},
      {"mprotect_rw_to_rwx", false, kWxRefused},
      {"pkey_mprotect_rwx", false, kWxRefused},
      {"personality_read_implies_exec", false, kWxRefused},
      {"shmat_exec", false, kWxRefused},
      {"mmap_rw_then_rx", false, kWorks},
      {"personality_query", false, kWorks},
      {"shmat_plain", false, kWorks},
      // --allow-jit turns those off, and only those
      {"mmap_rwx", true, kWorks},
      {"rwx_page_runs", true, kWorks},
      {"mprotect_rw_to_rwx", true, kWorks},
      {"pkey_mprotect_rwx", true, kWorks},
      {"personality_read_implies_exec", true, kWorks},
      {"shmat_exec", true, kWorks},
  };
  out.insert(out.end(), std::begin(fixed), std::end(fixed));
  return out;
}

std::string row_name(const ::testing::TestParamInfo<Row>& info) {
  return std::string(info.param.attack) + (info.param.allow_jit ? "_jit" : "");
}

std::string describe(const Output& out) {
  return "status " + std::to_string(out.status) + ", stdout: " + out.out + ", stderr: " + out.err;
}

class FilterOnly : public ::testing::TestWithParam<Row> {};

TEST_P(FilterOnly, EndsAsTheSpecSays) {
  const Row& row = GetParam();
  std::vector<std::string> argv = {program("filter-exec")};
  if (row.allow_jit) argv.emplace_back("--allow-jit");
  argv.insert(argv.end(), {"--", program("attack"), row.attack});
  const Output out = run_process(argv);
  EXPECT_EQ(out.status, expected_status(row, true)) << describe(out);
  if (row.expected == kKilled) {
    EXPECT_EQ(out.signal, SIGSYS) << describe(out);
  }
}

INSTANTIATE_TEST_SUITE_P(Seccomp, FilterOnly, ::testing::ValuesIn(rows()), row_name);

// `chock sandbox` with the staged binaries bound read-only at their own path.
Output sandboxed(const std::string& attack_case, bool allow_jit) {
  std::vector<std::string> args = {"sandbox"};
  if (allow_jit) args.emplace_back("--allow-jit");
  args.insert(args.end(), {"--ro", stage_dir(), "--", program("attack"), attack_case});
  return chock(args);
}

class Sandbox : public ::testing::TestWithParam<Row> {
 protected:
  void SetUp() override {
    const Output help = chock({"sandbox", "--help"});
    ASSERT_EQ(help.status, 0) << "`chock sandbox` is not built (it comes with the sandbox core, issue 2): "
                              << describe(help);
  }
};

TEST_P(Sandbox, EndsAsTheSpecSays) {
  const Row& row = GetParam();
  const Output out = sandboxed(row.attack, row.allow_jit);
  EXPECT_EQ(out.status, expected_status(row, false)) << describe(out);
  if (row.expected == kKilled) {
    // chock saw the signal in the program's parent and names it.
    EXPECT_NE(out.err.find("SIGSYS"), std::string::npos) << describe(out);
  }
  if (row.allow_jit) {
    EXPECT_NE(out.err.find("write-xor-execute is OFF"), std::string::npos) << describe(out);
  } else {
    EXPECT_EQ(out.err.find("write-xor-execute is OFF"), std::string::npos) << describe(out);
  }
}

INSTANTIATE_TEST_SUITE_P(Seccomp, Sandbox, ::testing::ValuesIn(rows()), row_name);

// No process of a call makes a namespace by any route. The filter kills
// unshare; clone and clone3 with CLONE_NEWUSER meet the call's own user
// namespace limit of 0 (ENOSPC), and without it a namespace needs a
// capability nobody in the call holds (EPERM). Threads and posix_spawn, built
// on the same calls, still work.
TEST(NestedNamespaces, NoneIsMadeByAnyRoute) {
  const std::pair<const char*, int> rows[] = {
      {"clone_newuser", ENOSPC},
      {"clone_newuser_newnet", ENOSPC},
      {"clone3_newuser", ENOSPC},
      {"clone3_newuser_newnet", ENOSPC},
      {"clone_newnet", EPERM},
      {"unshare_newuser", kKilled},
      {"unshare_newuser_newnet", kKilled},
      {"threads", kWorks},
      {"posix_spawn", kWorks},
  };
  for (const auto& [attack, expected] : rows) {
    const Output out = sandboxed(attack, false);
    EXPECT_EQ(out.status, expected) << attack << ": " << describe(out);
  }
}

// A memfd is never executable, by any route; used as a file it works. The
// filter refuses MFD_EXEC (EACCES) and sends every other memfd_create to the
// keeper, which adds MFD_NOEXEC_SEAL: no execute bit, and none can be set.
TEST(Memfd, NeverRunsAndStillWorksAsAFile) {
  const std::pair<const char*, int> rows[] = {
      {"memfd_exec_proc_fd", EACCES},  {"memfd_execveat", kKilled},     {"memfd_exec_flag", EACCES},
      {"memfd_chmod_exec", EPERM},     {"memfd_create", kWorks},        {"memfd_as_file", kWorks},
      {"memfd_create_sealed", kWorks}, {"memfd_unknown_flags", EINVAL}, {"memfd_exec_and_seal", EINVAL},
  };
  for (const auto& [attack, expected] : rows) {
    const Output out = sandboxed(attack, false);
    EXPECT_EQ(out.status, expected) << attack << ": " << describe(out);
  }
  // --result says so.
  const Output result = chock({"sandbox", "--result", "/dev/stdout", "--", "true"});
  EXPECT_NE(result.out.find("\"memfd_exec\":\"sealed\""), std::string::npos) << describe(result);
}

// The filter alone: with no keeper to add the flag, memfd_create without it
// is not run at all (ENOSYS), MFD_EXEC is refused, and a memfd that asked to
// be non-executable is let by.
TEST(Memfd, TheFilterAloneNeverLetsAnExecutableMemfdBy) {
  const std::pair<const char*, int> rows[] = {
      {"memfd_create", ENOSYS},
      {"memfd_exec_flag", EACCES},
      {"memfd_create_sealed", kWorks},
      {"memfd_unknown_flags", EINVAL},
  };
  for (const auto& [attack, expected] : rows) {
    const Output out = run_process({program("filter-exec"), "--", program("attack"), attack});
    EXPECT_EQ(out.status, expected) << attack << ": " << describe(out);
  }
}

// A process the filter killed is named with the call it was killed for, at
// once, whichever process of the call it was: here a grandchild, whose shell
// goes on. A SIGSYS the program sends itself is not the filter's.
TEST(FilterKills, AGrandchildIsNamedWithItsCall) {
  const Output out = chock({"sandbox", "--ro", stage_dir(), "--result", "/dev/stdout", "--", "sh", "-c",
                            "\"$0\" ptrace; echo after $?", program("attack")});
  EXPECT_EQ(out.status, 0) << describe(out);
  EXPECT_NE(out.out.find("after " + std::to_string(kKilled)), std::string::npos) << describe(out);
  EXPECT_NE(out.err.find("chock: `attack` (pid "), std::string::npos) << describe(out);
  EXPECT_NE(out.err.find(") was killed for calling `ptrace`, which the sandbox refuses"), std::string::npos)
      << describe(out);
  EXPECT_NE(
      out.out.find("\"filter_kills\":{\"count\":1,\"first\":[{\"call\":\"ptrace\",\"command\":\"attack\""),
      std::string::npos)
      << describe(out);
}

TEST(FilterKills, NothingIsSaidWhenTheFilterKilledNobody) {
  for (const char* script : {"true", "kill -SYS $$"}) {
    const Output out = chock({"sandbox", "--result", "/dev/stdout", "--", "sh", "-c", script});
    EXPECT_EQ(out.err.find("was killed for calling"), std::string::npos) << script << ": " << describe(out);
    EXPECT_NE(out.out.find("\"filter_kills\":{\"count\":0,"), std::string::npos)
        << script << ": " << describe(out);
  }
}

// A kernel without Landlock is a refusal to run, never a quiet downgrade:
// landlock_create_ruleset answers ENOSYS to chock here, as it would there.
TEST(NoLandlock, IsARefusalToRun) {
  const std::vector<std::string> call = {chock_binary(), "sandbox",         "--ro",     stage_dir(),
                                         "--",           program("attack"), "exit_zero"};
  const Output with = run_process(call);
  ASSERT_EQ(with.status, 0) << "the neighbour, with Landlock: " << describe(with);
  std::vector<std::string> hidden = {program("filter-exec"), "--hide-landlock", "--"};
  hidden.insert(hidden.end(), call.begin(), call.end());
  const Output without = run_process(hidden);
  EXPECT_EQ(without.status, 125) << describe(without);
  EXPECT_EQ(without.err.rfind(
                "chock: Landlock is not available on this kernel (landlock_create_ruleset: ENOSYS", 0),
            0U)
      << describe(without);
  EXPECT_EQ(without.out.find("attack exit_zero"), std::string::npos) << "the command must not have run";
}

// A foreign architecture: i386 calls through int 0x80. Only where the kernel
// runs i386 code at all; elsewhere the CPU fault ends the program first.
TEST(ForeignArchitecture, I386CallDies) {
  const Output bare = run_process({program("attack"), "i386_getpid"});
  if (bare.signal == SIGSEGV) {
    GTEST_SKIP() << "this kernel does not run i386 system calls (int $0x80 ends in SIGSEGV with no filter); "
                    "the filter's answer for a foreign arch is asserted in unit.Seccomp/Filter";
  }
  ASSERT_EQ(bare.status, 0) << describe(bare);
  const Output filtered = run_process({program("filter-exec"), "--", program("attack"), "i386_getpid"});
  EXPECT_EQ(filtered.signal, SIGSYS) << describe(filtered);
}

}  // namespace
}  // namespace chock::test
