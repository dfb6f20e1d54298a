// Real git repositories and `chock` runs for the workspace tests: every test
// gets its own project and its own data directory.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "process.hpp"

namespace chock::test::ws {

// git with no global or system config and a fixed identity for the test's own commits.
Output git(const std::string& dir, const std::vector<std::string>& args, const std::string& stdin_data = {});
// git that must succeed; its stdout without the trailing newline.
std::string git_ok(const std::string& dir, const std::vector<std::string>& args);

// A project and a data directory under one TempDir.
class Fixture {
 public:
  Fixture();
  [[nodiscard]] const std::string& project() const { return project_; }
  [[nodiscard]] const std::string& data() const { return data_; }
  // XDG_STATE_HOME (session logs) and XDG_CONFIG_HOME (the operator's file) of the runs.
  [[nodiscard]] const std::string& state() const { return state_; }
  [[nodiscard]] const std::string& config() const { return config_; }
  // XDG_CACHE_HOME of the runs: where the project's toolchain cache is.
  [[nodiscard]] const std::string& cache() const { return cache_; }
  [[nodiscard]] std::string file(const std::string& rel) const { return project_ + "/" + rel; }
  // A git repository on `main` with a.txt, b.txt and sub/c.txt committed.
  void init_git();
  // Plain files a.txt, b.txt and sub/c.txt, no git.
  void init_plain();
  void commit_all(const std::string& message);
  // How this fixture runs chock: from the project, with its own XDG directories.
  [[nodiscard]] RunOptions options() const;
  // `chock ARGS...` from the project, with this fixture's data directory.
  Output chock(const std::vector<std::string>& args, const std::string& stdin_data = {}) const;
  // `chock ARGS...` on a terminal of its own (script(1) makes a pty), `typed` fed to it.
  Output on_terminal(const std::vector<std::string>& args, const std::string& typed) const;
  // `chock run [FLAGS...] -- sh -c SCRIPT`
  Output run(const std::vector<std::string>& flags, const std::string& script) const;
  // An environment variable of every later run of chock.
  void set_env(const std::string& name, const std::string& value) { env_[name] = value; }
  // Every session directory lives here.
  [[nodiscard]] std::string sessions() const { return data_ + "/chock/workspaces"; }

 private:
  TempDir dir_;
  std::string project_;
  std::string data_;
  std::string state_;
  std::string config_;
  std::string cache_;
  std::map<std::string, std::string> env_;
};

// The id in "chock: session ID (...)", or "" when it was not printed.
std::string session_id(const Output& o);
// A session kept for more calls (`run --keep`), its first call `script`; its id.
std::string kept_session(const Fixture& f, const std::string& script = "true");
// Every regular file below `dir` whose bytes contain `needle` (links not followed).
std::vector<std::string> files_containing(const std::string& dir, const std::string& needle);
// Path -> bytes of every regular file below `dir` and the target of every link.
std::map<std::string, std::string> snapshot(const std::string& dir);
std::string describe(const Output& o);
// The session's log file ("" when there is none) and its lines.
std::string log_path(const Fixture& f, const std::string& id);
std::vector<std::string> log_lines(const Fixture& f, const std::string& id);
// Whether a line of `lines` is the event `event` and contains `also`.
bool has_event(const std::vector<std::string>& lines, const std::string& event, const std::string& also);

}  // namespace chock::test::ws
