// Installing a filter, and the filters libseccomp compiled at build time
// (seccomp_compile.cpp holds the compiler side).
#include "sandbox/seccomp.hpp"

#include <fcntl.h>
#include <linux/keyctl.h>
#include <linux/seccomp.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#ifndef SYS_open_tree_attr
#define SYS_open_tree_attr 467
#endif
#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif

namespace chock::seccomp {

#ifdef CHOCK_SECCOMP_EMBEDDED
namespace {
// The programs compile() made at build time (tools/seccomp_gen.cpp).
#include "seccomp_programs.inc"

template <std::size_t N>
Program copy_of(const sock_filter (&program)[N]) {
  return Program{std::vector<sock_filter>(program, program + N)};
}
}  // namespace
#endif

Expected<Program> build(bool allow_jit) {
#ifdef CHOCK_SECCOMP_EMBEDDED
  // Compiling with libseccomp costs about 1 ms, on every `chock sandbox`.
  return allow_jit ? copy_of(kEmbeddedJitTree) : copy_of(kEmbeddedStrictTree);
#else
  return build(Options{allow_jit, Layout::binary_tree});
#endif
}

Expected<Program> keep_uid() {
#ifdef CHOCK_SECCOMP_EMBEDDED
  return copy_of(kEmbeddedKeepUid);
#else
  return compile_keep_uid();
#endif
}

Expected<Program> fetcher() {
#ifdef CHOCK_SECCOMP_EMBEDDED
  return copy_of(kEmbeddedFetcher);
#else
  return compile_fetcher();
#endif
}

bool join_fresh_session_keyring(int* error) noexcept {
  if (::syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, nullptr) >= 0 || errno == ENOSYS) return true;
  if (error != nullptr) *error = errno;
  return false;
}

// The spec's 31 with this architecture's numbers from the kernel headers
// (libseccomp's own table wins where it knows the name: seccomp_compile.cpp).
constexpr Killed kKilled[] = {
    {"unshare", SYS_unshare},
    {"setns", SYS_setns},
    {"mount", SYS_mount},
    {"umount2", SYS_umount2},
    {"move_mount", SYS_move_mount},
    {"open_tree", SYS_open_tree},
    {"fsopen", SYS_fsopen},
    {"fsconfig", SYS_fsconfig},
    {"fsmount", SYS_fsmount},
    {"fspick", SYS_fspick},
    {"mount_setattr", SYS_mount_setattr},
    {"open_tree_attr", SYS_open_tree_attr},
    {"pivot_root", SYS_pivot_root},
    {"chroot", SYS_chroot},
    {"init_module", SYS_init_module},
    {"finit_module", SYS_finit_module},
    {"delete_module", SYS_delete_module},
    {"kexec_load", SYS_kexec_load},
    {"kexec_file_load", SYS_kexec_file_load},
    {"add_key", SYS_add_key},
    {"keyctl", SYS_keyctl},
    {"request_key", SYS_request_key},
    {"ptrace", SYS_ptrace},
    {"process_vm_readv", SYS_process_vm_readv},
    {"process_vm_writev", SYS_process_vm_writev},
    {"bpf", SYS_bpf},
    {"userfaultfd", SYS_userfaultfd},
    {"reboot", SYS_reboot},
    {"syslog", SYS_syslog},
    {"sethostname", SYS_sethostname},
    {"open_by_handle_at", SYS_open_by_handle_at},
};

std::span<const Killed> kill_list() noexcept {
  return kKilled;
}

const char* killed_for(long nr, std::uint64_t arg0, std::uint64_t arg4) noexcept {
  for (const Killed& k : kKilled)
    if (k.number == nr) return k.name;
  if (nr == SYS_execveat && (arg4 & AT_EMPTY_PATH) != 0) return "execveat";
  if (nr == SYS_socket && (arg0 & 0xffffffffULL) == AF_VSOCK) return "socket";
  return nullptr;
}

bool install(const Program& program, int* error) noexcept {
  sock_fprog fprog{};
  fprog.len = static_cast<unsigned short>(program.instructions.size());
  fprog.filter = const_cast<sock_filter*>(program.instructions.data());
  if (::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fprog) == 0) return true;
  if (error != nullptr) *error = errno;
  return false;
}

}  // namespace chock::seccomp
