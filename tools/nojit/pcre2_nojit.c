/* Preloaded (LD_PRELOAD) into the processes of a `chock run` call when
 * write-xor-execute holds. PCRE2's JIT needs a writable and executable page,
 * which the sandbox refuses; programs that ask PCRE2 whether it has a JIT
 * before using it (git grep, git log --grep) then fail ("Couldn't JIT the
 * PCRE2 pattern"). Saying there is none sends them to PCRE2's interpreter,
 * which needs no such page. Everything else is PCRE2's own. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>

/* pcre2.h: PCRE2_CONFIG_JIT, and the error for an unknown option. */
enum { kConfigJit = 1, kErrorBadOption = -34 };

typedef int (*config_fn)(uint32_t, void*);

__attribute__((visibility("default"))) int pcre2_config_8(uint32_t what, void* where) {
  if (what == kConfigJit) {
    if (where != NULL) *(uint32_t*)where = 0;
    return (int)sizeof(uint32_t);
  }
  config_fn real = (config_fn)dlsym(RTLD_NEXT, "pcre2_config_8");
  return real != NULL ? real(what, where) : kErrorBadOption;
}
