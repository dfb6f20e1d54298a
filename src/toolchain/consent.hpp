// Whether the person allowed a project's Nix dev shell to be evaluated, as
// direnv's `allow` works: evaluating shell.nix or flake.nix runs the
// project's Nix code on the host as the caller (builtins.readFile of any
// file the caller can read, builds whose builders run outside any sandbox),
// so it happens only for content the person said yes to. What was said is
// kept per project in Chock's data directory, which no call's mount names:
// the project's real path and the SHA-256 of the bytes that define the shell
// (shell.nix, or flake.nix and flake.lock). Other content asks again.
#pragma once

#include <string>

#include "chock/error.hpp"
#include "toolchain/nix_shell.hpp"

namespace chock::toolchain {

enum class Consent {
  never_asked,  // nothing was said about this project's shell
  allowed,      // this content was allowed
  denied,       // this content was denied (`chock toolchain deny`)
  changed,      // something was said, about other content
};
[[nodiscard]] const char* consent_name(Consent consent);  // "allowed", "denied", ...

struct ConsentState {
  Consent consent = Consent::never_asked;
  std::string sha256;  // the content's present hash
  std::string record;  // the file the decision is kept in
};

// What the person said about the present content of `file`, the dev shell
// of the project at `project_root` (a real path, as project_root() gives it).
[[nodiscard]] Expected<ConsentState> consent_of(const std::string& project_root, const DevShellFile& file);

// Keeps `allowed` (else denied) for the content whose hash is `sha256`.
[[nodiscard]] Expected<void> record_consent(const std::string& project_root, const DevShellFile& file,
                                            const std::string& sha256, bool allowed);

// "chock toolchain allow --project '/p'": the command a line names.
[[nodiscard]] std::string allow_command(const std::string& project_root);

}  // namespace chock::toolchain
