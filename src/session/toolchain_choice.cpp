#include "session/toolchain_choice.hpp"

#include <cstdio>

#include "toolchain/consent.hpp"
#include "util/escape.hpp"
#include "util/size.hpp"

namespace chock::session {

namespace {

std::string layer_rule(const policy::Answer::LayerAnswer& l) {
  if (!l.rule) return "no rule names it";
  return std::string("the ") + policy::layer_name(l.layer) + " rule " + l.rule->action + " = " +
         policy::decision_name(l.rule->decision) + " at " + l.rule->origin;
}

// "shell.nix (sha256 0123456789abcdef...)": which content a line is about.
std::string content_words(const toolchain::DevShellFile& file, const std::string& sha256) {
  const std::string what = file.kind == toolchain::DevShellFile::Kind::flake ? " and flake.lock" : "";
  return printable(file.path) + what + " (sha256 " + sha256.substr(0, 16) + "...)";
}

}  // namespace

std::string nix_rule_words(const policy::Answer& answer) {
  for (const auto& l : answer.layers)
    if (l.layer == answer.deciding_layer)
      return std::string(policy::decision_name(answer.decision)) + " (" + layer_rule(l) + ")";
  return policy::decision_name(answer.decision);
}

bool bundle_vouches(const policy::Answer& answer) {
  if (answer.decision != policy::Decision::allow) return false;
  for (const auto& l : answer.layers)
    if (l.layer == policy::Layer::bundle)
      return l.rule.has_value() && l.rule->decision == policy::Decision::allow;
  return false;
}

Expected<std::optional<toolchain::DevShell>> choose_toolchain(const std::string& project_root,
                                                              const ToolchainGate& gate) {
  using Shell = std::optional<toolchain::DevShell>;
  if (gate.host_only) return Shell();
  auto file = toolchain::find_dev_shell(project_root);
  if (!file || toolchain::find_nix().empty()) return Shell();
  // Evaluating runs the project's Nix code on the host as the caller: only
  // content the person allowed, or an organisation vouches for, is.
  auto host = [&](const std::string& why) {
    if (gate.say) gate.say("toolchain: the host's; " + why);
    return Shell();
  };
  const policy::Answer rule =
      gate.table != nullptr ? gate.table->decide(policy::kToolchainNix) : policy::Answer{};
  if (rule.decision == policy::Decision::deny)
    return host("the Nix dev shell of " + printable(file->path) + " is not evaluated: toolchain.nix is " +
                nix_rule_words(rule));
  auto state = toolchain::consent_of(project_root, *file);
  if (!state) return std::move(state).error();
  const std::string content = content_words(*file, state->sha256);
  const std::string allow = "`" + toolchain::allow_command(project_root) + "` allows it";
  if (!bundle_vouches(rule) && state->consent != toolchain::Consent::allowed) {
    if (state->consent == toolchain::Consent::denied)
      return host("the Nix dev shell " + content + " is not evaluated: it was denied; " + allow);
    const std::string unknown = state->consent == toolchain::Consent::changed
                                    ? " changed since it was last allowed or denied"
                                    : " was never allowed";
    if (!gate.ask)
      return host("the Nix dev shell " + content + " is not evaluated: it" + unknown +
                  ", and nobody is at a terminal to allow it (evaluating runs its Nix code on this host as "
                  "you; read it first); " +
                  allow);
    const session::Answer said =
        gate.ask(policy::kToolchainNix,
                 "the Nix dev shell " + content + unknown +
                     ": evaluating it runs its Nix code on this host as you (it reads what you can read, and "
                     "builds outside any sandbox); y allows this content, n runs this call on the host's "
                     "toolchain",
                 false, gate.cancel_fd);
    if (!said.approved)
      return host("the Nix dev shell " + content + " is not evaluated: " + said.refusal + "; " + allow);
    if (auto kept = toolchain::record_consent(project_root, *file, state->sha256, true); !kept)
      return std::move(kept).error();
  }
  if (!gate.evaluate) return Shell();
  return toolchain::dev_shell(project_root, state->sha256);
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
