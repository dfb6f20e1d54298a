// filter-exec [--allow-jit] -- PROGRAM [ARGS...]
// Installs Chock's seccomp filter the way the sandbox's child does (NO_NEW_PRIVS,
// a fresh session keyring, the filter) and execs PROGRAM, with no other layer.
// The escape suite uses it to prove the filter on its own.
//
// filter-exec --hide-landlock -- PROGRAM [ARGS...]
// Instead makes landlock_create_ruleset answer ENOSYS, as on a kernel without
// Landlock, and execs PROGRAM (chock itself) with nothing else changed.
//
// filter-exec --hide-clone3 -- PROGRAM [ARGS...]
// The same for clone3, as on a kernel before 5.3 or under a container
// runtime's filter that does not know it.
#include <seccomp.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

#include "chock/error.hpp"
#include "sandbox/seccomp.hpp"

namespace {

int hide_and_exec(int syscall_number, char** command) {
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (ctx == nullptr || seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), syscall_number, 0) != 0 ||
      seccomp_load(ctx) != 0) {
    std::fprintf(stderr, "filter-exec: could not hide system call %d\n", syscall_number);
    return 125;
  }
  seccomp_release(ctx);
  execv(command[0], command);
  std::fprintf(stderr, "filter-exec: exec %s: %s\n", command[0], chock::errno_name(errno));
  return 127;
}

}  // namespace

int main(int argc, char** argv) {
  bool allow_jit = false;
  int first = 1;
  for (const auto& [flag, number] : {std::pair{"--hide-landlock", SCMP_SYS(landlock_create_ruleset)},
                                     std::pair{"--hide-clone3", SCMP_SYS(clone3)}}) {
    if (first < argc && std::strcmp(argv[first], flag) == 0) {
      ++first;
      if (first < argc && std::strcmp(argv[first], "--") == 0) ++first;
      if (first >= argc) return 125;
      return hide_and_exec(number, argv + first);
    }
  }
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
