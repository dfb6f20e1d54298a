// Every layer of configuration a call is decided by, read together: the
// organisation bundle, the operator's file, the project's chock.zon and the
// command line's --policy-rule flags, with the policy table folded over them.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "config/chock_zon.hpp"
#include "policy/policy.hpp"

namespace chock::config {

struct LayerOptions {
  std::string project_dir;                // the project's top level (where chock.zon lives)
  std::string org_bundle;                 // --org-bundle; empty: /etc/chock/bundle.zon if present
  std::vector<std::string> policy_rules;  // --policy-rule ACTION=DECISION
};

struct Layers {
  ProjectFile project;
  OperatorFile operator_file;
  BundleFile bundle;
  std::vector<policy::Rule> command_line;
  policy::Table table;

  // The bundle's deny_read and the project's, once each, the project's order first.
  [[nodiscard]] std::vector<std::string> deny_read() const;
  [[nodiscard]] EffectiveLimits limits() const;
};

// "ACTION=DECISION", as --policy-rule takes it.
[[nodiscard]] Expected<policy::Rule> parse_rule_flag(std::string_view text);

// Reads every file; the first bad one is the error and nothing runs.
[[nodiscard]] Expected<Layers> load_layers(const LayerOptions& options);

}  // namespace chock::config
