// Giving up every capability for good: what the keeper and the program do
// once they no longer need to build namespaces and mounts.
#pragma once

#include "sandbox/steps.hpp"

namespace chock::sandbox {

// Locks the securebits (no root semantics, no ambient raise), empties the
// bounding set, clears ambient capabilities, and zeroes the permitted,
// effective and inheritable sets. Async-signal-safe.
bool drop_capabilities(StepFailure* failure) noexcept;

// PR_SET_NO_NEW_PRIVS. Async-signal-safe.
bool set_no_new_privs(StepFailure* failure) noexcept;

}  // namespace chock::sandbox
