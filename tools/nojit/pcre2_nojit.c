/* Preloaded (LD_PRELOAD) into git, and only git, in a `chock run` call when
 * write-xor-execute holds: Chock's git (git_wrapper.c) names it for the real
 * git alone. PCRE2's JIT needs a writable and executable page, which the
 * sandbox refuses; programs that ask PCRE2 whether it has a JIT before using
 * it (git grep, git log --grep) then fail ("Couldn't JIT the PCRE2
 * pattern"). Saying there is none sends them to PCRE2's interpreter, which
 * needs no such page. Everything else is PCRE2's own.
 *
 * What git starts does not inherit it: at load it takes itself out of git's
 * LD_PRELOAD, so a hook, a pager, an editor, `rebase -x` or `bisect run`
 * starts as any process of the call does (an AddressSanitizer build refuses
 * to start when a library is preloaded before its runtime). git puts its own
 * directory (/usr/lib/git-core, which has a git of its own) first on its
 * children's PATH; each exec of git's puts Chock's git first again, so a git
 * that a hook or an alias runs gets the preload too, and a git that git runs
 * itself gets it back directly. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "inside.h"

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

static const char kSelf[] = CHOCK_NOJIT_PRELOAD;
static const char kGitDir[] = CHOCK_GIT_DIR;

/* Whether `list` (LD_PRELOAD's value: names split by ':' or ' ') names this library. */
static int names_self(const char* list) {
  const size_t n = sizeof kSelf - 1;
  for (const char* p = list; *p != '\0'; ++p) {
    if ((p == list || p[-1] == ':' || p[-1] == ' ') && strncmp(p, kSelf, n) == 0 &&
        (p[n] == '\0' || p[n] == ':' || p[n] == ' '))
      return 1;
  }
  return 0;
}

/* Out of git's environment, so that its children start without it. */
__attribute__((constructor)) static void leave_the_environment(void) {
  const char* had = getenv("LD_PRELOAD");
  if (had == NULL || !names_self(had)) return;
  const size_t len = strlen(had);
  char* rest = malloc(len + 1);
  if (rest == NULL) return;
  size_t out = 0;
  for (const char* p = had; *p != '\0';) {
    const char* end = p;
    while (*end != '\0' && *end != ':' && *end != ' ') ++end;
    const size_t n = (size_t)(end - p);
    if (n > 0 && !(n == sizeof kSelf - 1 && strncmp(p, kSelf, n) == 0)) {
      if (out > 0) rest[out++] = ':';
      memcpy(rest + out, p, n);
      out += n;
    }
    p = *end == '\0' ? end : end + 1;
  }
  rest[out] = '\0';
  if (out == 0)
    unsetenv("LD_PRELOAD");
  else
    setenv("LD_PRELOAD", rest, 1);
  free(rest);
}

static int starts_with(const char* s, const char* prefix) {
  return strncmp(s, prefix, strlen(prefix)) == 0;
}

static int is_git(const char* path) {
  const char* slash = strrchr(path, '/');
  return strcmp(slash != NULL ? slash + 1 : path, "git") == 0;
}

/* git runs its children with execve after fork (run-command.c): what is done
 * here uses the stack and the system call alone. Anything too large to copy
 * is passed on as it is. */
enum { kMaxEntries = 8192, kMaxValue = 65536 };

__attribute__((visibility("default"))) int execve(const char* path, char* const argv[], char* const envp[]) {
  size_t n = 0;
  while (envp != NULL && envp[n] != NULL && n <= kMaxEntries) ++n;
  size_t path_at = n, preload_at = n;
  for (size_t i = 0; envp != NULL && i < n; ++i) {
    if (starts_with(envp[i], "PATH=")) path_at = i;
    if (starts_with(envp[i], "LD_PRELOAD=")) preload_at = i;
  }
  const size_t path_len = path_at < n ? strlen(envp[path_at]) : 0;
  const size_t preload_len = preload_at < n ? strlen(envp[preload_at]) : 0;
  if (envp == NULL || n > kMaxEntries || path_len > kMaxValue || preload_len > kMaxValue)
    return (int)syscall(SYS_execve, path, argv, envp);

  char* env[n + 2];
  for (size_t i = 0; i < n; ++i) env[i] = envp[i];
  size_t count = n;
  /* Chock's git first on PATH again. */
  char new_path[path_len + sizeof kGitDir + 2];
  if (path_at < n) {
    const char* value = envp[path_at] + 5;
    const size_t dir = sizeof kGitDir - 1;
    if (!(strncmp(value, kGitDir, dir) == 0 && (value[dir] == ':' || value[dir] == '\0'))) {
      memcpy(new_path, "PATH=", 5);
      memcpy(new_path + 5, kGitDir, dir);
      new_path[5 + dir] = ':';
      memcpy(new_path + 6 + dir, value, path_len - 5 + 1);
      env[path_at] = new_path;
    }
  }
  /* A git run directly (not through Chock's own, which names it itself)
   * gets the preload back. */
  char new_preload[preload_len + sizeof "LD_PRELOAD=" + sizeof kSelf + 2];
  const int bare_git = is_git(path) && !(starts_with(path, kGitDir) && path[sizeof kGitDir - 1] == '/' &&
                                         strcmp(path + sizeof kGitDir, "git") == 0);
  if (bare_git && (preload_at == n || !names_self(envp[preload_at] + 11))) {
    size_t at = 0;
    memcpy(new_preload, "LD_PRELOAD=", 11);
    at = 11;
    memcpy(new_preload + at, kSelf, sizeof kSelf - 1);
    at += sizeof kSelf - 1;
    if (preload_at < n && preload_len > 11) {
      new_preload[at++] = ':';
      memcpy(new_preload + at, envp[preload_at] + 11, preload_len - 11);
      at += preload_len - 11;
    }
    new_preload[at] = '\0';
    if (preload_at < n)
      env[preload_at] = new_preload;
    else
      env[count++] = new_preload;
  }
  env[count] = NULL;
  return (int)syscall(SYS_execve, path, argv, env);
}
