// The filter as libseccomp compiles it: the rules, compile(), and build() for a
// layout not embedded. Only the build-time generator and the benchmark reach
// this file, so the chock binary does not load libseccomp at start-up.
#include "sandbox/seccomp.hpp"

#include <fcntl.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <tuple>
#include <utility>

#include "sandbox/fetcher_confinement.hpp"
#include "util/fd.hpp"
#include "util/syscalls.hpp"

namespace chock::seccomp {
namespace {

struct ContextDeleter {
  void operator()(void* ctx) const noexcept { seccomp_release(ctx); }
};
using Context = std::unique_ptr<void, ContextDeleter>;

// libseccomp answers -errno.
Error libseccomp_error(const std::string& what, int rc, const char* call = "") {
  return Error{"build seccomp filter: " + what, call, -rc};
}

int resolve(const Killed& call) {
  int nr = seccomp_syscall_resolve_name(call.name);
  return nr >= 0 ? nr : call.number;
}

// Arguments the kernel reads as an int (or unsigned int) are compared on
// their low 32 bits only: the high half is masked out, so a caller that sets
// it cannot make the comparison miss.
constexpr std::uint64_t kLow32 = 0xffffffffULL;
scmp_arg_cmp low32_has_bits(unsigned arg, std::uint64_t bits) {
  return scmp_arg_cmp{arg, SCMP_CMP_MASKED_EQ, bits & kLow32, bits & kLow32};
}
scmp_arg_cmp low32_equals(unsigned arg, std::uint64_t value) {
  return scmp_arg_cmp{arg, SCMP_CMP_MASKED_EQ, kLow32, value & kLow32};
}

Expected<void> add(void* ctx, std::uint32_t action, int nr, const char* name,
                   std::initializer_list<scmp_arg_cmp> args = {}) {
  int rc = seccomp_rule_add_array(ctx, action, nr, static_cast<unsigned>(args.size()),
                                  args.size() == 0 ? nullptr : args.begin());
  if (rc < 0) return libseccomp_error("add rule", rc, name);
  return {};
}

// A memfd is never executable: a well-formed MFD_EXEC is refused as
// vm.memfd_noexec=2 refuses it, and a call without MFD_NOEXEC_SEAL goes to
// the keeper, which adds it. The two conditions are disjoint, so no rule
// shadows the other. A malformed call (unknown bits, or MFD_EXEC with
// MFD_NOEXEC_SEAL) reaches the kernel, which says EINVAL as it would outside:
// programs probe with bad flags and expect that answer.
Expected<void> add_memfd_rules(void* ctx) {
  if (auto r = add(ctx, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(memfd_create), "memfd_create",
                   {scmp_arg_cmp{1, SCMP_CMP_MASKED_EQ, kMfdUnknown | kMfdExec | kMfdNoexecSeal, kMfdExec}});
      !r)
    return r;
  return add(ctx, SCMP_ACT_TRACE(kTraceMemfdCreate), SCMP_SYS(memfd_create), "memfd_create",
             {scmp_arg_cmp{1, SCMP_CMP_MASKED_EQ, kMfdExec | kMfdNoexecSeal, 0}});
}

Expected<void> add_kill_rules(void* ctx) {
  for (const auto& call : kill_list()) {
    if (auto r = add(ctx, SCMP_ACT_KILL_PROCESS, resolve(call), call.name); !r) return r;
  }
  // Running a file that has no path: Landlock's execute right has nothing to check.
  if (auto r =
          add(ctx, SCMP_ACT_KILL_PROCESS, SCMP_SYS(execveat), "execveat", {low32_has_bits(4, AT_EMPTY_PATH)});
      !r)
    return r;
  if (auto r = add_memfd_rules(ctx); !r) return r;
  // A process made with CLONE_UNTRACED would escape the keeper, which names
  // the filter's kills and answers its SECCOMP_RET_TRACE rules: the keeper
  // answers EPERM and counts it (kTraceUntracedClone). (clone3's flags are
  // in memory the filter cannot read; what that process then gets from
  // those rules is ENOSYS, a refusal, as this one is without a tracer.)
  if (auto r = add(ctx, SCMP_ACT_TRACE(kTraceUntracedClone), SCMP_SYS(clone), "clone",
                   {low32_has_bits(0, CLONE_UNTRACED)});
      !r)
    return r;
  // A nested sandbox's user namespace: refused, and named, by the keeper.
  // (With CLONE_UNTRACED as well, the rule above answers: the two are disjoint.)
  if (auto r = add(ctx, SCMP_ACT_TRACE(kTraceUserNamespace), SCMP_SYS(clone), "clone",
                   {scmp_arg_cmp{0, SCMP_CMP_MASKED_EQ, CLONE_NEWUSER | CLONE_UNTRACED, CLONE_NEWUSER}});
      !r)
    return r;
  // vsock reaches the hypervisor without consulting the network namespace.
  return add(ctx, SCMP_ACT_KILL_PROCESS, SCMP_SYS(socket), "socket", {low32_equals(0, AF_VSOCK)});
}

Expected<void> add_io_uring_rules(void* ctx) {
  for (int nr : {SCMP_SYS(io_uring_setup), SCMP_SYS(io_uring_enter), SCMP_SYS(io_uring_register)}) {
    if (auto r = add(ctx, SCMP_ACT_ERRNO(EPERM), nr, "io_uring"); !r) return r;
  }
  return {};
}

// Refused through the keeper, which counts each refusal (kTraceWriteExecute).
Expected<void> add_write_xor_execute_rules(void* ctx) {
  constexpr std::uint64_t kWriteExec = PROT_WRITE | PROT_EXEC;
  for (auto [nr, name] : {std::pair{SCMP_SYS(mmap), "mmap"}, std::pair{SCMP_SYS(mprotect), "mprotect"},
                          std::pair{SCMP_SYS(pkey_mprotect), "pkey_mprotect"}}) {
    if (auto r = add(ctx, SCMP_ACT_TRACE(kTraceWriteExecute), nr, name, {low32_has_bits(2, kWriteExec)}); !r)
      return r;
  }
  if (auto r = add(ctx, SCMP_ACT_TRACE(kTraceWriteExecute), SCMP_SYS(shmat), "shmat",
                   {low32_has_bits(2, SHM_EXEC)});
      !r)
    return r;
  // personality(READ_IMPLIES_EXEC) is refused but the query 0xffffffff, which
  // has that bit too, must pass. libseccomp takes one comparison per argument
  // in a rule, so "the bit is set and the value is not all ones" is written as
  // one rule per other bit: "the bit is set and bit b is clear".
  for (unsigned b = 0; b < 32; ++b) {
    const std::uint64_t other = 1ULL << b;
    if (other == READ_IMPLIES_EXEC) continue;
    if (auto r = add(ctx, SCMP_ACT_TRACE(kTraceWriteExecute), SCMP_SYS(personality), "personality",
                     {scmp_arg_cmp{0, SCMP_CMP_MASKED_EQ, READ_IMPLIES_EXEC | other, READ_IMPLIES_EXEC}});
        !r)
      return r;
  }
  return {};
}

// Hot calls first when the layout is a chain; they are the ones that reach the
// filter at all, since the kernel caches a constant "allow" for the others.
Expected<void> prioritise_hot_calls(void* ctx) {
  std::uint8_t priority = 255;
  for (int nr : {SCMP_SYS(mmap), SCMP_SYS(mprotect), SCMP_SYS(socket), SCMP_SYS(execveat),
                 SCMP_SYS(pkey_mprotect), SCMP_SYS(shmat), SCMP_SYS(personality)}) {
    int rc = seccomp_syscall_priority(ctx, nr, priority--);
    if (rc < 0) return libseccomp_error("set priority", rc);
  }
  return {};
}

// Debian 12's libseccomp has no seccomp_export_bpf_mem: export into a memfd
// and read it back.
Expected<Program> export_program(void* ctx) {
  UniqueFd fd(memfd_create("chock-seccomp", MFD_CLOEXEC));
  if (!fd) return sys_error("build seccomp filter: memfd_create");
  if (int rc = seccomp_export_bpf(ctx, fd.get()); rc < 0) return libseccomp_error("export", rc);
  off_t size = lseek(fd.get(), 0, SEEK_END);
  if (size < 0) return sys_error("build seccomp filter: lseek");
  if (size == 0 || size % static_cast<off_t>(sizeof(sock_filter)) != 0 ||
      size / static_cast<off_t>(sizeof(sock_filter)) > BPF_MAXINSNS)
    return Error{"build seccomp filter: exported program has a bad size", std::to_string(size), 0};
  Program program;
  program.instructions.resize(static_cast<std::size_t>(size) / sizeof(sock_filter));
  auto* bytes = reinterpret_cast<char*>(program.instructions.data());
  for (off_t done = 0; done < size;) {
    ssize_t n = pread(fd.get(), bytes + done, static_cast<std::size_t>(size - done), done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return sys_error("build seccomp filter: read back");
    done += n;
  }
  return program;
}

}  // namespace

Expected<Program> compile(const Options& options) {
  Context ctx(seccomp_init(SCMP_ACT_ALLOW));
  if (!ctx) return Error{"build seccomp filter: seccomp_init failed", "", ENOMEM};
  // A foreign architecture (and, on x86_64, an x32 call, which libseccomp
  // routes to the same action) dies before its syscall number is read.
  const std::pair<scmp_filter_attr, std::uint32_t> attrs[] = {
      {SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS},
      {SCMP_FLTATR_CTL_NNP, 0},  // the child sets it itself, before Landlock
      {SCMP_FLTATR_CTL_OPTIMIZE, options.layout == Layout::binary_tree ? 2U : 1U},
  };
  for (auto [attr, value] : attrs) {
    if (int rc = seccomp_attr_set(ctx.get(), attr, value); rc < 0)
      return libseccomp_error("set attribute", rc, std::to_string(attr).c_str());
  }
  if (auto r = add_kill_rules(ctx.get()); !r) return r.error();
  if (auto r = add_io_uring_rules(ctx.get()); !r) return r.error();
  if (!options.allow_jit) {
    if (auto r = add_write_xor_execute_rules(ctx.get()); !r) return r.error();
  }
  if (options.layout == Layout::priority) {
    if (auto r = prioritise_hot_calls(ctx.get()); !r) return r.error();
  }
  return export_program(ctx.get());
}

Expected<Program> compile_keep_uid() {
  Context ctx(seccomp_init(SCMP_ACT_ALLOW));
  if (!ctx) return Error{"build seccomp filter: seccomp_init failed", "", ENOMEM};
  if (int rc = seccomp_attr_set(ctx.get(), SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS); rc < 0)
    return libseccomp_error("set attribute", rc, "bad arch");
  for (int nr : {SCMP_SYS(setuid), SCMP_SYS(setreuid), SCMP_SYS(setresuid), SCMP_SYS(setfsuid)})
    if (int rc = seccomp_rule_add(ctx.get(), SCMP_ACT_ERRNO(EPERM), nr, 0); rc < 0)
      return libseccomp_error("add rule", rc, "setuid");
  return export_program(ctx.get());
}

Expected<Program> compile_fetcher() {
  Context ctx(seccomp_init(SCMP_ACT_ALLOW));
  if (!ctx) return Error{"build seccomp filter: seccomp_init failed", "", ENOMEM};
  if (int rc = seccomp_attr_set(ctx.get(), SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS); rc < 0)
    return libseccomp_error("set attribute", rc, "bad arch");
  if (int rc = seccomp_attr_set(ctx.get(), SCMP_FLTATR_CTL_NNP, 0); rc < 0)  // Landlock set it first
    return libseccomp_error("set attribute", rc, "no_new_privs");
  const std::uint32_t refuse = SCMP_ACT_ERRNO(EPERM);
  // The whole descriptor is compared: one with high bits set is some other
  // number here (refused) and fd 5 to the kernel, which is still never connected.
  if (auto r = add(ctx.get(), SCMP_ACT_ERRNO(EINPROGRESS), SCMP_SYS(connect), "connect",
                   {scmp_arg_cmp{0, SCMP_CMP_EQ, sandbox::kFetcherSocketFd, 0}});
      !r)
    return r.error();
  if (auto r = add(ctx.get(), refuse, SCMP_SYS(connect), "connect",
                   {scmp_arg_cmp{0, SCMP_CMP_NE, sandbox::kFetcherSocketFd, 0}});
      !r)
    return r.error();
  for (const auto& [nr, name] : {std::pair{SCMP_SYS(socket), "socket"},
                                 {SCMP_SYS(bind), "bind"},
                                 {SCMP_SYS(listen), "listen"},
                                 {SCMP_SYS(io_uring_setup), "io_uring_setup"},
                                 {SCMP_SYS(io_uring_enter), "io_uring_enter"},
                                 {SCMP_SYS(io_uring_register), "io_uring_register"},
                                 {SCMP_SYS(pidfd_getfd), "pidfd_getfd"}})
    if (auto r = add(ctx.get(), refuse, nr, name); !r) return r.error();
  if (auto r = add(ctx.get(), refuse, SCMP_SYS(socketpair), "socketpair",
                   {scmp_arg_cmp{0, SCMP_CMP_NE, AF_UNIX, 0}});
      !r)
    return r.error();
  // The flags argument: sendto's fourth, sendmsg's third, sendmmsg's fourth.
  for (const auto& [nr, name, arg] : {std::tuple{SCMP_SYS(sendto), "sendto", 3U},
                                      {SCMP_SYS(sendmsg), "sendmsg", 2U},
                                      {SCMP_SYS(sendmmsg), "sendmmsg", 3U}})
    if (auto r = add(ctx.get(), refuse, nr, name, {low32_has_bits(arg, MSG_FASTOPEN)}); !r) return r.error();
  return export_program(ctx.get());
}

const std::vector<Killed>& killed_calls() {
  static const std::vector<Killed> resolved = [] {
    std::vector<Killed> out(kill_list().begin(), kill_list().end());
    for (auto& call : out) call.number = resolve(call);
    return out;
  }();
  return resolved;
}

Expected<Program> build(const Options& options) {
  static std::mutex mutex;
  static std::array<std::optional<Program>, 4> cache;
  const std::size_t slot = (options.allow_jit ? 2U : 0U) + (options.layout == Layout::priority ? 1U : 0U);
  std::lock_guard lock(mutex);
  if (!cache[slot]) {
    auto built = compile(options);
    if (!built) return built.error();
    cache[slot] = std::move(*built);
  }
  return *cache[slot];
}

}  // namespace chock::seccomp
