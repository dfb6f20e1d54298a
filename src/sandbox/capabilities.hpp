// Giving up every capability for good. What a fork inherits (securebits, the
// bounding and ambient sets, no_new_privs) is given up once, by the middle
// right after it enters the namespaces; each process then clears its own
// permitted and effective sets when it no longer needs to build namespaces
// and mounts.
#pragma once

#include "sandbox/steps.hpp"

namespace chock::sandbox {

// Locks the securebits (no root semantics, no ambient raise), empties the
// bounding set, clears the ambient set and sets PR_SET_NO_NEW_PRIVS. The
// permitted and effective sets are untouched, so the caller can still mount;
// every process it forks afterwards inherits all four. Async-signal-safe, and
// leaves errno alone (raw system calls).
bool restrict_inherited_capabilities(StepFailure* failure) noexcept;

// Zeroes the permitted, effective and inheritable sets of this process.
// Async-signal-safe.
bool clear_capabilities(StepFailure* failure) noexcept;

}  // namespace chock::sandbox
