// The toolchain of a `chock run` call: the project's Nix dev shell where the
// project has one and Nix is installed (toolchain/nix_shell.hpp), else the
// host's /usr, /bin, /lib*, /sbin.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "chock/config.hpp"
#include "chock/error.hpp"
#include "toolchain/nix_shell.hpp"

namespace chock::session {

// nullopt: the host's toolchain. `host_only` (--host-toolchain) never asks Nix.
Expected<std::optional<toolchain::DevShell>> choose_toolchain(const std::string& project_root,
                                                              bool host_only);

// The shell's variables over the call's environment (Chock's HOME, TMPDIR and
// XDG_CACHE_HOME win), its closure as the toolchain, and /bin/sh and
// /usr/bin/env from the closure where the shell's PATH has them.
void use_dev_shell(const toolchain::DevShell& shell, Config& config);

// What the session log records of the toolchain.
nlohmann::json toolchain_json(const std::optional<toolchain::DevShell>& shell);

// "toolchain: the Nix dev shell of /p/shell.nix: 12 store paths, 3.1 MiB, evaluated in 812 ms"
std::string toolchain_line(const toolchain::DevShell& shell);

}  // namespace chock::session
