// The system call filter: the spec's denylist, built with libseccomp before
// the fork and installed in the child just before exec.
#pragma once

#include <linux/filter.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "chock/error.hpp"

namespace chock::seccomp {

// A classic BPF program, exported from libseccomp; nothing left to allocate.
struct Program {
  std::vector<sock_filter> instructions;
};

// How libseccomp lays out the syscall checks. Measured in bench/README.md.
enum class Layout {
  binary_tree,  // SCMP_FLTATR_CTL_OPTIMIZE=2: a tree of comparisons on the syscall number
  priority,     // SCMP_FLTATR_CTL_OPTIMIZE=1: a chain, hot calls first
};

struct Options {
  bool allow_jit = false;  // drops the write-xor-execute rules, and only them
  Layout layout = Layout::binary_tree;
};

// memfd_create's flags from Linux 6.3 (Debian 12's headers predate them).
inline constexpr unsigned kMfdNoexecSeal = 0x0008U;  // MFD_NOEXEC_SEAL: never executable, sealed so
inline constexpr unsigned kMfdExec = 0x0010U;        // MFD_EXEC: executable, asked for by name
// Every bit Linux does not define for memfd_create (those above, CLOEXEC,
// ALLOW_SEALING, HUGETLB and the huge page size in bits 26-31).
inline constexpr unsigned kMfdUnknown = ~(0x001fU | (0x3fU << 26U));
// The SECCOMP_RET_TRACE data of memfd_create without MFD_NOEXEC_SEAL: the
// keeper, which traces every process of the call, adds the flag before the
// kernel sees the call (exit_watch.cpp). A memfd is then a file that can be
// written, read and mapped, and never run by execve("/proc/self/fd/N"),
// where Landlock's execute right has no path to check.
inline constexpr std::uint16_t kTraceMemfdCreate = 1;
// The SECCOMP_RET_TRACE data of the write-xor-execute rules (a writable and
// executable mapping, SHM_EXEC, READ_IMPLIES_EXEC): the keeper counts the
// refusal and answers EPERM, so Chock can say why a JIT failed. Only calls
// that break the rule stop; every other mmap runs the same instructions as
// with an EPERM action. Without a tracer (the filter alone) they answer ENOSYS.
inline constexpr std::uint16_t kTraceWriteExecute = 2;
// The SECCOMP_RET_TRACE data of clone(CLONE_NEWUSER): a sandbox inside the
// call (Chromium's, bubblewrap) asking for a user namespace. The keeper
// answers ENOSPC, what the kernel says where none may be made (the call's
// user.max_user_namespaces is 0), and says which program asked, once.
inline constexpr std::uint16_t kTraceUserNamespace = 3;
// The SECCOMP_RET_TRACE data of clone with CLONE_UNTRACED, whose child would
// escape the keeper: the keeper answers EPERM and counts it, and whether its
// flags are exactly those of the sanitizers' stop-the-world tracer
// (kSanitizerTracerClone), so Chock can name LeakSanitizer's way out.
inline constexpr std::uint16_t kTraceUntracedClone = 4;
// CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_UNTRACED, no exit signal:
// LeakSanitizer's tracer (sanitizer_stoptheworld_linux_libcdep.cpp).
inline constexpr std::uint64_t kSanitizerTracerClone = 0x00000100U | 0x00000200U | 0x00000400U | 0x00800000U;

// A system call the filter kills, by name and by the number the filter uses.
struct Killed {
  const char* name;
  int number;
};
// The spec's 31, in the spec's order. A name libseccomp does not know (it
// predates open_tree_attr) is added by number.
const std::vector<Killed>& killed_calls();
// The same, with the kernel headers' numbers; no allocation (the keeper).
std::span<const Killed> kill_list() noexcept;
// The call the filter kills a process for, from the system call number and
// arguments a killed task stopped in: the 31, execveat with AT_EMPTY_PATH,
// socket(AF_VSOCK); nullptr for any other. Async-signal-safe.
const char* killed_for(long nr, std::uint64_t arg0, std::uint64_t arg4) noexcept;

// The filter for these options. The binary-tree programs were compiled at
// build time and are embedded; anything else is compiled once and cached.
Expected<Program> build(bool allow_jit);
Expected<Program> build(const Options& options);
// Compiles with libseccomp now, every time (the build step, and the test
// that the embedded programs are what libseccomp makes).
Expected<Program> compile(const Options& options);

// A filter that refuses every change of uid (setuid, setreuid, setresuid,
// setfsuid: EPERM) and allows the rest: a host program run as another uid
// with root's real uid (RunAs) cannot take root's back.
// keep_uid() is the one compiled at build time.
Expected<Program> keep_uid();
Expected<Program> compile_keep_uid();

// chock-fetch-hop's filter, beside its Landlock ruleset: it was handed its
// one connected socket, so every new socket (any family: UDP and raw ones
// Landlock cannot see), connect, bind, TCP Fast Open's connect by sendto or
// sendmsg, io_uring (a ring makes sockets past the filter) and taking a
// descriptor from another process are refused with EPERM. A connect on
// sandbox::kFetcherSocketFd (fetcher_confinement.hpp) answers EINPROGRESS
// and does nothing: libcurl 7.87 to 7.88 (Debian 12's) ignores
// CURL_SOCKOPT_ALREADY_CONNECTED and connects the socket it was given, then
// waits for it, which is already connected.
// socketpair of AF_UNIX stays (libcurl wakes itself through one).
// fetcher() is the one compiled at build time.
Expected<Program> fetcher();
Expected<Program> compile_fetcher();

// After the fork, in the child: system calls only.
// keyctl(KEYCTL_JOIN_SESSION_KEYRING, NULL): the call stops sharing the
// caller's session keyring before keyctl itself is killed. A kernel without
// keys (ENOSYS) has no keyring to share, which counts as success.
bool join_fresh_session_keyring(int* error) noexcept;
// seccomp(SECCOMP_SET_MODE_FILTER); PR_SET_NO_NEW_PRIVS must already be set.
bool install(const Program& program, int* error) noexcept;

}  // namespace chock::seccomp
