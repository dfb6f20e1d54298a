// The "toolchain" row: which toolchain this project's calls get. With Nix
// and a dev shell whose present content is allowed (toolchain.nix and the
// person's yes), the shell is asked for as `chock run` asks (so a shell that
// does not evaluate shows here), and the row gives its closure, how long its
// evaluation took and where the answer is kept. Content nobody allowed is
// never evaluated here either: the row says so and how to allow it.
#include "doctor/probes.hpp"
#include "session/toolchain_choice.hpp"
#include "toolchain/consent.hpp"
#include "toolchain/nix_shell.hpp"
#include "util/escape.hpp"
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

Row toolchain_row(const std::string& project_root, const policy::Answer& nix_rule) {
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
  const std::string host =
      "the host's /usr, /bin, /lib and /sbin: the Nix dev shell of " + printable(file->path);
  if (nix_rule.decision == policy::Decision::deny)
    return make_row(
        name, Level::ok, false,
        host + " is never evaluated: toolchain.nix is " + session::nix_rule_words(nix_rule) + "; " + found);
  auto state = toolchain::consent_of(project_root, *file);
  if (!state) return make_row(name, Level::degraded, false, state.error().message() + "; " + found);
  const bool allowed = state->consent == toolchain::Consent::allowed;
  if (!allowed && !session::bundle_vouches(nix_rule))
    return make_row(name, Level::ok, false,
                    host + " is not evaluated: its content (sha256 " + state->sha256.substr(0, 16) +
                        "...) is " + toolchain::consent_name(state->consent) +
                        "; a call at a terminal asks, or `" + toolchain::allow_command(project_root) +
                        "` allows it; " + found);
  auto shell = toolchain::dev_shell(project_root, state->sha256);
  if (!shell) return make_row(name, Level::degraded, false, shell.error().message() + "; " + found);
  const toolchain::DevShell& s = **shell;
  char ms[32];
  std::snprintf(ms, sizeof ms, "%.0f", s.evaluation_ms);
  return make_row(name, Level::ok, false,
                  "the Nix dev shell of " + s.source +
                      (allowed ? " (its content allowed)" : " (the bundle allows it)") + ": " +
                      std::to_string(s.store_paths.size()) + " store paths, " + human_size(s.bytes) +
                      ", each at its own path and nothing else of "
                      "/nix; evaluated in " +
                      ms + " ms" + (s.from_cache ? " (an earlier call)" : " (now)") + "; kept in " +
                      s.cache_file + "; " + found);
}

}  // namespace chock::doctor
