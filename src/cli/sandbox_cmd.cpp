// `chock sandbox [options] -- CMD [ARG...]`: the plumbing command, what
// bwrap is to Flatpak. Every option maps onto one field of chock::Config.
#include <unistd.h>

#include <cstdio>

#include <chrono>
#include <memory>

#include "chock/sandbox.hpp"
#include "cli/command.hpp"
#include "cli/layer_flags.hpp"
#include "cli/limit_flags.hpp"
#include "cli/outcome.hpp"
#include "cli/terminal.hpp"
#include "config/layers.hpp"
#include "session/net_rules.hpp"

namespace chock::cli {

namespace {

struct SandboxOptions {
  Config config;
  std::string net = "none";
  double timeout_seconds = 0;
  long long user = -1;
  std::string result_file;
  std::vector<std::string> command;
  std::vector<std::string> policy_rules;  // --policy-rule, for --net filtered
  LimitFlags limits;
  bool raw_terminal = false;  // the call's bytes to the terminal unfiltered
};

int run_sandbox(SandboxOptions& o) {
  Config& c = o.config;
  if (o.net == "none") {
    c.network = Network::none;
  } else if (o.net == "host") {
    c.network = Network::host;
  } else if (o.net == "filtered") {
    c.network = Network::filtered;
  } else {
    return refuse(Error{"--net " + o.net + ": expected none, filtered or host", "", 0, Errc::bad_config},
                  o.result_file);
  }
  // The plumbing has no project: --policy-rule rows are the person's, standing
  // for the project as on chock run's command line, and everything they do not
  // allow asks (at this terminal) or is refused.
  policy::Table table;
  for (const auto& text : o.policy_rules) {
    auto rule = config::parse_rule_flag(text);
    if (!rule) return refuse(rule.error(), o.result_file);
    if (!rule->action.starts_with("terminal.") && c.network != Network::filtered)
      return refuse(Error{"--policy-rule " + text + ": only --net filtered reads policy rules", "", 0,
                          Errc::bad_config},
                    o.result_file);
    table.add(policy::Layer::command_line, *rule);
  }
  session::NetRules rules(table, {}, false, terminal_ask());
  session::LiveRefusals live(
      [](const std::string& line) { std::fprintf(stderr, "chock: %s\n", line.c_str()); });
  if (c.network == Network::filtered) {
    net::JudgeOptions judge_options;
    judge_options.refused = [&live](const std::string& line) { live(line); };
    c.judge = session::call_judge(rules, std::move(judge_options));
    session::add_connect_client(c);
  }
  if (o.user >= 0) c.user = static_cast<uid_t>(o.user);
  if (o.timeout_seconds > 0) {
    c.timeout = std::chrono::milliseconds(static_cast<long long>(o.timeout_seconds * 1000));
  }
  c.argv = o.command;
  UniqueFd cgroup_dir;  // --cgroup: held open for the life of the call
  if (auto limits = apply_limit_flags(o.limits, c, cgroup_dir); !limits)
    return refuse(limits.error(), o.result_file);
  if (c.allow_jit) {
    std::fprintf(
        stderr,
        "chock: warning: --allow-jit: write-xor-execute is OFF for this call (a page may be writable and "
        "executable at once); every blocked call still kills, io_uring is still refused\n");
  }
  auto terminal = TerminalRelay::prepare(c, o.raw_terminal, osc_allowed(table));
  if (!terminal) return refuse(terminal.error(), o.result_file);
  CancelSignals cancel;
  auto child = spawn(c);
  if (!child) return refuse(child.error(), o.result_file);
  terminal->start();
  Result r = child->wait(cancel.fd());
  child->detach();     // chock exits next: the keeper's teardown is the kernel's
  terminal->finish();  // the program's last output before chock's own line
  return finish(r, c.argv, o.result_file, {}, [&live](const std::string& line) { return live.said(line); });
}

}  // namespace

void add_sandbox_command(Command app, Action& action) {
  auto o = std::make_shared<SandboxOptions>();
  Command sub = app.add_subcommand("sandbox", "Run a command in a sandbox (the plumbing under chock run)");
  auto bind = [o](Access access) {
    return [o, access](const std::string& path) { o->config.binds.push_back(Bind{path, path, access}); };
  };
  // Binds are applied in the order given, so each is recorded as it parses.
  sub.add_option_function<std::string>("--ro", bind(Access::read_only),
                                       "Bind PATH read-only at the same path")
      .type_name("PATH")
      .take_all()
      .trigger_on_parse();
  sub.add_option_function<std::string>("--rw", bind(Access::read_write),
                                       "Bind PATH read-write at the same path")
      .type_name("PATH")
      .take_all()
      .trigger_on_parse();
  sub.add_option_function<std::string>("--ro-file", bind(Access::read_only_file),
                                       "Bind one regular FILE read-only")
      .type_name("FILE")
      .take_all()
      .trigger_on_parse();
  sub.add_option("--device", o->config.devices,
                 "Bind a character device NODE below /dev read-write at its own path (repeatable; the grant "
                 "is the whole device)")
      .type_name("NODE")
      .type_size(1)
      .expected(1)
      .take_all();
  sub.add_option("--cwd", o->config.cwd, "Working directory inside (default /)").type_name("DIR");
  sub.add_option("--net", o->net,
                 "none (default): no network; filtered: the names --policy-rule allows, through Chock's "
                 "resolver and relay; host: the host's network")
      .type_name("none|filtered|host");
  sub.add_option("--policy-rule", o->policy_rules,
                 "With --net filtered: ACTION=DECISION, e.g. net.connect.org.example.443=allow (repeatable)")
      .type_name("ACTION=DECISION")
      .type_size(1)
      .expected(1)
      .take_all();
  sub.add_option("--user", o->user, "Root callers only: the uid the command runs as (default 65534)")
      .type_name("UID")
      .check(Check::range(1LL, 4294967294LL));
  sub.add_flag("--stdin", o->config.pass_stdin, "Pass the caller's stdin (otherwise /dev/null)");
  sub.add_flag("--raw-terminal", o->raw_terminal,
               "Relay what the command writes to the terminal unfiltered (otherwise OSC, DCS, queries the "
               "terminal answers and modes that outlive the call are dropped)");
  sub.add_flag(
      "--allow-jit", o->config.allow_jit,
      "Turn off the write-xor-execute rules of the seccomp filter (for JIT compilers); nothing else");
  sub.add_option("--timeout", o->timeout_seconds, "Stop every process of the call after SECONDS")
      .type_name("SECONDS")
      .check(Check::positive_seconds());
  sub.add_option("--result", o->result_file, "Write the result as one JSON object to FILE").type_name("FILE");
  add_limit_flags(sub, o->limits);
  sub.add_option("command", o->command, "The command and its arguments, after --").required();
  sub.positionals_at_end();
  sub.final_callback([&action, o] { action = [o] { return run_sandbox(*o); }; });
}

}  // namespace chock::cli
