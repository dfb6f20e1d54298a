// Test support: run programs (chock itself, attack programs, git) and look
// at what they printed and how they ended.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace chock::test {

struct Output {
  int status = -1;  // as a shell reports it: the exit code, or 128+N for signal N
  std::optional<int> signal;
  std::string out;
  std::string err;
  bool timed_out = false;
  double seconds_after_signal = -1;  // RunOptions::signal: from sending it to the process's end
};

struct RunOptions {
  std::string stdin_data;
  std::map<std::string, std::string> env;  // added to (or replacing in) the environment
  std::vector<std::string> unset_env;
  std::string cwd;
  std::chrono::milliseconds timeout{60000};
  std::vector<int> keep_fds;  // descriptors to leave open in the child (tests of fd hygiene)
  int signal = 0;             // sent to the process `signal_after` its start, when not 0
  std::chrono::milliseconds signal_after{0};
};

Output run_process(const std::vector<std::string>& argv, const RunOptions& options = {});
// This process's environment with `options`' changes: what run_process passes.
std::vector<std::string> merged_environment(const RunOptions& options);

// Where the built binaries are: $CHOCK_STAGE, else the build's stage directory.
std::string stage_dir();
std::string chock_binary();
// A helper program built for the tests (e.g. "attack").
std::string program(const std::string& name);

// `chock ARGS...`
Output chock(const std::vector<std::string>& args, const RunOptions& options = {});

bool running_as_root();

// Why a root caller's project in `dir` cannot be an idmapped overlay layer
// here, told apart from Chock: a kernel before 6.15 (the first to take a
// detached mount as an overlay layer), or a file system not known to take
// idmapped mounts. Empty when it can, and Chock must then not copy it.
std::string why_no_idmapped_layer(const std::string& dir);

// A fresh directory under $TMPDIR (or /tmp), removed with everything in it.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "chock-test");
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir();
  [[nodiscard]] const std::string& path() const { return path_; }
  [[nodiscard]] std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

void write_file(const std::string& path, const std::string& content, int mode = 0644);
std::string read_file(const std::string& path);
bool exists(const std::string& path);
// Removes a tree, making directories writable first (sandboxed runs leave read-only ones).
void remove_tree(const std::string& path);

// `argv` where /etc/hostname, /etc/hosts and /etc/resolv.conf (those there)
// are each a file bind-mounted over the host's, as Docker and Podman mount
// them: copies of the host's (hosts and resolv.conf) and a hostname of
// "chock-container", kept in `dir`. In a mount namespace of its own: as root
// `unshare -m`; as anyone else a user and mount namespace (root in it, to
// mount), then a user namespace that maps the caller's own ids back, so
// `argv` runs as the caller.
std::vector<std::string> with_files_mounted_in_etc(const std::string& dir,
                                                   const std::vector<std::string>& argv);

}  // namespace chock::test
