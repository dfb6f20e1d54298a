// chock run [--project DIR] [--session ID | --keep] [--allow-dirty] [--deny PATH]... [--carry DIR]...
//           [--net none|filtered|host] [--timeout S] [--result FILE] [--background] [--json]
//           [--publish [HOST_PORT:]CALL_PORT]...
//           [--org-bundle PATH] [--policy-rule ACTION=DECISION]... -- CMD [ARG...]
// The command line's face of the session engine (chock/session.hpp): flags
// in, the person's terminal as its hooks, the outcome printed.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <set>

#include "chock/session.hpp"
#include "chock/workspace.hpp"
#include "cli/command.hpp"
#include "cli/json_capture.hpp"
#include "cli/layer_flags.hpp"
#include "cli/outcome.hpp"
#include "cli/terminal.hpp"
#include "util/escape.hpp"

namespace chock::cli {

namespace {

struct RunOptions {
  session::Request request;
  std::string net;  // empty: the project's .network, else none
  double timeout_seconds = 0;
  std::string result_file;
  bool json = false;          // the outputs captured, one JSON object on stdout (json_capture.hpp)
  bool raw_terminal = false;  // the call's bytes to the terminal unfiltered
  config::LayerOptions layers;
};

void say(const std::string& line) {
  std::fprintf(stderr, "chock: %s\n", line.c_str());
}

// "chock: checking out 1a2b3c4d5e6f: 9000 of 20000 files", rewritten in place.
void report_progress(const std::string& what, std::uint64_t done, std::uint64_t total) {
  std::fprintf(stderr, "\rchock: %s: %llu of %llu files%s", printable(what).c_str(),
               static_cast<unsigned long long>(done), static_cast<unsigned long long>(total),
               done == total ? "\n" : "");
}

// The OSC numbers a person allowed (terminal.osc.<n> rows), read only when
// a terminal is there to filter for; a layer that cannot be read is the
// call's to report, and passes none.
std::set<int> terminal_osc(const RunOptions& o) {
  if (::isatty(0) != 1 && ::isatty(1) != 1 && ::isatty(2) != 1) return {};
  auto root = workspace::project_root(o.request.project);
  if (!root) return {};
  config::LayerOptions options = o.layers;
  options.project_dir = *root;
  auto layers = config::load_layers(options);
  return layers ? osc_allowed(layers->table) : std::set<int>();
}

int run_call(const RunOptions& o, JsonCapture* json) {
  session::Request r = o.request;
  if (o.net == "host") r.network = Network::host;
  if (o.net == "none") r.network = Network::none;
  if (o.net == "filtered") r.network = Network::filtered;
  if (o.timeout_seconds > 0)
    r.timeout = std::chrono::milliseconds(static_cast<long long>(o.timeout_seconds * 1000));
  r.org_bundle = o.layers.org_bundle;
  r.policy_rules = o.layers.policy_rules;
  if (json != nullptr) r.stdio = {0, json->program_stdout(), json->program_stderr()};
  // The call never holds the person's terminal: a pseudo-terminal of its own, relayed.
  auto terminal = json != nullptr || r.background
                      ? Expected<TerminalRelay>(TerminalRelay())
                      : TerminalRelay::prepare(r.stdio, r.pass_stdin, o.raw_terminal, terminal_osc(o));
  if (!terminal) return refuse(terminal.error(), o.result_file);
  // Ctrl-C, a hangup or a SIGTERM cancels the call: every process of it ends.
  CancelSignals cancel;
  r.cancel_fd = cancel.fd();
  session::Hooks hooks;
  hooks.ask = person_ask();
  hooks.say = say;
  // Long steps say where they are, on a terminal only; from how long a step
  // reports, tests set 0 rather than depend on the disk's speed.
  if (::isatty(STDERR_FILENO) != 0) hooks.progress = report_progress;
  if (const char* after = std::getenv("CHOCK_PROGRESS_AFTER_MS"); after != nullptr && *after != '\0')
    hooks.progress_after_ms = static_cast<std::uint32_t>(std::strtoul(after, nullptr, 10));
  hooks.opened = [json](const std::string& id, bool) {
    if (json != nullptr) json->set_session(id);
  };
  hooks.started = [&terminal] { terminal->start(); };
  hooks.ended = [&terminal] { terminal->finish(); };  // the program's last output before Chock's lines
  auto outcome = session::call(std::move(r), std::move(hooks));
  terminal->finish();
  if (!outcome) return refuse(outcome.error(), o.result_file);
  if (!outcome->task.empty()) {
    std::printf("%s\n", outcome->task.c_str());
    return 0;
  }
  const Result& result = *outcome->result;
  if (json != nullptr) json->set_result(result.json().dump());
  write_result(result, o.result_file);
  return result.exit_status();
}

int run(const RunOptions& o) {
  if (!o.json) return run_call(o, nullptr);
  auto capture = JsonCapture::start();
  if (!capture) return refuse(capture.error(), o.result_file);
  return (*capture)->finish(run_call(o, capture->get()));
}

}  // namespace

void add_run_command(Command app, Action& action) {
  auto o = std::make_shared<RunOptions>();
  Command cmd = app.add_subcommand("run", "Run one tool call in the project's workspace (a throwaway copy)");
  cmd.add_option("--project", o->request.project, "The project (default: the current directory)");
  cmd.add_option("--session", o->request.session, "Run in this session's workspace (default: a new session)");
  cmd.add_flag("--allow-dirty", o->request.allow_dirty, "Carry uncommitted work into a new git workspace");
  Flag session_option = cmd.get_option("--session");
  cmd.add_flag("--keep", o->request.keep,
               "Keep the new session for more calls even if this call leaves nothing (default: a session "
               "of one call, removed when it leaves no commit or change)")
      .excludes(session_option);
  cmd.add_option("--deny", o->request.deny, "A project file to cover with the deny notice (repeatable)")
      .type_size(1)
      .expected(1)
      .take_all();
  cmd.add_option("--carry", o->request.carry,
                 "An ignored directory of the project (node_modules, .venv) the git workspace shows "
                 "copy-on-write; what a call writes there stays for the session and is never work "
                 "(repeatable; adds to chock.zon's .carry)")
      .type_size(1)
      .expected(1)
      .take_all();
  cmd.add_option("--net", o->net,
                 "Network: none, filtered (names the policy allows, through Chock's relay) or host "
                 "(default: the project's .network, else none)")
      .check(Check::one_of({"none", "filtered", "host"}));
  cmd.add_flag("--background", o->request.background,
               "Start the call as a task of the session and print its id at once (`chock tasks`); a new "
               "session is kept");
  cmd.add_option(
         "--publish", o->request.publish,
         "Reach the call's 127.0.0.1:CALL_PORT from the host's 127.0.0.1:HOST_PORT (and [::1]) while "
         "the program runs; HOST_PORT omitted: a free one (repeatable; net.publish.CALL_PORT decides)")
      .type_name("[HOST_PORT:]CALL_PORT")
      .type_size(1)
      .expected(1)
      .take_all();
  cmd.add_option("--timeout", o->timeout_seconds, "Seconds before the call is ended")
      .check(Check::positive_seconds());
  cmd.add_option("--result", o->result_file, "Write the result as JSON to this file");
  cmd.add_flag("--stdin", o->request.pass_stdin,
               "Pass the caller's stdin to the command (otherwise /dev/null)");
  cmd.add_flag("--raw-terminal", o->raw_terminal,
               "Relay what the command writes to the terminal unfiltered (otherwise OSC, DCS, queries the "
               "terminal answers and modes that outlive the call are dropped)");
  cmd.add_flag("--json", o->json,
               "Capture the command's stdout and stderr and Chock's own lines, and print one JSON object "
               "(docs/schemas/run.schema.json)")
      .excludes(cmd.get_option("--background"));
  cmd.add_option("--cwd", o->request.cwd,
                 "Start the command in this directory of the project (default: the current one)");
  cmd.add_option("--env", o->request.env, "Set K=V in the call's environment (repeatable)")
      .type_size(1)
      .expected(1)
      .take_all()
      .check(Check::custom([](const std::string& e) {
        return e.find('=') == std::string::npos || e.front() == '=' ? std::string("expected K=V")
                                                                    : std::string();
      }));
  cmd.add_flag("--host-toolchain", o->request.host_toolchain,
               "The host's /usr, /bin and /lib even where the project has a Nix dev shell");
  add_layer_flags(cmd, o->layers);
  cmd.add_option("command", o->request.argv, "The command, after --").required();
  cmd.positionals_at_end();
  cmd.callback([o, &action] { action = [o] { return run(*o); }; });
}

}  // namespace chock::cli
