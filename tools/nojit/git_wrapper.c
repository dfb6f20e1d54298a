/* Chock's git: /run/chock/bin/git, first on the PATH of a call in a git
 * workspace under write-xor-execute. It runs the first other git on that
 * PATH with PCRE2's no-JIT preload (pcre2_nojit.c) in LD_PRELOAD, for that
 * git alone: the call's other processes start without it, so an
 * AddressSanitizer build (which refuses to start when a library is preloaded
 * before its runtime) works beside git grep. The preload takes itself out
 * of git's environment again, so nothing git starts inherits it either. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "inside.h"

/* LD_PRELOAD for the real git: the preload first, then whatever the call had. */
static int name_preload(void) {
  const char* had = getenv("LD_PRELOAD");
  if (had == NULL || *had == '\0') return setenv("LD_PRELOAD", CHOCK_NOJIT_PRELOAD, 1);
  const size_t ours = strlen(CHOCK_NOJIT_PRELOAD);
  if (strncmp(had, CHOCK_NOJIT_PRELOAD, ours) == 0 && (had[ours] == '\0' || had[ours] == ':'))
    return 0; /* a git that git ran: named already */
  char* both = NULL;
  if (asprintf(&both, "%s:%s", CHOCK_NOJIT_PRELOAD, had) < 0) return -1;
  return setenv("LD_PRELOAD", both, 1);
}

int main(int argc, char** argv) {
  (void)argc;
  /* This program may be on PATH twice (a git that git runs sees it first
   * again): any entry that is this very file is passed over. */
  struct stat self;
  if (stat("/proc/self/exe", &self) != 0) memset(&self, 0, sizeof self);
  const char* path = getenv("PATH");
  if (path == NULL || *path == '\0') path = "/usr/local/bin:/usr/bin:/bin";
  if (name_preload() != 0) {
    fprintf(stderr, "chock: git: could not set LD_PRELOAD for git: %s\n", strerror(errno));
    return 126;
  }
  int saved = ENOENT;
  for (const char* p = path;; ++p) {
    const char* end = strchrnul(p, ':');
    const int len = (int)(end - p);
    char candidate[4096];
    /* An empty entry is the current directory, as execvp reads it. */
    const int ours = len == (int)strlen(CHOCK_GIT_DIR) && strncmp(p, CHOCK_GIT_DIR, (size_t)len) == 0;
    if (!ours && snprintf(candidate, sizeof candidate, "%.*s/git", len == 0 ? 1 : len, len == 0 ? "." : p) <
                     (int)sizeof candidate) {
      struct stat st;
      if (stat(candidate, &st) == 0 && S_ISREG(st.st_mode) &&
          !(st.st_dev == self.st_dev && st.st_ino == self.st_ino)) {
        execv(candidate, argv);
        if (errno == EACCES)
          saved = EACCES;
        else if (errno != ENOENT && errno != ENOTDIR) {
          saved = errno;
          break;
        }
      }
    }
    if (*end == '\0') break;
    p = end;
  }
  fprintf(stderr, "chock: git: no git to run on the call's PATH past Chock's own (" CHOCK_GIT "): %s\n",
          strerror(saved));
  return saved == ENOENT ? 127 : 126;
}
