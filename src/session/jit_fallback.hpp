// PCRE2 without its JIT for calls under write-xor-execute: see
// tools/nojit/pcre2_nojit.c for why, README ("git inside") for the effect.
#pragma once

#include "chock/config.hpp"

namespace chock::session {

// Where the preload appears inside a call.
inline constexpr const char* kPcre2NoJitInside = "/run/chock/lib/pcre2-nojit.so";

// Puts the preload (carried inside the chock binary) in the call's root,
// read-only, and names it in LD_PRELOAD. `config.env` must be set.
void add_pcre2_without_jit(Config& config);

}  // namespace chock::session
