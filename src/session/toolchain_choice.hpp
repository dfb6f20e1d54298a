// The toolchain of a `chock run` call: the project's Nix dev shell where the
// project has one, Nix is installed and the person allowed the shell's
// present content (toolchain/consent.hpp), else the host's /usr, /bin,
// /lib*, /sbin.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "chock/config.hpp"
#include "chock/error.hpp"
#include "chock/session.hpp"
#include "policy/policy.hpp"
#include "toolchain/nix_shell.hpp"

namespace chock::session {

// What decides whether the dev shell may be evaluated.
struct ToolchainGate {
  bool host_only = false;                       // --host-toolchain: Nix is never asked
  const policy::Table* table = nullptr;         // for toolchain.nix; null: it asks
  Hooks::Ask ask;                               // the person, where one can answer
  int cancel_fd = -1;                           // readable: the call is ending, the answer no
  std::function<void(const std::string&)> say;  // the one line saying why the host's toolchain runs
  bool evaluate = true;  // false: ask (and keep the answer) only; a task's runner evaluates
};

// nullopt: the host's toolchain.
Expected<std::optional<toolchain::DevShell>> choose_toolchain(const std::string& project_root,
                                                              const ToolchainGate& gate);

// How toolchain.nix answers, in words: "deny (the bundle rule ... at b.zon:3:9)".
std::string nix_rule_words(const policy::Answer& answer);

// True when `answer` lets the shell be evaluated without a per-content yes:
// allow, from a rule of the organisation bundle itself.
bool bundle_vouches(const policy::Answer& answer);

// The shell's variables over the call's environment (Chock's HOME, TMPDIR and
// XDG_CACHE_HOME win), its closure as the toolchain, and /bin/sh and
// /usr/bin/env from the closure where the shell's PATH has them.
void use_dev_shell(const toolchain::DevShell& shell, Config& config);

// What the session log records of the toolchain.
nlohmann::json toolchain_json(const std::optional<toolchain::DevShell>& shell);

// "toolchain: the Nix dev shell of /p/shell.nix: 12 store paths, 3.1 MiB, evaluated in 812 ms"
std::string toolchain_line(const toolchain::DevShell& shell);

}  // namespace chock::session
