// A host program run to its end: its output and error output read while its
// input is fed, within a deadline after which its whole process group is
// killed, so nothing it started can hang the host side.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "chock/error.hpp"

namespace chock {

struct ProgramRun {
  std::vector<std::string> argv;  // argv[0] is looked up on PATH
  std::vector<std::string> env;   // "K=V", the whole environment
  std::string cwd;                // empty: the current directory
  std::string stdin_data;
  std::chrono::seconds deadline{300};
};

struct ProgramOutput {
  int status = -1;  // exit code; 128+N for signal N
  std::string out;
  std::string err;
};

// This process's own environment, as "K=V" entries.
std::vector<std::string> current_environment();

// An Error when the program could not be started or passed its deadline
// ("NAME SUBCOMMAND did not finish within N s and was stopped", ETIMEDOUT).
Expected<ProgramOutput> run_program(const ProgramRun& run);

}  // namespace chock
