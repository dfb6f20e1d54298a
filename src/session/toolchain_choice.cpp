#include "session/toolchain_choice.hpp"

#include <cstdio>

#include "util/size.hpp"

namespace chock::session {

Expected<std::optional<toolchain::DevShell>> choose_toolchain(const std::string& project_root,
                                                              bool host_only) {
  if (host_only) return std::optional<toolchain::DevShell>();
  return toolchain::dev_shell(project_root);
}

void use_dev_shell(const toolchain::DevShell& shell, Config& config) {
  if (!config.env) config.env.emplace();
  toolchain::apply_variables(shell, *config.env, {"HOME", "TMPDIR", "XDG_CACHE_HOME"});
  config.store_paths = shell.store_paths;
  // Where system(3), make and `#!/usr/bin/env` scripts look; Nix's own build
  // sandbox has a /bin/sh too.
  if (!shell.shell_program.empty())
    config.binds.push_back(Bind{shell.shell_program, "/bin/sh", Access::read_only_file});
  if (!shell.env_program.empty())
    config.binds.push_back(Bind{shell.env_program, "/usr/bin/env", Access::read_only_file});
}

nlohmann::json toolchain_json(const std::optional<toolchain::DevShell>& shell) {
  if (!shell) return {{"kind", "host"}};
  return {{"kind", "nix"},
          {"source", shell->source},
          {"store_paths", shell->store_paths.size()},
          {"bytes", shell->bytes},
          {"cached", shell->from_cache}};
}

std::string toolchain_line(const toolchain::DevShell& shell) {
  char ms[32];
  std::snprintf(ms, sizeof ms, "%.0f", shell.evaluation_ms);
  return "toolchain: the Nix dev shell of " + shell.source + ": " + std::to_string(shell.store_paths.size()) +
         " store paths, " + human_size(shell.bytes) + ", evaluated in " + ms + " ms (kept in " +
         shell.cache_file + " until the file changes)";
}

}  // namespace chock::session
