// The seccomp filter, asked directly: the exported program is run by a small
// BPF interpreter against seccomp_data for every row of the spec, and then
// installed for real in forked children.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/audit.h>
#include <linux/keyctl.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <functional>
#include <set>
#include <string>

#include "bpf_interpreter.hpp"
#include "sandbox/seccomp.hpp"

namespace chock::seccomp {
namespace {

constexpr std::uint32_t kKill = SECCOMP_RET_KILL_PROCESS;
constexpr std::uint32_t kEperm = SECCOMP_RET_ERRNO | EPERM;
// The write-xor-execute rules stop for the keeper, which answers EPERM.
constexpr std::uint32_t kTraceWx = SECCOMP_RET_TRACE | kTraceWriteExecute;
constexpr std::uint32_t kAllow = SECCOMP_RET_ALLOW;
constexpr std::uint32_t kX32Bit = 0x40000000U;
constexpr std::uint64_t kHigh = 1ULL << 32;  // a bit the kernel drops when it reads an int
constexpr auto kAtFdcwd = static_cast<std::uint64_t>(AT_FDCWD);

const char* const kSpecKilled[] = {"unshare",
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
                                   "open_by_handle_at"};

struct Variant {
  Options options;
  const char* name;
};
const Variant kVariants[] = {
    {{false, Layout::binary_tree}, "strict_tree"},
    {{false, Layout::priority}, "strict_priority"},
    {{true, Layout::binary_tree}, "jit_tree"},
    {{true, Layout::priority}, "jit_priority"},
};

class Filter : public ::testing::TestWithParam<Variant> {
 protected:
  void SetUp() override {
    auto built = build(GetParam().options);
    ASSERT_TRUE(built) << built.error().message();
    program_ = *built;
  }
  [[nodiscard]] bool jit() const { return GetParam().options.allow_jit; }

  std::uint32_t ask(int nr, std::initializer_list<std::uint64_t> args = {},
                    std::uint32_t arch = AUDIT_ARCH_X86_64) const {
    seccomp_data data{};
    data.nr = nr;
    data.arch = arch;
    std::size_t i = 0;
    for (auto v : args) data.args[i++] = v;
    auto verdict = test::run_bpf(program_.instructions, data);
    EXPECT_TRUE(verdict.action.has_value()) << verdict.problem;
    return verdict.action.value_or(0xdeadbeef);
  }

  Program program_;
};

TEST_P(Filter, KillsEachOfTheSpecs31) {
  const auto& killed = killed_calls();
  ASSERT_EQ(killed.size(), 31U);
  for (std::size_t i = 0; i < killed.size(); ++i) {
    EXPECT_STREQ(killed[i].name, kSpecKilled[i]);
    EXPECT_EQ(ask(killed[i].number), kKill) << killed[i].name;
    // Killed whatever the arguments.
    EXPECT_EQ(ask(killed[i].number, {~0ULL, ~0ULL, ~0ULL, ~0ULL, ~0ULL, ~0ULL}), kKill) << killed[i].name;
  }
}

TEST_P(Filter, OpenTreeAttrIsKilledByNumberLibseccompDoesNotKnow) {
  EXPECT_EQ(ask(467), kKill);
  EXPECT_EQ(ask(SYS_open_tree), kKill);
}

TEST_P(Filter, ForeignArchitectureDiesBeforeTheNumberIsRead) {
  // 20 is getpid on i386, 172 on aarch64: harmless calls, still killed.
  EXPECT_EQ(ask(20, {}, AUDIT_ARCH_I386), kKill);
  EXPECT_EQ(ask(172, {}, AUDIT_ARCH_AARCH64), kKill);
  EXPECT_EQ(ask(SYS_getppid, {}, AUDIT_ARCH_X86_64), kAllow);
}

TEST_P(Filter, X32CallsDieEvenForHarmlessNumbers) {
  EXPECT_EQ(ask(static_cast<int>(kX32Bit | SYS_getpid)), kKill);
  EXPECT_EQ(ask(static_cast<int>(kX32Bit | 512)), kKill);  // x32's own execve number
  EXPECT_EQ(ask(static_cast<int>(kX32Bit | SYS_ptrace)), kKill);
}

TEST_P(Filter, ExecveatWithEmptyPathDiesAndAPathDoesNot) {
  EXPECT_EQ(ask(SYS_execveat, {3, 0, 0, 0, AT_EMPTY_PATH}), kKill);
  EXPECT_EQ(ask(SYS_execveat, {3, 0, 0, 0, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW}), kKill);
  EXPECT_EQ(ask(SYS_execveat, {3, 0, 0, 0, kHigh | AT_EMPTY_PATH}), kKill);
  EXPECT_EQ(ask(SYS_execveat, {kAtFdcwd, 0, 0, 0, 0}), kAllow);
  EXPECT_EQ(ask(SYS_execveat, {kAtFdcwd, 0, 0, 0, AT_SYMLINK_NOFOLLOW}), kAllow);
}

TEST_P(Filter, CloneUntracedIsRefused) {
  // Refused by the keeper, which counts it (LeakSanitizer's tracer by its flags).
  constexpr std::uint32_t kTraceUntraced = SECCOMP_RET_TRACE | kTraceUntracedClone;
  EXPECT_EQ(ask(SYS_clone, {CLONE_UNTRACED | SIGCHLD}), kTraceUntraced);
  EXPECT_EQ(ask(SYS_clone, {kHigh | CLONE_UNTRACED}), kTraceUntraced);
  EXPECT_EQ(ask(SYS_clone, {kSanitizerTracerClone}), kTraceUntraced);
  EXPECT_EQ(ask(SYS_clone, {CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD}), kAllow);
  EXPECT_EQ(ask(SYS_clone, {SIGCHLD}), kAllow);
}

TEST_P(Filter, AMemfdIsNeverExecutable) {
  const std::uint32_t trace = SECCOMP_RET_TRACE | kTraceMemfdCreate;
  const std::uint32_t eacces = SECCOMP_RET_ERRNO | EACCES;
  EXPECT_EQ(ask(SYS_memfd_create, {0, 0}), trace);
  EXPECT_EQ(ask(SYS_memfd_create, {0, MFD_CLOEXEC | MFD_ALLOW_SEALING}), trace);
  EXPECT_EQ(ask(SYS_memfd_create, {0, kHigh | kMfdNoexecSeal}), kAllow);
  EXPECT_EQ(ask(SYS_memfd_create, {0, MFD_CLOEXEC | kMfdNoexecSeal}), kAllow);
  EXPECT_EQ(ask(SYS_memfd_create, {0, kMfdExec}), eacces);
  EXPECT_EQ(ask(SYS_memfd_create, {0, kHigh | kMfdExec}), eacces);
  // Malformed calls go to the kernel, which says EINVAL as it would outside.
  EXPECT_EQ(ask(SYS_memfd_create, {0, kMfdExec | kMfdNoexecSeal}), kAllow);
  EXPECT_EQ(ask(SYS_memfd_create, {0, 0xffffffffU}), kAllow);
  EXPECT_EQ(ask(SYS_memfd_create, {0, kMfdExec | 0x20U}), kAllow);
}

TEST_P(Filter, VsockDiesOtherFamiliesDoNot) {
  EXPECT_EQ(ask(SYS_socket, {AF_VSOCK, SOCK_STREAM, 0}), kKill);
  EXPECT_EQ(ask(SYS_socket, {kHigh | AF_VSOCK, SOCK_STREAM, 0}), kKill);
  EXPECT_EQ(ask(SYS_socket, {AF_UNIX, SOCK_STREAM, 0}), kAllow);
  EXPECT_EQ(ask(SYS_socket, {AF_INET6, SOCK_DGRAM, 0}), kAllow);
  EXPECT_EQ(ask(SYS_socket, {AF_VSOCK | 0x100, SOCK_STREAM, 0}), kAllow);  // another family number
}

TEST_P(Filter, IoUringIsRefusedWithEpermEvenWithJit) {
  EXPECT_EQ(ask(SYS_io_uring_setup, {1, 0}), kEperm);
  EXPECT_EQ(ask(SYS_io_uring_enter, {3, 1, 0, 0}), kEperm);
  EXPECT_EQ(ask(SYS_io_uring_register, {3, 0, 0, 0}), kEperm);
}

TEST_P(Filter, WriteExecutePagesAreRefusedUnlessJit) {
  const std::uint32_t refused = jit() ? kAllow : kTraceWx;
  const std::uint64_t rwx = PROT_READ | PROT_WRITE | PROT_EXEC;
  EXPECT_EQ(ask(SYS_mmap, {0, 4096, rwx, MAP_PRIVATE | MAP_ANONYMOUS}), refused);
  EXPECT_EQ(ask(SYS_mmap, {0, 4096, PROT_WRITE | PROT_EXEC, MAP_PRIVATE}), refused);
  EXPECT_EQ(ask(SYS_mmap, {0, 4096, kHigh | rwx, MAP_PRIVATE}), refused);
  EXPECT_EQ(ask(SYS_mprotect, {0, 4096, rwx}), refused);
  EXPECT_EQ(ask(SYS_pkey_mprotect, {0, 4096, rwx, 0}), refused);
  EXPECT_EQ(ask(SYS_mmap, {0, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE}), kAllow);
  EXPECT_EQ(ask(SYS_mmap, {0, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE}), kAllow);
  EXPECT_EQ(ask(SYS_mmap, {0, 4096, kHigh | PROT_READ | PROT_EXEC, MAP_PRIVATE}), kAllow);
  EXPECT_EQ(ask(SYS_mprotect, {0, 4096, PROT_READ | PROT_EXEC}), kAllow);
  EXPECT_EQ(ask(SYS_pkey_mprotect, {0, 4096, PROT_READ | PROT_WRITE, 0}), kAllow);
  EXPECT_EQ(ask(SYS_shmat, {1, 0, SHM_EXEC}), refused);
  EXPECT_EQ(ask(SYS_shmat, {1, 0, SHM_EXEC | SHM_RDONLY}), refused);
  EXPECT_EQ(ask(SYS_shmat, {1, 0, 0}), kAllow);
  EXPECT_EQ(ask(SYS_shmat, {1, 0, SHM_RDONLY}), kAllow);
}

TEST_P(Filter, PersonalityReadImpliesExecIsRefusedTheQueryIsNot) {
  const std::uint32_t refused = jit() ? kAllow : kTraceWx;
  EXPECT_EQ(ask(SYS_personality, {0xffffffffULL}), kAllow);
  EXPECT_EQ(ask(SYS_personality, {kHigh | 0xffffffffULL}), kAllow);  // still the query to the kernel
  EXPECT_EQ(ask(SYS_personality, {PER_LINUX}), kAllow);
  EXPECT_EQ(ask(SYS_personality, {ADDR_NO_RANDOMIZE}), kAllow);
  EXPECT_EQ(ask(SYS_personality, {READ_IMPLIES_EXEC}), refused);
  EXPECT_EQ(ask(SYS_personality, {kHigh | READ_IMPLIES_EXEC}), refused);
  EXPECT_EQ(ask(SYS_personality, {std::uint64_t{PER_LINUX32} | READ_IMPLIES_EXEC}), refused);
  // Every value but all-ones that carries the bit: all ones with one bit cleared.
  for (unsigned b = 0; b < 32; ++b) {
    const std::uint64_t v = 0xffffffffULL & ~(1ULL << b);
    EXPECT_EQ(ask(SYS_personality, {v}), (v & READ_IMPLIES_EXEC) != 0 ? refused : kAllow) << std::hex << v;
  }
}

TEST_P(Filter, EverythingElseIsAllowed) {
  std::set<int> listed;
  for (const auto& k : killed_calls()) listed.insert(k.number);
  // memfd_create with no flags goes to the keeper (AMemfdIsNeverExecutable).
  for (int nr : {SYS_io_uring_setup, SYS_io_uring_enter, SYS_io_uring_register, SYS_memfd_create})
    listed.insert(nr);
  for (int nr = 0; nr < 600; ++nr) {
    if (listed.count(nr) != 0) continue;
    // Zero arguments: no argument rule matches, so only the kill list, io_uring and memfd_create differ.
    EXPECT_EQ(ask(nr), kAllow) << "syscall " << nr;
  }
  EXPECT_EQ(ask(SYS_name_to_handle_at), kAllow);
}

INSTANTIATE_TEST_SUITE_P(Seccomp, Filter, ::testing::ValuesIn(kVariants),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(SeccompBuild, IsCachedAndLayoutsDiffer) {
  auto a = build(false);
  auto b = build(false);
  auto c = build(Options{false, Layout::priority});
  auto jit = build(true);
  ASSERT_TRUE(a && b && c && jit);
  EXPECT_EQ(a->instructions.size(), b->instructions.size());
  EXPECT_EQ(0, std::memcmp(a->instructions.data(), b->instructions.data(),
                           a->instructions.size() * sizeof(sock_filter)));
  EXPECT_LT(jit->instructions.size(), a->instructions.size());
  EXPECT_LE(a->instructions.size(), static_cast<std::size_t>(BPF_MAXINSNS));
  const bool same_layout = c->instructions.size() == a->instructions.size() &&
                           std::memcmp(c->instructions.data(), a->instructions.data(),
                                       a->instructions.size() * sizeof(sock_filter)) == 0;
  EXPECT_FALSE(same_layout);
}

// The programs embedded at build time are exactly what libseccomp compiles now.
TEST(SeccompBuild, EmbeddedProgramsAreWhatLibseccompCompiles) {
  for (const auto& v : kVariants) {
    auto shipped = build(v.options);
    auto fresh = compile(v.options);
    ASSERT_TRUE(shipped && fresh) << v.name;
    ASSERT_EQ(shipped->instructions.size(), fresh->instructions.size()) << v.name;
    EXPECT_EQ(0, std::memcmp(shipped->instructions.data(), fresh->instructions.data(),
                             fresh->instructions.size() * sizeof(sock_filter)))
        << v.name;
  }
  for (const auto& [shipped, fresh] :
       {std::pair{keep_uid(), compile_keep_uid()}, std::pair{fetcher(), compile_fetcher()}}) {
    ASSERT_TRUE(shipped && fresh);
    ASSERT_EQ(shipped->instructions.size(), fresh->instructions.size());
    EXPECT_EQ(0, std::memcmp(shipped->instructions.data(), fresh->instructions.data(),
                             fresh->instructions.size() * sizeof(sock_filter)));
  }
}

// In a forked child: NO_NEW_PRIVS, the fresh keyring, the filter, then `body`.
// Returns the wait status.
int run_filtered(bool allow_jit, const std::function<int()>& body) {
  auto program = build(allow_jit);
  if (!program) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    int error = 0;
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) _exit(200);
    if (!join_fresh_session_keyring(&error)) _exit(201);
    if (!install(*program, &error)) _exit(202);
    _exit(body());
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}

bool killed_by_sigsys(int status) {
  return WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS;
}
int exit_code(int status) {
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(SeccompInstalled, KillIsSigsysForTheWholeProcess) {
  EXPECT_TRUE(killed_by_sigsys(
      run_filtered(false, [] { return static_cast<int>(syscall(SYS_ptrace, 0, 0, 0, 0)); })));
  EXPECT_TRUE(killed_by_sigsys(run_filtered(
      false, [] { return static_cast<int>(syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, 0, 0)); })));
  EXPECT_TRUE(killed_by_sigsys(run_filtered(true, [] { return static_cast<int>(syscall(SYS_unshare, 0)); })));
  // The neighbour: the same child, an allowed call.
  EXPECT_EQ(exit_code(run_filtered(false, [] { return syscall(SYS_getppid) > 0 ? 0 : 1; })), 0);
}

TEST(SeccompInstalled, EpermAnswersLetTheProgramCarryOn) {
  auto refused = [] {
    errno = 0;
    long rc = syscall(SYS_io_uring_setup, 1, nullptr);
    return rc == -1 && errno == EPERM ? 0 : 1;
  };
  EXPECT_EQ(exit_code(run_filtered(false, refused)), 0);
  EXPECT_EQ(exit_code(run_filtered(true, refused)), 0);
  auto rwx = [] {
    void* p = mmap(nullptr, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? errno : 0;
  };
  // No keeper traces this child: the write-xor-execute stop answers ENOSYS
  // (the keeper answers EPERM: the escape suite's Sandbox rows).
  EXPECT_EQ(exit_code(run_filtered(false, rwx)), ENOSYS);
  EXPECT_EQ(exit_code(run_filtered(true, rwx)), 0);
}

TEST(SeccompInstalled, FreshSessionKeyringIsNotTheCallersOwn) {
  const long outer = syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0);
  if (outer < 0) GTEST_SKIP() << "no session keyring here: keyctl answered " << errno;
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  pid_t pid = fork();
  if (pid == 0) {
    int error = 0;
    long inner = join_fresh_session_keyring(&error)
                     ? syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0)
                     : -1;
    (void)!write(fds[1], &inner, sizeof inner);
    _exit(0);
  }
  close(fds[1]);
  long inner = -1;
  ASSERT_EQ(read(fds[0], &inner, sizeof inner), static_cast<ssize_t>(sizeof inner));
  close(fds[0]);
  waitpid(pid, nullptr, 0);
  EXPECT_GT(inner, 0);
  EXPECT_NE(inner, outer);
}

}  // namespace
}  // namespace chock::seccomp
