// chock toolchain allow|deny|status [--project DIR]: whether the project's
// Nix dev shell may be evaluated on this host (toolchain/consent.hpp), as
// direnv's allow and deny say it of an .envrc.
#include <cstdio>
#include <memory>
#include <string>

#include "chock/workspace.hpp"
#include "cli/command.hpp"
#include "cli/layer_flags.hpp"
#include "session/toolchain_choice.hpp"
#include "toolchain/consent.hpp"
#include "util/escape.hpp"

namespace chock::cli {

namespace {

enum class Verb { allow, deny, status };

struct ToolchainOptions {
  std::string project;
  config::LayerOptions layers;
};

int fail(const Error& e) {
  std::fprintf(stderr, "chock: %s\n", e.message().c_str());
  return exit_status_for(e, 2);
}

int run(Verb verb, const ToolchainOptions& o) {
  auto root = workspace::project_root(o.project.empty() ? "." : o.project);
  if (!root) return fail(root.error());
  auto file = toolchain::find_dev_shell(*root);
  if (!file) {
    std::fprintf(stderr, "chock: %s has no flake.nix or shell.nix: there is no Nix dev shell to %s\n",
                 printable(*root).c_str(),
                 verb == Verb::status  ? "show"
                 : verb == Verb::allow ? "allow"
                                       : "deny");
    return verb == Verb::status ? 0 : 2;
  }
  auto state = toolchain::consent_of(*root, *file);
  if (!state) return fail(state.error());
  const std::string what = printable(file->path) +
                           (file->kind == toolchain::DevShellFile::Kind::flake ? " and flake.lock" : "") +
                           " (sha256 " + state->sha256 + ")";
  config::LayerOptions layer_options = o.layers;
  layer_options.project_dir = *root;
  auto layers = config::load_layers(layer_options);
  if (!layers) return fail(layers.error());
  const policy::Answer rule = layers->table.decide(policy::kToolchainNix);
  const bool never = rule.decision == policy::Decision::deny;
  const std::string never_words =
      "; but toolchain.nix is " + session::nix_rule_words(rule) + ", so it is never evaluated";
  if (verb == Verb::allow) {
    if (auto kept = toolchain::record_consent(*root, *file, state->sha256, true); !kept)
      return fail(kept.error());
    std::printf(
        "chock: allowed the Nix dev shell %s: calls in %s evaluate it on this host until it changes%s\n",
        what.c_str(), printable(*root).c_str(), never ? never_words.c_str() : "");
    return 0;
  }
  if (verb == Verb::deny) {
    if (auto kept = toolchain::record_consent(*root, *file, state->sha256, false); !kept)
      return fail(kept.error());
    // Its kept answer goes too: a call does not use what it no longer may make.
    if (auto forgot = toolchain::forget_dev_shell(*root); !forgot) return fail(forgot.error());
    std::printf("chock: denied the Nix dev shell %s: calls in %s run on the host's toolchain\n", what.c_str(),
                printable(*root).c_str());
    return 0;
  }
  const bool vouched = session::bundle_vouches(rule);
  const bool used = !never && (vouched || state->consent == toolchain::Consent::allowed);
  std::printf("%s: %s; toolchain.nix is %s\n", what.c_str(), toolchain::consent_name(state->consent),
              session::nix_rule_words(rule).c_str());
  if (used)
    std::printf("calls evaluate it on this host%s\n",
                vouched ? " (the organisation bundle allows every one)" : "");
  else if (never)
    std::printf("calls run on the host's toolchain: it is never evaluated\n");
  else if (state->consent == toolchain::Consent::denied)
    std::printf("calls run on the host's toolchain and nobody is asked; `%s` allows it\n",
                toolchain::allow_command(*root).c_str());
  else
    std::printf("calls run on the host's toolchain, or ask at a terminal; `%s` allows it\n",
                toolchain::allow_command(*root).c_str());
  return 0;
}

}  // namespace

void add_toolchain_command(Command app, Action& action) {
  auto o = std::make_shared<ToolchainOptions>();
  Command cmd = app.add_subcommand(
      "toolchain", "Whether the project's Nix dev shell may be evaluated on this host (as direnv allow)");
  cmd.require_subcommand(1);
  const std::pair<const char*, const char*> verbs[] = {
      {"allow", "Allow the present content of shell.nix (or flake.nix and flake.lock): calls evaluate it"},
      {"deny", "Deny the present content: calls run on the host's toolchain and nobody is asked"},
      {"status", "Say whether the present content is allowed, and what a call does"}};
  for (const auto& [name, help] : verbs) {
    Command sub = cmd.add_subcommand(name, help);
    sub.add_option("--project", o->project, "The project (default: the current directory)");
    add_layer_flags(sub, o->layers);
    const Verb verb = std::string(name) == "allow"  ? Verb::allow
                      : std::string(name) == "deny" ? Verb::deny
                                                    : Verb::status;
    sub.callback([o, verb, &action] { action = [o, verb] { return run(verb, *o); }; });
  }
}

}  // namespace chock::cli
