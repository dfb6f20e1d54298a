// The write^execute row: the policy chock run would fold for sandbox.jit
// (the organisation bundle, the project's chock.zon, the command line, read
// by config::load_layers exactly as chock run reads them), and the filter
// that answer selects, tried for real.
#include "config/layers.hpp"
#include "doctor/probes.hpp"

namespace chock::doctor {
namespace {

constexpr const char* kRow = "write^execute";

std::string rule_words(const policy::Answer::LayerAnswer& l) {
  std::string layer = policy::layer_name(l.layer);
  if (!l.rule) return "no " + layer + " rule names it";
  return "the " + layer + " rule " + l.rule->action + " = " + policy::decision_name(l.rule->decision) +
         " at " + l.rule->origin;
}

// "sandbox.jit answers deny: the bundle rule sandbox.jit = deny at b.zon:3:9
// (the project rule ... asks allow)": the deciding rule, and a wider rule it
// held down, so a person sees why their own rule did not win.
std::string answer_words(const policy::Answer& a) {
  std::string out = std::string(policy::kSandboxJit) + " answers " + policy::decision_name(a.decision) + ": ";
  const policy::Answer::LayerAnswer* deciding = nullptr;
  for (const auto& l : a.layers)
    if (l.layer == a.deciding_layer) deciding = &l;
  if (deciding == nullptr || !deciding->rule) {
    out += "no rule names it, and an action nobody names asks";
  } else {
    out += rule_words(*deciding);
  }
  for (const auto& l : a.layers) {
    if (&l == deciding || !l.rule) continue;
    if (l.replaced) {
      out += " (replaced by the command line's row: " + rule_words(l) + ")";
      continue;
    }
    if (l.decision <= a.decision) continue;
    out += " (held down: " + rule_words(l) + ")";
  }
  return out;
}

}  // namespace

Expected<policy::Answer> policy_answer(const Options& options, const std::string& project_root,
                                       const char* action) {
  config::LayerOptions layers_options;
  layers_options.project_dir = project_root;
  layers_options.org_bundle = options.org_bundle;
  layers_options.policy_rules = options.policy_rules;
  auto layers = config::load_layers(layers_options);
  if (!layers) return std::move(layers).error();
  return layers->table.decide(action);
}

Row write_execute_row(const policy::Answer& answer, const ChildResult& strict_filter) {
  Row row;
  row.name = kRow;
  row.blocks = false;  // a project that gives the rule up still runs: it chose to
  const std::string why = answer_words(answer);
  if (answer.decision == policy::Decision::allow) {
    // The filter chock run would install for this project, in a child.
    ChildResult jit = try_filter(true);
    if (!filter_held(jit)) {
      row.state = level_name(Level::off);
      row.level = Level::off;
      row.reason = why + "; the JIT filter did not hold here: " + jit.describe();
      return row;
    }
    row.state = "OFF";
    row.level = Level::degraded;
    row.reason = why +
                 "; a page may be writable and executable at once (every blocked call still kills, "
                 "io_uring is still refused)";
    return row;
  }
  if (!filter_held(strict_filter)) {
    row.state = level_name(Level::off);
    row.level = Level::off;
    row.reason = why + "; but no filter holds here (see the seccomp row)";
    return row;
  }
  row.state = "strict";
  row.level = Level::ok;
  row.reason = why + "; a writable+executable mmap is refused (EPERM)";
  return row;
}

}  // namespace chock::doctor
