// chock policy [--project DIR] [--org-bundle PATH] [--policy-rule A=D]...
// chock policy explain ACTION [the same flags]
#include <cstdio>
#include <memory>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "chock/workspace.hpp"
#include "cli/command.hpp"
#include "cli/layer_flags.hpp"
#include "session/toolchain_choice.hpp"

namespace chock::cli {

namespace {

struct PolicyOptions {
  std::string project;
  config::LayerOptions layers;
  std::string action;  // explain
  bool json = false;   // docs/schemas/policy.schema.json, policy-explain.schema.json
};

nlohmann::json rule_json(const policy::Rule& r) {
  return {{"action", r.action}, {"decision", policy::decision_name(r.decision)}, {"origin", r.origin}};
}

nlohmann::json answer_json(const std::string& action, const policy::Answer& a) {
  nlohmann::json layers = nlohmann::json::array();
  for (const auto& l : a.layers)
    layers.push_back({{"layer", policy::layer_name(l.layer)},
                      {"decision", policy::decision_name(l.decision)},
                      {"rule", l.rule ? rule_json(*l.rule) : nlohmann::json(nullptr)},
                      {"replaced", l.replaced}});
  return {{"action", action},
          {"decision", policy::decision_name(a.decision)},
          {"deciding_layer", policy::layer_name(a.deciding_layer)},
          {"deciding_rule", a.deciding_rule ? rule_json(*a.deciding_rule) : nlohmann::json(nullptr)},
          {"layers", layers}};
}

// The actions Chock itself asks about are always shown, named by a rule or not.
constexpr const char* kSandboxActions[] = {policy::kSandboxJit, policy::kWorkspaceApply,
                                           policy::kToolchainNix};

Expected<config::Layers> load(const PolicyOptions& o) {
  auto root = workspace::project_root(o.project);
  if (!root) return std::move(root).error();
  config::LayerOptions options = o.layers;
  options.project_dir = *root;
  return config::load_layers(options);
}

std::string default_words(policy::Layer layer) {
  switch (layer) {
    case policy::Layer::bundle:
      return "no rule: the bundle leaves it at allow";
    case policy::Layer::project:
      return "no rule: an action nobody names asks";
    case policy::Layer::command_line:
      return "no rule: the project's answer stands";
  }
  return "";
}

// The command line's rows are the person's, standing for the project: said so
// wherever a reader learns which layer a row came from.
std::string layer_words(policy::Layer layer) {
  if (layer == policy::Layer::command_line) return "command line (as the project)";
  return policy::layer_name(layer);
}

std::string answer_line(const std::string& action, const policy::Answer& a) {
  std::string out = policy::decision_name(a.decision);
  out += " (";
  out += layer_words(a.deciding_layer);
  out += a.deciding_rule ? ", " + a.deciding_rule->origin : std::string(", by default");
  out += ")";
  // The project is what asks to have its dev shell evaluated: its own allow is no yes.
  if (action == policy::kToolchainNix && a.decision == policy::Decision::allow && !session::bundle_vouches(a))
    out += "; read as ask: only the organisation bundle's allow needs no yes";
  return out;
}

int show(const PolicyOptions& o) {
  auto layers = load(o);
  if (!layers) {
    std::fprintf(stderr, "chock: %s\n", layers.error().message().c_str());
    return 2;
  }
  if (o.json) {
    nlohmann::json rules = nlohmann::json::array(), answers = nlohmann::json::array();
    std::set<std::string> named(std::begin(kSandboxActions), std::end(kSandboxActions));
    for (const auto& e : layers->table.entries()) {
      nlohmann::json r = rule_json(e.rule);
      r["layer"] = policy::layer_name(e.layer);
      rules.push_back(r);
      if (!e.rule.action.ends_with(".*")) named.insert(e.rule.action);
    }
    for (const auto& a : named) answers.push_back(answer_json(a, layers->table.decide(a)));
    std::printf("%s\n", nlohmann::json{{"rules", rules}, {"answers", answers}}.dump(2).c_str());
    return 0;
  }
  std::printf(
      "rules (deny < ask < allow; the command line's rows stand for the project's for the same action, and "
      "the "
      "answer is the minimum of the bundle's and the project's):\n");
  if (layers->table.entries().empty()) std::printf("  (none)\n");
  std::set<std::string> actions(std::begin(kSandboxActions), std::end(kSandboxActions));
  for (const auto& e : layers->table.entries()) {
    std::printf("  %-13s %-40s %-6s %s\n", policy::layer_name(e.layer), e.rule.action.c_str(),
                policy::decision_name(e.rule.decision), e.rule.origin.c_str());
    if (e.rule.action.size() < 2 || e.rule.action.compare(e.rule.action.size() - 2, 2, ".*") != 0)
      actions.insert(e.rule.action);
  }
  std::printf("answers:\n");
  for (const auto& action : actions)
    std::printf("  %-40s %s\n", action.c_str(), answer_line(action, layers->table.decide(action)).c_str());
  return 0;
}

int explain(const PolicyOptions& o) {
  if (auto valid = policy::validate_action(o.action); !valid) {
    std::fprintf(stderr, "chock: %s\n", valid.error().message().c_str());
    return 2;
  }
  auto layers = load(o);
  if (!layers) {
    std::fprintf(stderr, "chock: %s\n", layers.error().message().c_str());
    return 2;
  }
  policy::Answer a = layers->table.decide(o.action);
  if (o.json) {
    std::printf("%s\n", answer_json(o.action, a).dump(2).c_str());
    return 0;
  }
  std::printf("%s: %s\n", o.action.c_str(), answer_line(o.action, a).c_str());
  for (const auto& l : a.layers) {
    std::string why = l.rule ? l.rule->action + " at " + l.rule->origin : default_words(l.layer);
    if (l.replaced) why += " (replaced by the command line's row)";
    if (l.layer == policy::Layer::command_line && l.rule) why += " (the person, as the project)";
    std::printf("  %-13s %-6s %s\n", policy::layer_name(l.layer), policy::decision_name(l.decision),
                why.c_str());
  }
  return 0;
}

}  // namespace

void add_policy_command(Command app, Action& action) {
  auto o = std::make_shared<PolicyOptions>();
  Command cmd = app.add_subcommand("policy", "Print the policy table folded over its layers");
  cmd.add_option("--project", o->project, "The project (default: the current directory)");
  cmd.add_flag("--json", o->json, "Print the rules and answers as JSON (docs/schemas/policy.schema.json)");
  add_layer_flags(cmd, o->layers);
  Command ex = cmd.add_subcommand("explain", "Print the answer for one action and which rule gave it");
  ex.add_option("action", o->action, "The action, e.g. workspace.apply").required();
  ex.add_option("--project", o->project, "The project (default: the current directory)");
  ex.add_flag("--json", o->json, "Print the answer as JSON (docs/schemas/policy-explain.schema.json)");
  add_layer_flags(ex, o->layers);
  cmd.callback([o, cmd, ex, &action] {
    if (ex.parsed()) {
      action = [o] { return explain(*o); };
    } else {
      action = [o] { return show(*o); };
    }
    (void)cmd;
  });
}

}  // namespace chock::cli
