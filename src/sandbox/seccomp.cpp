// Installing a filter, and the filters libseccomp compiled at build time
// (seccomp_compile.cpp holds the compiler side).
#include "sandbox/seccomp.hpp"

#include <linux/keyctl.h>
#include <linux/seccomp.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

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

bool join_fresh_session_keyring(int* error) noexcept {
  if (::syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, nullptr) >= 0 || errno == ENOSYS) return true;
  if (error != nullptr) *error = errno;
  return false;
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
