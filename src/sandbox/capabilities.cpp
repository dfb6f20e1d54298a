#include "sandbox/capabilities.hpp"

#include <linux/capability.h>
#include <linux/securebits.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include "util/syscalls.hpp"

namespace chock::sandbox {

namespace {

bool fail(StepFailure* failure, Step step, int error = errno) noexcept {
  failure->step = step;
  failure->error = error;
  return false;
}

bool raw_fail(StepFailure* failure, Step step, long rc) noexcept {
  return fail(failure, step, static_cast<int>(-rc));
}

}  // namespace

bool restrict_inherited_capabilities(StepFailure* failure) noexcept {
  // Securebits first: setting them needs CAP_SETPCAP, which the bounding set
  // loses below (the effective set keeps it until clear_capabilities).
  constexpr unsigned long kBits = SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
                                  SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED |
                                  SECBIT_NO_CAP_AMBIENT_RAISE | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED;
  long rc = sys::raw(SYS_prctl, PR_SET_SECUREBITS, kBits);
  if (rc < 0) return raw_fail(failure, Step::capabilities, rc);
  // The kernel's last capability is not known at compile time; stop at the
  // first number it does not know.
  for (long cap = 0; cap < 64; ++cap) {
    rc = sys::raw(SYS_prctl, PR_CAPBSET_DROP, cap);
    if (rc == -EINVAL) break;
    if (rc < 0) return raw_fail(failure, Step::capabilities, rc);
  }
  if ((rc = sys::raw(SYS_prctl, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)) < 0)
    return raw_fail(failure, Step::capabilities, rc);
  if ((rc = sys::raw(SYS_prctl, PR_SET_NO_NEW_PRIVS, 1)) < 0)
    return raw_fail(failure, Step::no_new_privs, rc);
  return true;
}

bool clear_capabilities(StepFailure* failure) noexcept {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  if (syscall(SYS_capset, &header, data) != 0) return fail(failure, Step::capabilities);
  return true;
}

}  // namespace chock::sandbox
