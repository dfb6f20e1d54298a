#include "session/published.hpp"

namespace chock::session {

namespace {

// net.publish.<call port>: allow publishes, deny refuses, ask puts the
// question to whoever stands for the person (the terminal, an MCP client)
// and is a refusal naming the row when nobody can answer.
Expected<void> decide(const net::PortSpec& spec, const policy::Table& table, const Hooks::Ask& ask) {
  const std::string action = "net.publish." + std::to_string(spec.call_port);
  const policy::Answer answer = table.decide(action);
  const std::string where = answer.deciding_rule ? " (" + answer.deciding_rule->origin + ")" : "";
  if (answer.decision == policy::Decision::allow) return {};
  if (answer.decision == policy::Decision::deny)
    return Error{
        "publishing the call's port " + std::to_string(spec.call_port) + " is denied by " + action + where,
        "", 0, Errc::bad_config};
  if (!ask) return Error{policy::nobody_to_ask(action), "", 0, Errc::bad_config};
  const std::string host = spec.host_port == 0 ? "a free port" : std::to_string(spec.host_port);
  const Answer a = ask(action,
                       "publish the call's port " + std::to_string(spec.call_port) + " on 127.0.0.1:" + host +
                           " (the host's loopback only)",
                       false, -1);
  if (a.approved) return {};
  return Error{"publishing the call's port " + std::to_string(spec.call_port) + " was refused" +
                   (a.refusal.empty() ? std::string() : ": " + a.refusal),
               "", 0, Errc::bad_config};
}

}  // namespace

Expected<std::vector<net::Published>> open_published(const std::vector<std::string>& specs, Network network,
                                                     const policy::Table& table, const Hooks::Ask& ask) {
  std::vector<net::Published> out;
  if (specs.empty()) return out;
  if (network == Network::host)
    return Error{
        "--publish needs the call's own network (--net none or filtered): with --net host its "
        "servers are on the host's loopback already",
        "", 0, Errc::bad_config};
  for (const auto& text : specs) {
    auto spec = net::parse_port_spec(text);
    if (!spec) return std::move(spec).error();
    if (auto d = decide(*spec, table, ask); !d) return std::move(d).error();
    auto listening = net::listen_published(*spec);
    if (!listening) return std::move(listening).error();
    out.push_back(std::move(*listening));
  }
  return out;
}

nlohmann::json published_entry(const net::Published& p) {
  return {{"url", p.url()}, {"host_port", p.host_port}, {"call_port", p.call_port}};
}

nlohmann::json published_json(const std::vector<net::Published>& ports) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& p : ports) out.push_back(published_entry(p));
  return out;
}

}  // namespace chock::session
