// Host-side git. Every run has GIT_CONFIG_GLOBAL=/dev/null,
// GIT_CONFIG_SYSTEM=/dev/null, GIT_TERMINAL_PROMPT=0 and LC_ALL=C, and none
// of the caller's own GIT_* variables: what git does here depends on the
// repository and on the arguments, not on who runs Chock.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "chock/error.hpp"
#include "util/subprocess.hpp"

namespace chock::workspace::git {

struct Output {
  int status = -1;  // exit code; 128+N for signal N
  std::string out;
  std::string err;
  [[nodiscard]] bool ok() const { return status == 0; }
  // The first line of stderr, for an error message.
  [[nodiscard]] std::string first_error_line() const;
};

struct Env {
  std::vector<std::pair<std::string, std::string>> vars;  // added to the fixed set
  std::string cwd;                                        // empty: the current directory
  std::string stdin_data;
  // A git that has not ended by then is killed (its whole process group) and
  // the run is an Error that says so: nothing a call left behind may hang
  // the host side.
  std::chrono::seconds deadline{kDeadline};
  static constexpr int kDeadline = 300;
  std::optional<RunAs> as;  // a root caller's checkout, as the uid calls run as
};

// Runs `git ARGS...`; an Error when git could not be started or passed its deadline.
Expected<Output> run(const std::vector<std::string>& args, const Env& env = {});
// Runs git and turns a non-zero exit into an Error naming `what`.
Expected<std::string> capture(const std::vector<std::string>& args, const Env& env, const std::string& what);

// The environment that points git at the real repository (common dir
// `common`) with a work tree and index of our choosing. The session's
// objects, when given, are searched first and the real ones are the alternate.
Env repo_env(const std::string& common, const std::string& work_tree = {}, const std::string& index = {},
             const std::string& session_objects = {});

// Trims one trailing newline.
std::string chomp(std::string s);
// Splits on a separator, dropping a trailing empty piece.
std::vector<std::string> split(const std::string& s, char sep);
// True for 40 or 64 lowercase hex digits.
bool is_object_id(const std::string& s);

}  // namespace chock::workspace::git
