#include "cli/layer_flags.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>

#include "chock/workspace.hpp"

namespace chock::cli {

void add_layer_flags(CLI::App& sub, config::LayerOptions& options) {
  sub.add_option("--org-bundle", options.org_bundle,
                 "The organisation's policy bundle (default: /etc/chock/bundle.zon if present)")
      ->type_name("PATH");
  sub.add_option("--policy-rule", options.policy_rules,
                 "Add a rule that can only narrow the policy, e.g. sandbox.jit=deny (repeatable)")
      ->type_name("ACTION=DECISION")
      ->type_size(1)
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
}

Answer ask_terminal(const std::string& action, const std::string& what, bool offer_always) {
  if (::isatty(STDIN_FILENO) == 0 || ::isatty(STDERR_FILENO) == 0)
    return {false, false, policy::nobody_to_ask(action)};
  std::fprintf(stderr, "chock: %s\nchock: %s asks: go ahead? [y]es, [n]o%s: ", what.c_str(), action.c_str(),
               offer_always ? ", [a]lways for this session" : "");
  std::fflush(stderr);
  std::string line;
  if (!std::getline(std::cin, line)) return {false, false, "no answer was given"};
  if (line == "y" || line == "Y" || line == "yes") return {true, false, ""};
  if (offer_always && (line == "a" || line == "A" || line == "always")) return {true, true, ""};
  return {false, false, "you answered no"};
}

session::Hooks::Ask terminal_ask() {
  if (::isatty(STDIN_FILENO) == 0 || ::isatty(STDERR_FILENO) == 0) return nullptr;
  return [](const std::string& action, const std::string& what, bool offer_always) {
    return ask_terminal(action, what, offer_always);
  };
}

void remember_always(const std::string& id, const std::vector<std::string>& actions) {
  auto s = workspace::load(id);
  if (!s) return;
  auto held = workspace::lock(*s, true);
  if (!held) return;
  auto fresh = workspace::load(id);
  if (!fresh) return;
  for (const auto& a : actions)
    if (std::find(fresh->always.begin(), fresh->always.end(), a) == fresh->always.end())
      fresh->always.push_back(a);
  if (auto saved = workspace::save(*fresh); !saved)
    std::fprintf(stderr, "chock: warning: could not keep the answer: %s\n", saved.error().message().c_str());
}

}  // namespace chock::cli
