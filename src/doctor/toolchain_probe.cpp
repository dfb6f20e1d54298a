// The "toolchain" row: which toolchain this project's calls get. With Nix
// and a dev shell, the shell is asked for as `chock run` asks (so a shell
// that does not evaluate shows here), and the row gives its closure, how
// long its evaluation took and where the answer is kept.
#include "doctor/probes.hpp"
#include "toolchain/nix_shell.hpp"
#include "util/subprocess.hpp"

namespace chock::doctor {

namespace {

std::string nix_version(const std::string& nix) {
  auto r = run_program(
      ProgramRun{{nix, "--version"}, current_environment(), {}, {}, std::chrono::seconds(30), {}});
  if (!r || r->status != 0) return nix;
  std::string v = r->out.substr(0, r->out.find('\n'));
  return v + " (" + nix + ")";
}

}  // namespace

Row toolchain_row(const std::string& project_root) {
  const char* name = "toolchain";
  const std::string nix = toolchain::find_nix();
  const std::string found = nix.empty() ? std::string("Nix is not installed") : nix_version(nix);
  auto file = toolchain::find_dev_shell(project_root);
  if (!file)
    return make_row(name, Level::ok, false,
                    "the host's /usr, /bin, /lib and /sbin: " + project_root +
                        " has no flake.nix or shell.nix; " + found);
  if (nix.empty())
    return make_row(name, Level::degraded, false,
                    "the host's /usr, /bin, /lib and /sbin, although " + file->path +
                        " defines a Nix dev shell: Nix is not installed (Debian: apt install nix-bin)");
  auto shell = toolchain::dev_shell(project_root);
  if (!shell) return make_row(name, Level::degraded, false, shell.error().message() + "; " + found);
  const toolchain::DevShell& s = **shell;
  char ms[32];
  std::snprintf(ms, sizeof ms, "%.0f", s.evaluation_ms);
  return make_row(name, Level::ok, false,
                  "the Nix dev shell of " + s.source + ": " + std::to_string(s.store_paths.size()) +
                      " store paths, " + human_size(s.bytes) +
                      ", each at its own path and nothing else of "
                      "/nix; evaluated in " +
                      ms + " ms" + (s.from_cache ? " (an earlier call)" : " (now)") + "; kept in " +
                      s.cache_file + "; " + found);
}

}  // namespace chock::doctor
