// Rule matching and the fold over the three layers.
#include "policy/policy.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdio>
#include <limits>

namespace chock::policy {

const char* decision_name(Decision decision) {
  switch (decision) {
    case Decision::deny:
      return "deny";
    case Decision::ask:
      return "ask";
    case Decision::allow:
      return "allow";
  }
  return "deny";
}

Expected<Decision> parse_decision(std::string_view text) {
  for (Decision d : {Decision::deny, Decision::ask, Decision::allow}) {
    if (text == decision_name(d)) return d;
  }
  return Error{"unknown policy decision \"" + std::string(text) + "\" (expected deny, ask or allow)", "", 0,
               Errc::bad_config};
}

const char* layer_name(Layer layer) {
  switch (layer) {
    case Layer::bundle:
      return "bundle";
    case Layer::project:
      return "project";
    case Layer::command_line:
      return "command line";
  }
  return "project";
}

namespace {

bool allowed_in_label(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

// A byte as a reader can see it in a message, control bytes included.
std::string shown(char c) {
  if (c > ' ' && c < 0x7f) return std::string("'") + c + "'";
  std::array<char, 8> buf{};
  std::snprintf(buf.data(), buf.size(), "\\x%02x", static_cast<unsigned char>(c));
  return buf.data();
}

Error bad_action(std::string_view action, const std::string& why) {
  return Error{"policy action \"" + std::string(action) + "\": " + why, "", 0, Errc::bad_config};
}

// How specific `rule` is for `action`, or nullopt when it does not match.
// Exact names outrank every pattern; a pattern counts the labels of its prefix.
constexpr std::size_t kExact = std::numeric_limits<std::size_t>::max();
std::optional<std::size_t> specificity(std::string_view rule, std::string_view action) {
  if (rule == action) return kExact;
  if (rule.size() < 3 || !rule.ends_with(".*")) return std::nullopt;
  std::string_view prefix = rule.substr(0, rule.size() - 1);  // keeps the dot: "x." matches "x.y", not "x"
  if (action.size() <= prefix.size() || !action.starts_with(prefix)) return std::nullopt;
  return static_cast<std::size_t>(std::count(prefix.begin(), prefix.end(), '.'));
}

Decision layer_default(Layer layer) {
  // The bundle's silence leaves the rest alone, and so does the command
  // line's (the project's row stands); the project's silence is a question.
  return layer == Layer::project ? Decision::ask : Decision::allow;
}

}  // namespace

Expected<void> validate_action(std::string_view action) {
  if (action.empty()) return Error{"policy action is empty", "", 0, Errc::bad_config};
  if (action == "*")
    return bad_action(action, "a bare * would name every action; write a prefix such as \"net.*\"");
  std::size_t label_number = 0;
  std::size_t start = 0;
  for (;;) {
    ++label_number;
    std::size_t end = action.find('.', start);
    bool last = end == std::string_view::npos;
    std::string_view label = action.substr(start, last ? std::string_view::npos : end - start);
    std::string where = "label " + std::to_string(label_number);
    if (label.empty()) {
      std::string why = where + " is empty";
      if (last) why += " (a trailing dot)";
      if (label_number == 1) why += " (a leading dot)";
      return bad_action(action, why);
    }
    if (label == "*") {
      if (!last) return bad_action(action, "* may only be the whole last label, as in \"net.connect.*\"");
    } else {
      for (char c : label) {
        if (c == '*')
          return bad_action(action, "* may only be the whole last label, as in \"net.connect.*\"");
        if (c >= 'A' && c <= 'Z')
          return bad_action(action, "upper case " + shown(c) + " in " + where + "; actions are lower case");
        if (!allowed_in_label(c))
          return bad_action(action, where + " has " + shown(c) + ", outside [a-z0-9_-]");
      }
    }
    if (last) return {};
    start = end + 1;
  }
}

bool person_allows(const Table& table, std::string_view action) {
  const Answer answer = table.decide(action);
  bool allowed = false;
  for (const auto& l : answer.layers) {
    if (l.replaced) continue;  // the project's row, which the person's replaced
    if (l.decision == Decision::deny) return false;
    if (l.layer != Layer::project && l.rule && l.rule->decision == Decision::allow) allowed = true;
  }
  return allowed;
}

void Table::add(Layer layer, Rule rule) {
  entries_.push_back(Entry{layer, std::move(rule)});
}

Answer Table::decide(std::string_view action) const {
  Answer answer;
  for (Layer layer : {Layer::bundle, Layer::project, Layer::command_line}) {
    const Rule* best = nullptr;
    std::size_t best_specificity = 0;
    for (const Entry& entry : entries_) {
      if (entry.layer != layer) continue;
      auto s = specificity(entry.rule.action, action);
      if (!s) continue;
      bool more_specific = best == nullptr || *s > best_specificity;
      bool narrower_tie = best != nullptr && *s == best_specificity && entry.rule.decision < best->decision;
      if (more_specific || narrower_tie) {
        best = &entry.rule;
        best_specificity = *s;
      }
    }
    answer.layers.push_back(Answer::LayerAnswer{layer,
                                                best != nullptr ? best->decision : layer_default(layer),
                                                best != nullptr ? std::optional<Rule>(*best) : std::nullopt});
  }
  // The person's row is the project's for this run: it replaces the file's.
  if (answer.layers[2].rule) answer.layers[1].replaced = true;
  const Answer::LayerAnswer* deciding = &answer.layers.front();
  for (const auto& candidate : answer.layers) {
    if (candidate.replaced) continue;
    bool lower = candidate.decision < deciding->decision;
    bool equal_with_rule = candidate.decision == deciding->decision && candidate.rule && !deciding->rule;
    if (lower || equal_with_rule) deciding = &candidate;
  }
  answer.decision = deciding->decision;
  answer.deciding_layer = deciding->layer;
  answer.deciding_rule = deciding->rule;
  return answer;
}

std::string nobody_to_ask(const std::string& action) {
  return action + " asks, and nobody is here to answer: add a rule to the project's chock.zon, " +
         ".{ .action = \"" + action + "\", .decision = .allow }, pass --policy-rule " + action +
         "=allow, or run on a terminal";
}

}  // namespace chock::policy
