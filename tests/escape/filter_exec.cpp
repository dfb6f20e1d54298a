// filter-exec [--allow-jit] -- PROGRAM [ARGS...]
// Installs Chock's seccomp filter the way the sandbox's child does (NO_NEW_PRIVS,
// a fresh session keyring, the filter) and execs PROGRAM, with no other layer.
// The escape suite uses it to prove the filter on its own.
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "chock/error.hpp"
#include "sandbox/seccomp.hpp"

int main(int argc, char** argv) {
  bool allow_jit = false;
  int first = 1;
  if (first < argc && std::strcmp(argv[first], "--allow-jit") == 0) {
    allow_jit = true;
    ++first;
  }
  if (first < argc && std::strcmp(argv[first], "--") == 0) ++first;
  if (first >= argc) {
    std::fprintf(stderr, "usage: filter-exec [--allow-jit] -- PROGRAM [ARGS...]\n");
    return 125;
  }
  auto program = chock::seccomp::build(allow_jit);
  if (!program) {
    std::fprintf(stderr, "filter-exec: %s\n", program.error().message().c_str());
    return 125;
  }
  int error = 0;
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    std::perror("filter-exec: PR_SET_NO_NEW_PRIVS");
    return 125;
  }
  if (!chock::seccomp::join_fresh_session_keyring(&error)) {
    std::fprintf(stderr, "filter-exec: keyctl(JOIN_SESSION_KEYRING): %s\n", chock::errno_name(error));
    return 125;
  }
  if (!chock::seccomp::install(*program, &error)) {
    std::fprintf(stderr, "filter-exec: seccomp: %s\n", chock::errno_name(error));
    return 125;
  }
  execv(argv[first], argv + first);
  std::fprintf(stderr, "filter-exec: exec %s: %s\n", argv[first], chock::errno_name(errno));
  return 127;
}
