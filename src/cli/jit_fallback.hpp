// PCRE2 without its JIT for calls under write-xor-execute: see
// tools/nojit/pcre2_nojit.c for why, README ("git inside") for the effect.
#pragma once

#include "chock/config.hpp"
#include "chock/error.hpp"

namespace chock::cli {

// Where the preload appears inside a call.
inline constexpr const char* kPcre2NoJitInside = "/run/chock/lib/pcre2-nojit.so";

// Writes the preload (carried inside the chock binary) to the data
// directory once, binds it read-only into the call and names it in
// LD_PRELOAD. `config.env` must be set.
Expected<void> add_pcre2_without_jit(Config& config);

}  // namespace chock::cli
