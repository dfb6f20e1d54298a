// A host program run to its end: its output and error output read while its
// input is fed, within a deadline after which its whole process group is
// killed, so nothing it started can hang the host side.
#pragma once

#include <linux/filter.h>
#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "chock/error.hpp"

namespace chock {

// Who a program started by root runs as: the effective (and file system)
// uid and gid given, no supplementary groups, and of all capabilities only
// CAP_DAC_READ_SEARCH (ambient, so it survives exec): it reads what root can
// read and writes what it makes as that uid, never needing a chown. The real
// uid stays root's, because access(2) checks as the real uid with no
// capability for any other (git asks it whether a repository is one, and
// whether to read its config); SECBIT_NOROOT makes it grant nothing at exec,
// and `keep_uid`, a seccomp filter refusing every change of uid (installed
// last, with no_new_privs), keeps the program and all it starts (a shell
// would go back to its real uid) from taking it as its effective uid.
struct RunAs {
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<sock_filter> keep_uid;  // required: run_program refuses an empty one
};

struct ProgramRun {
  std::vector<std::string> argv;  // argv[0] is looked up on PATH
  std::vector<std::string> env;   // "K=V", the whole environment
  std::string cwd;                // empty: the current directory
  std::string stdin_data;
  std::chrono::seconds deadline{300};
  std::optional<RunAs> as;  // unset: as this process
};

struct ProgramOutput {
  int status = -1;  // exit code; 128+N for signal N
  std::string out;
  std::string err;
};

// The first regular, executable `name` in an absolute directory of this
// process's PATH ("/usr/bin:/bin" when unset); "" when there is none.
std::string find_on_path(const std::string& name);

// This process's own environment, as "K=V" entries.
std::vector<std::string> current_environment();

// An Error when the program could not be started (with `as`, also when this
// process cannot give it those credentials: EPERM) or passed its deadline
// ("NAME SUBCOMMAND did not finish within N s and was stopped", ETIMEDOUT).
Expected<ProgramOutput> run_program(const ProgramRun& run);

}  // namespace chock
