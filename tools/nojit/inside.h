/* Where the no-JIT preload and Chock's git are inside a call; the same as
 * kPcre2NoJitInside and kGitInside in src/session/jit_fallback.hpp. */
#ifndef CHOCK_NOJIT_INSIDE_H
#define CHOCK_NOJIT_INSIDE_H

#define CHOCK_NOJIT_PRELOAD "/run/chock/lib/pcre2-nojit.so"
#define CHOCK_GIT_DIR "/run/chock/bin"
#define CHOCK_GIT CHOCK_GIT_DIR "/git"

#endif
