// chock apply [SESSION] [--mode merge|rebase|squash] [--yes]
//             [--org-bundle PATH] [--policy-rule ACTION=DECISION]...
// The workspace.apply row of the policy decides; --yes answers yes when it asks.
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include "chock/workspace.hpp"
#include "cli/command.hpp"
#include "cli/layer_flags.hpp"
#include "log/session_log.hpp"
#include "util/escape.hpp"

namespace chock::cli {

namespace {

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    lines.push_back(text.substr(pos, nl - pos));
    pos = nl + 1;
  }
  return lines;
}

struct ApplyOptions {
  std::string session;
  std::string mode = "merge";
  bool yes = false;
  config::LayerOptions layers;
};

std::string real_cwd() {
  char buf[PATH_MAX];
  if (::getcwd(buf, sizeof buf) == nullptr) return "";
  char real[PATH_MAX];
  return ::realpath(buf, real) != nullptr ? std::string(real) : std::string(buf);
}

bool within(const std::string& path, const std::string& dir) {
  return path == dir ||
         (path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 && path[dir.size()] == '/');
}

// Without SESSION: the one git session of this project with commits to apply.
Expected<std::string> pick_session() {
  auto all = workspace::list();
  if (!all) return std::move(all).error();
  std::string cwd = real_cwd();
  std::vector<std::string> candidates;
  for (const auto& info : *all)
    if (info.session.kind == workspace::Kind::git && info.pending > 0 && within(cwd, info.session.project))
      candidates.push_back(info.session.id);
  if (candidates.size() == 1) return candidates[0];
  if (candidates.empty())
    return Error{"no session of this project has commits to apply (chock workspace list shows the sessions)",
                 "", 0};
  std::string names;
  for (const auto& c : candidates) names += " " + c;
  return Error{"several sessions have commits to apply:" + names + "; name one", "", 0};
}

// The question, every string from the session escaped: subjects and paths are the call's words.
std::string describe(const workspace::ApplyPlan& plan) {
  static constexpr const char* kModes[] = {"merge", "rebase", "squash"};
  std::string how = plan.fast_forward && plan.mode != workspace::Mode::squash
                        ? "fast-forward"
                        : kModes[static_cast<int>(plan.mode)];
  std::string out = "apply " + std::to_string(plan.commits.size()) + " commit(s) of session " + plan.session +
                    " onto " + printable(plan.branch) + " in " + printable(plan.project) + " (" + how +
                    "):\n";
  for (const auto& c : plan.commits) out += "  " + printable(c) + "\n";
  out += "changing " + std::to_string(plan.paths.size()) + " path(s):\n";
  for (const auto& p : plan.paths) out += "  " + printable(p) + "\n";
  if (!plan.configuration.empty()) {
    out +=
        "these commits change the project's configuration (its policy, its toolchain evaluated on the "
        "host, or an agent's MCP servers and chock mcp's rules), what every later call gets:\n";
    for (const auto& line : split_lines(plan.configuration_diff)) out += "  | " + printable(line) + "\n";
  }
  return out;
}

// A range that changes chock.zon needs its own yes on a terminal: a policy
// row, --yes or an earlier `always` would let a call rewrite the rules of
// the calls after it.
workspace::Approval confirm_configuration(const workspace::ApplyPlan& plan) {
  std::string files;
  for (const auto& f : plan.configuration) files += (files.empty() ? "" : ", ") + printable(f);
  Answer said =
      ask_terminal(policy::kWorkspaceApply, describe(plan) + "apply the change to " + files + "?", false);
  if (said.approved) return {true, "", true};
  if (::isatty(STDIN_FILENO) == 0 || ::isatty(STDERR_FILENO) == 0)
    return {false, "the commits change " + files +
                       " (the configuration of every later call: its policy, its toolchain evaluated on "
                       "the host, or an agent's MCP servers and chock mcp's rules), which is applied only on "
                       "a terminal after its diff was shown; no policy row or --yes stands in for that"};
  return {false, said.refusal};
}

workspace::Approval decide(const workspace::ApplyPlan& plan, const policy::Answer& answer,
                           const workspace::Session& session, bool yes, bool& always) {
  const std::string where = answer.deciding_rule ? " by " + answer.deciding_rule->origin : std::string();
  if (answer.decision == policy::Decision::deny)
    return {false, std::string(policy::kWorkspaceApply) + " is denied" + where};
  if (!plan.configuration.empty()) return confirm_configuration(plan);
  if (answer.decision == policy::Decision::allow) return {true, ""};
  if (yes) return {true, ""};
  if (std::find(session.always.begin(), session.always.end(), policy::kWorkspaceApply) !=
      session.always.end())
    return {true, ""};
  Answer said = ask_person(policy::kWorkspaceApply, describe(plan));
  always = said.always;
  if (said.approved) return {true, ""};
  return {false, said.refusal + " (or answer in advance: chock apply " + plan.session + " --yes)"};
}

void log_integrate(const workspace::Session& s, const workspace::ApplyOutcome& outcome,
                   const policy::Answer& answer) {
  static constexpr const char* kStates[] = {"applied", "nothing", "refused"};
  auto opened = log::SessionLog::open(s.project, s.id);
  if (!opened) return;
  (void)opened->append("workspace.integrate",
                       {{"state", kStates[static_cast<int>(outcome.state)]},
                        {"commit", outcome.commit},
                        {"workspace_apply", policy::decision_name(answer.decision)},
                        {"layer", policy::layer_name(answer.deciding_layer)},
                        {"rule", answer.deciding_rule ? answer.deciding_rule->origin : std::string()}});
}

int apply(const ApplyOptions& o) {
  auto mode = workspace::parse_mode(o.mode);
  if (!mode) {
    std::fprintf(stderr, "chock: %s\n", mode.error().message().c_str());
    return 2;
  }
  std::string id = o.session;
  if (id.empty()) {
    auto picked = pick_session();
    if (!picked) {
      std::fprintf(stderr, "chock: %s\n", picked.error().message().c_str());
      return 1;
    }
    id = *picked;
  }
  auto session = workspace::load(id);
  if (!session) {
    std::fprintf(stderr, "chock: %s\n", session.error().message().c_str());
    return exit_status_for(session.error(), 2);
  }
  config::LayerOptions layer_options = o.layers;
  layer_options.project_dir = session->project;
  auto layers = config::load_layers(layer_options);
  if (!layers) {
    std::fprintf(stderr, "chock: %s\n", layers.error().message().c_str());
    return 2;
  }
  policy::Answer answer = layers->table.decide(policy::kWorkspaceApply);
  bool always = false;
  auto outcome = workspace::apply(id, *mode, [&](const workspace::ApplyPlan& plan) {
    return decide(plan, answer, *session, o.yes, always);
  });
  if (!outcome) {
    std::fprintf(stderr, "chock: %s\n", outcome.error().message().c_str());
    return exit_status_for(outcome.error(), outcome.error().kind == Errc::bad_config ? 2 : 1);
  }
  if (always) remember_always(id, {policy::kWorkspaceApply});
  log_integrate(*session, *outcome, answer);
  // Every line of the message is Chock's, and says so.
  std::string text = outcome->message;
  for (std::size_t at = text.find('\n'); at != std::string::npos; at = text.find('\n', at + 1))
    text.replace(at, 1, "\nchock: ");
  std::fprintf(stderr, "chock: %s\n", text.c_str());
  return outcome->state == workspace::ApplyOutcome::State::refused ? 1 : 0;
}

}  // namespace

void add_apply_command(Command app, Action& action) {
  auto o = std::make_shared<ApplyOptions>();
  Command cmd = app.add_subcommand("apply", "Bring a session's commits onto the checked-out branch");
  cmd.add_option("session", o->session, "The session (default: the one of this project with commits)");
  cmd.add_option("--mode", o->mode, "merge (default), rebase or squash, when the branch has moved")
      .check(Check::one_of({"merge", "rebase", "squash"}));
  cmd.add_flag("--yes", o->yes, "Answer yes when the policy asks (a deny still refuses)");
  add_layer_flags(cmd, o->layers);
  cmd.callback([o, &action] { action = [o] { return apply(*o); }; });
}

}  // namespace chock::cli
