// chock cache path|clear [--project DIR]: the project's toolchain cache
// (/run/chock/cache in its calls, $XDG_CACHE_HOME/chock/<project>/ here).
#include <cstdio>
#include <memory>
#include <string>

#include "chock/workspace.hpp"
#include "cli/command.hpp"
#include "sandbox/directory_cap.hpp"
#include "toolchain/nix_shell.hpp"
#include "util/size.hpp"

namespace chock::cli {

namespace {

Expected<std::string> project_cache(const std::string& dir) {
  auto root = workspace::project_root(dir.empty() ? "." : dir);
  if (!root) return root;
  return workspace::cache_dir(*root);
}

int fail(const Error& e) {
  std::fprintf(stderr, "chock: %s\n", e.message().c_str());
  return exit_status_for(e, 2);
}

int show(const std::string& dir) {
  auto cache = project_cache(dir);
  if (!cache) return fail(cache.error());
  std::printf("%s (%s)\n", cache->c_str(), format_size(sandbox::directory_bytes(*cache)).c_str());
  return 0;
}

int clear(const std::string& dir) {
  auto root = workspace::project_root(dir.empty() ? "." : dir);
  if (!root) return fail(root.error());
  auto cleared = workspace::clear_cache(*root);
  if (!cleared) return fail(cleared.error());
  std::printf(*cleared ? "chock: the toolchain cache of %s is cleared\n"
                       : "chock: %s has no toolchain cache to clear\n",
              root->c_str());
  auto forgot = toolchain::forget_dev_shell(*root);
  if (!forgot) return fail(forgot.error());
  if (*forgot) std::printf("chock: its Nix dev shell will be evaluated again on the next call\n");
  return 0;
}

}  // namespace

void add_cache_command(Command app, Action& action) {
  auto project = std::make_shared<std::string>();
  Command cmd = app.add_subcommand("cache", "The project's toolchain cache (/run/chock/cache in its calls)");
  cmd.require_subcommand(1);
  Command path = cmd.add_subcommand("path", "Print where the cache is, and its size");
  path.add_option("--project", *project, "The project (default: the current directory)");
  path.callback([project, &action] { action = [project] { return show(*project); }; });
  Command c = cmd.add_subcommand(
      "clear",
      "Remove everything in the project's toolchain cache, and the kept answer of its Nix dev shell");
  c.add_option("--project", *project, "The project (default: the current directory)");
  c.callback([project, &action] { action = [project] { return clear(*project); }; });
}

}  // namespace chock::cli
