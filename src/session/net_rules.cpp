#include "session/net_rules.hpp"

#include <unistd.h>

#include <algorithm>

#include "util/dirs.hpp"
#include "util/escape.hpp"

namespace chock::session {

namespace {

net::Ruling from_answer(const std::string& action, const policy::Answer& a) {
  net::Ruling r;
  r.decision = policy::decision_name(a.decision);
  r.rule = a.deciding_rule ? a.deciding_rule->origin : std::string();
  r.allowed = a.decision == policy::Decision::allow;
  if (a.decision == policy::Decision::deny)
    r.refusal = action + " is denied" + (a.deciding_rule ? " by " + a.deciding_rule->origin : std::string());
  return r;
}

}  // namespace

std::optional<net::Ruling> NetRules::settled(const std::string& action, policy::Answer* answer) const {
  *answer = table_.decide(action);
  net::Ruling r = from_answer(action, *answer);
  if (answer->decision != policy::Decision::ask) return r;
  if (std::find(always_.begin(), always_.end(), action) != always_.end()) {
    r.allowed = true;
    r.rule = "answered always earlier in this session";
    return r;
  }
  return std::nullopt;
}

net::Ruling NetRules::ask(const std::string& action, const std::string& what) {
  policy::Answer a;
  if (auto r = settled(action, &a)) return *r;
  net::Ruling r = from_answer(action, a);
  if (!ask_) {
    r.refusal = policy::nobody_to_ask(action);
    return r;
  }
  // `always` is offered only where there is a session to keep it in.
  const Answer said = ask_(action, what, session_, net::rule_cancel_fd());
  r.allowed = said.approved;
  r.refusal = said.refusal;
  if (said.approved)
    r.rule = said.always ? "answered always at the terminal" : "answered yes at the terminal";
  if (said.always) {
    new_always_.push_back(action);
    always_.push_back(action);
  }
  return r;
}

net::Ruling NetRules::name(const net::Host& host) const {
  const std::string prefix = "net.connect." + host.labels + ".";
  policy::Answer a;
  net::Ruling any_port = settled(prefix + "0", &a).value_or(from_answer(prefix + "0", a));
  if (any_port.allowed || (a.decision == policy::Decision::ask && ask_ != nullptr)) {
    any_port.allowed = true;
    return any_port;
  }
  // A rule for one port of this name, or an earlier `always` for one.
  auto names_port = [&](const std::string& action) {
    return action.size() > prefix.size() && action.starts_with(prefix) &&
           std::all_of(action.begin() + static_cast<long>(prefix.size()), action.end(),
                       [](char c) { return c >= '0' && c <= '9'; });
  };
  for (const auto& entry : table_.entries()) {
    if (!names_port(entry.rule.action)) continue;
    policy::Answer port_answer;
    auto r = settled(entry.rule.action, &port_answer);
    if ((r && r->allowed) || (!r && ask_ != nullptr)) {
      net::Ruling yes = r.value_or(from_answer(entry.rule.action, port_answer));
      yes.allowed = true;
      return yes;
    }
  }
  for (const auto& action : always_)
    if (names_port(action)) return net::Ruling{true, "ask", "answered always earlier in this session", ""};
  net::Ruling no = any_port;
  no.allowed = false;
  no.refusal =
      prefix + "* " +
      (a.decision == policy::Decision::ask ? std::string("asks, and nobody is here to answer")
                                           : "is denied" + (no.rule.empty() ? "" : " by " + no.rule));
  return no;
}

std::vector<net::Cidr> private_ranges(const config::OperatorFile& op) {
  std::vector<net::Cidr> out;
  for (const auto& text : op.allow_private)
    if (auto range = net::parse_cidr(text)) out.push_back(*range);
  return out;
}

const char* network_name(Network network) {
  switch (network) {
    case Network::filtered:
      return "filtered";
    case Network::host:
      return "host";
    case Network::none:
      break;
  }
  return "none";
}

void add_connect_client(Config& config) {
  const auto client = companion("chock-connect");
  if (!client) return;
  config.binds.push_back(
      Bind{*client, std::string(kConnectDirInside) + "/chock-connect", Access::read_only_file});
  if (!config.env) {  // the caller's environment, as it would have been
    config.env.emplace();
    for (char** e = environ; *e != nullptr; ++e) config.env->emplace_back(*e);
  }
  bool path = false;
  for (auto& e : *config.env)
    if (e.starts_with("PATH=")) {
      e += std::string(":") + kConnectDirInside;
      path = true;
    }
  if (!path) config.env->push_back(std::string("PATH=/usr/local/bin:/usr/bin:/bin:") + kConnectDirInside);
}

void LiveRefusals::operator()(const std::string& line) {
  const std::string shown = printable(line);
  {
    std::lock_guard lock(mutex_);
    if (!said_.insert(shown).second) return;
  }
  say_(shown);
}

bool LiveRefusals::said(const std::string& line) const {
  std::lock_guard lock(mutex_);
  return said_.count(line) > 0;
}

std::shared_ptr<net::Judge> call_judge(NetRules& rules, net::JudgeOptions options) {
  options.name_rule = [&rules](const net::Host& host) { return rules.name(host); };
  options.lookup_once = true;
  return std::make_shared<net::Judge>(
      [&rules](const std::string& action) {
        return rules.ask(action, "a program of the call opens a connection: " + action);
      },
      std::move(options));
}

}  // namespace chock::session
