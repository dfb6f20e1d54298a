#include "sandbox/capabilities.hpp"

#include <linux/capability.h>
#include <linux/securebits.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace chock::sandbox {

namespace {

bool fail(StepFailure* failure, Step step) noexcept {
  failure->step = step;
  failure->error = errno;
  return false;
}

}  // namespace

bool restrict_inherited_capabilities(StepFailure* failure) noexcept {
  // Securebits first: setting them needs CAP_SETPCAP, which the bounding set
  // loses below (the effective set keeps it until clear_capabilities).
  constexpr unsigned long kBits = SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
                                  SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED |
                                  SECBIT_NO_CAP_AMBIENT_RAISE | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED;
  if (prctl(PR_SET_SECUREBITS, kBits, 0, 0, 0) != 0) return fail(failure, Step::capabilities);
  // The kernel's last capability is not known at compile time; stop at the
  // first number it does not know.
  for (unsigned long cap = 0; cap < 64; ++cap) {
    if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0) {
      if (errno == EINVAL) break;
      return fail(failure, Step::capabilities);
    }
  }
  if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0) return fail(failure, Step::capabilities);
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return fail(failure, Step::no_new_privs);
  return true;
}

bool clear_capabilities(StepFailure* failure) noexcept {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  if (syscall(SYS_capset, &header, data) != 0) return fail(failure, Step::capabilities);
  return true;
}

}  // namespace chock::sandbox
