// A project's Nix dev shell as the toolchain of its calls. Nix is asked on
// the host side, never inside a call, and only about the real project's own
// files (a session's copy of shell.nix is never evaluated): `nix
// print-dev-env --json --profile` gives the shell's variables and, through
// the profile, a garbage-collector root whose closure (`nix-store -qR`) is
// every store path those variables reach. The answer is kept per project and
// per hash of the files that define the shell.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "chock/error.hpp"

namespace chock::toolchain {

struct DevShellFile {
  enum class Kind { flake, shell_nix };
  Kind kind = Kind::shell_nix;
  std::string path;  // the project's flake.nix or shell.nix
};

// flake.nix, else shell.nix, at the project's top; nullopt when neither is there.
std::optional<DevShellFile> find_dev_shell(const std::string& project_root);

// The `nix` program on this process's PATH; empty when Nix is not installed.
std::string find_nix();

struct DevShell {
  std::string source;                    // the project file it came from
  std::vector<std::string> store_paths;  // the closure, each "/nix/store/<hash>-<name>"
  // The exported variables as the shell sets them, PATH among them; the
  // build's own (HOME, TMPDIR, NIX_BUILD_TOP, ...) left out.
  std::vector<std::pair<std::string, std::string>> variables;
  std::uint64_t bytes = 0;    // the closure's size in the store (NAR bytes)
  double evaluation_ms = 0;   // how long the evaluation that made the answer took
  std::string cache_file;     // where the answer is kept
  bool from_cache = false;    // true: Nix was not run for this call
  std::string shell_program;  // a closure file that serves as /bin/sh ("" when none)
  std::string env_program;    // and as /usr/bin/env
};

// The SHA-256 (hex) of what defines the shell: of shell.nix (as sha256sum
// says it), or of "flake.nix <its sha256>\nflake.lock <its sha256 or none>\n".
// What the person allows (toolchain/consent.hpp), and the key the shell's
// answer is kept under.
std::string content_sha256(const DevShellFile& file);

// The project's dev shell: from the cache when the files that define it are
// unchanged, else evaluated (and built) by Nix now. nullopt when the project
// has no dev shell file or Nix is not installed. `allowed_sha256` is the
// content the person allowed: anything else (the file changed since) is an
// Error and Nix is not run. An evaluation that fails is an Error naming the
// file and Nix's own message.
Expected<std::optional<DevShell>> dev_shell(const std::string& project_root,
                                            const std::string& allowed_sha256);

// Forgets the kept answers of the project's dev shell (and lets go of their
// store paths for Nix's garbage collector): the next call asks Nix again.
// False when there was nothing kept.
Expected<bool> forget_dev_shell(const std::string& project_root);

// The call's environment with the shell's variables set over the caller's;
// the names in `keep` (Chock's own: HOME, TMPDIR, ...) are left as they are.
void apply_variables(const DevShell& shell, std::vector<std::string>& env,
                     const std::vector<std::string>& keep);

}  // namespace chock::toolchain
