// chock run [--project DIR] [--session ID] [--allow-dirty] [--deny PATH]...
//           [--net none|host] [--timeout S] [--result FILE] -- CMD [ARG...]
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>

#include "chock/sandbox.hpp"
#include "chock/workspace.hpp"
#include "cli/command.hpp"
#include "cli/outcome.hpp"

namespace chock::cli {

namespace {

struct RunOptions {
  std::string project;
  std::string session;
  bool allow_dirty = false;
  std::vector<std::string> deny;
  std::string net = "none";
  double timeout_seconds = 0;
  std::string result_file;
  std::vector<std::string> argv;
};

std::string current_dir() {
  char buf[PATH_MAX];
  return ::getcwd(buf, sizeof buf) != nullptr ? std::string(buf) : std::string("/");
}

// The call gets a small environment of its own: the caller's tokens and
// keys stay outside.
std::vector<std::string> call_environment() {
  std::vector<std::string> env;
  const char* path = std::getenv("PATH");
  env.push_back(std::string("PATH=") + (path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin"));
  for (const char* name : {"TERM", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "NO_COLOR"})
    if (const char* v = std::getenv(name)) env.push_back(std::string(name) + "=" + v);
  env.emplace_back("HOME=/tmp");
  env.emplace_back("TMPDIR=/tmp");
  return env;
}

int run(const RunOptions& o) {
  workspace::OpenOptions open;
  open.project = o.project;
  open.session = o.session;
  open.allow_dirty = o.allow_dirty;
  open.deny = o.deny;
  auto opened = workspace::open(open);
  if (!opened) return refuse(opened.error(), o.result_file);
  workspace::Session& s = opened->session;
  for (const auto& note : opened->notes) std::fprintf(stderr, "chock: %s\n", note.c_str());
  if (opened->created)
    std::fprintf(stderr, "chock: session %s (%s workspace of %s); continue it with --session %s\n",
                 s.id.c_str(), s.kind == workspace::Kind::git ? "git worktree" : "overlay", s.project.c_str(),
                 s.id.c_str());

  Config config;
  config.argv = o.argv;
  config.env = call_environment();
  config.network = o.net == "host" ? Network::host : Network::none;
  if (o.timeout_seconds > 0)
    config.timeout = std::chrono::milliseconds(static_cast<long long>(o.timeout_seconds * 1000));
  // The call starts where the caller named: --project's directory (which may
  // be below the repository's top), else the current one.
  std::string start = current_dir();
  if (char real[PATH_MAX]; !o.project.empty() && ::realpath(o.project.c_str(), real) != nullptr) start = real;
  if (auto r = workspace::add_to_config(s, start, config); !r) return refuse(r.error(), o.result_file);

  s.last_run = static_cast<std::int64_t>(std::time(nullptr));
  if (auto r = workspace::save(s); !r) return refuse(r.error(), o.result_file);
  CancelSignals cancel;
  auto child = spawn(config);
  if (!child) return refuse(child.error(), o.result_file);
  Result r = child->wait(cancel.fd());
  return finish(r, config.argv, o.result_file);
}

}  // namespace

void add_run_command(CLI::App& app, Action& action) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* cmd =
      app.add_subcommand("run", "Run one tool call in the project's workspace (a throwaway copy)");
  cmd->add_option("--project", o->project, "The project (default: the current directory)");
  cmd->add_option("--session", o->session, "Run in this session's workspace (default: a new session)");
  cmd->add_flag("--allow-dirty", o->allow_dirty, "Carry uncommitted work into a new git workspace");
  cmd->add_option("--deny", o->deny, "A project file to cover with the deny notice (repeatable)")
      ->type_size(1)
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_option("--net", o->net, "Network: none (default) or host")->check(CLI::IsMember({"none", "host"}));
  cmd->add_option("--timeout", o->timeout_seconds, "Seconds before the call is ended")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--result", o->result_file, "Write the result as JSON to this file");
  cmd->add_option("command", o->argv, "The command, after --")->required();
  cmd->positionals_at_end();
  cmd->callback([o, &action] { action = [o] { return run(*o); }; });
}

}  // namespace chock::cli
