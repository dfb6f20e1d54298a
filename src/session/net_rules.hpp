// The policy table as the network judge asks it (chock/net.hpp's RuleFn):
// deny and allow as the table folds them, an earlier `always` of the
// session, and `ask` put to whoever stands for the person (Hooks::ask: a
// terminal, an MCP client), or a refusal when nobody is there. Shared by
// `chock fetch` and a filtered call.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "chock/config.hpp"
#include "chock/net.hpp"
#include "chock/session.hpp"
#include "config/chock_zon.hpp"
#include "policy/policy.hpp"

namespace chock::session {

// Puts a policy question to the person; unset: nobody can be asked.
using Asker = Hooks::Ask;

class NetRules {
 public:
  NetRules(const policy::Table& table, std::vector<std::string> always, bool session, Asker ask)
      : table_(table), always_(std::move(always)), session_(session), ask_(std::move(ask)) {}

  // Allowed, denied, or an earlier `always`; nullopt when it asks and has
  // not been answered.
  [[nodiscard]] std::optional<net::Ruling> settled(const std::string& action, policy::Answer* answer) const;
  // settled(), else the question about `what`.
  net::Ruling ask(const std::string& action, const std::string& what);
  // For a filtered call's resolver: may the call reach `host` on some port?
  // A pattern's answer (port 0), else any rule that names a port of it; an
  // `ask` is a yes only when someone can be asked at the connect.
  [[nodiscard]] net::Ruling name(const net::Host& host) const;
  [[nodiscard]] const std::vector<std::string>& new_always() const { return new_always_; }

 private:
  const policy::Table& table_;
  std::vector<std::string> always_;
  std::vector<std::string> new_always_;
  bool session_ = false;
  Asker ask_;
};

// The operator's private ranges (config.zon .allow_private), checked when
// the file was read.
std::vector<net::Cidr> private_ranges(const config::OperatorFile& op);

// "none", "filtered", "host".
const char* network_name(Network network);

// Where chock-connect is inside a filtered call (on its PATH).
inline constexpr const char* kConnectDirInside = "/run/chock/bin";

// A filtered call gets chock-connect (a companion, util/dirs.hpp) at
// /run/chock/bin/chock-connect, and that directory at the end of its PATH.
// Nothing when it is not there (a build without it): the broker still is.
void add_connect_client(Config& config);

// A filtered call's refusals said as they happen (JudgeOptions::refused),
// escaped, each once; the call's end then leaves out what was said.
class LiveRefusals {
 public:
  explicit LiveRefusals(std::function<void(const std::string& line)> say) : say_(std::move(say)) {}
  void operator()(const std::string& line);
  // Whether `line` (as end_lines gives it, escaped) was said already.
  [[nodiscard]] bool said(const std::string& line) const;

 private:
  std::function<void(const std::string& line)> say_;
  mutable std::mutex mutex_;
  std::set<std::string> said_;
};

// The judge of a filtered call: `rules` (which must outlive it) decide,
// asking about a connect as "a program of the call connects: ACTION".
std::shared_ptr<net::Judge> call_judge(NetRules& rules, net::JudgeOptions options);

}  // namespace chock::session
