// PCRE2 without its JIT for git under write-xor-execute: see
// tools/nojit/pcre2_nojit.c for why, README ("git inside") for the effect.
#pragma once

#include "chock/config.hpp"
#include "chock/error.hpp"

namespace chock::session {

// Where the preload and Chock's git appear inside a call (the same as
// tools/nojit/inside.h).
inline constexpr const char* kPcre2NoJitInside = "/run/chock/lib/pcre2-nojit.so";
inline constexpr const char* kGitDirInside = "/run/chock/bin";
inline constexpr const char* kGitInside = "/run/chock/bin/git";

// Puts the preload (carried inside the chock binary) in the call's root,
// read-only, and Chock's git (the companion chock-git) at kGitInside, first
// on the call's PATH: it names the preload in LD_PRELOAD for git alone, so
// no other process of the call loads it. `config.env` must be set.
[[nodiscard]] Expected<void> add_pcre2_without_jit(Config& config);

}  // namespace chock::session
