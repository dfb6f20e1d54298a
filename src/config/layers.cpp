#include "config/layers.hpp"

#include <algorithm>

namespace chock::config {

std::vector<std::string> Layers::deny_read() const {
  std::vector<std::string> all = project.deny_read;
  for (const auto& path : bundle.deny_read)
    if (std::find(all.begin(), all.end(), path) == all.end()) all.push_back(path);
  return all;
}

EffectiveLimits Layers::limits() const {
  return ratchet(project.limits, operator_file.limits, bundle.limits, this_machine());
}

Expected<policy::Rule> parse_rule_flag(std::string_view text) {
  auto eq = text.rfind('=');
  if (eq == std::string_view::npos)
    return Error{"--policy-rule '" + std::string(text) + "': expected ACTION=DECISION (deny, ask or allow)",
                 "", 0, Errc::bad_config};
  std::string action(text.substr(0, eq));
  if (auto valid = policy::validate_action(action); !valid)
    return Error{"--policy-rule '" + std::string(text) + "': " + valid.error().message(), "", 0,
                 Errc::bad_config};
  auto decision = policy::parse_decision(text.substr(eq + 1));
  if (!decision)
    return Error{"--policy-rule '" + std::string(text) + "': " + decision.error().message(), "", 0,
                 Errc::bad_config};
  return policy::Rule{action, *decision, "--policy-rule " + std::string(text)};
}

Expected<Layers> load_layers(const LayerOptions& options) {
  Layers layers;
  auto bundle = read_bundle(options.org_bundle);
  if (!bundle) return std::move(bundle).error();
  layers.bundle = std::move(*bundle);
  auto op = read_operator();
  if (!op) return std::move(op).error();
  layers.operator_file = std::move(*op);
  auto project = read_project(options.project_dir);
  if (!project) return std::move(project).error();
  layers.project = std::move(*project);
  for (const auto& text : options.policy_rules) {
    auto rule = parse_rule_flag(text);
    if (!rule) return std::move(rule).error();
    layers.command_line.push_back(std::move(*rule));
  }
  for (const auto& r : layers.bundle.rules) layers.table.add(policy::Layer::bundle, r);
  for (const auto& r : layers.project.rules) layers.table.add(policy::Layer::project, r);
  for (const auto& r : layers.command_line) layers.table.add(policy::Layer::command_line, r);
  return layers;
}

}  // namespace chock::config
