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

namespace chock::cli {

namespace {

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

std::string describe(const workspace::ApplyPlan& plan) {
  static constexpr const char* kModes[] = {"merge", "rebase", "squash"};
  std::string how = plan.fast_forward && plan.mode != workspace::Mode::squash
                        ? "fast-forward"
                        : kModes[static_cast<int>(plan.mode)];
  std::string out = "apply " + std::to_string(plan.commits.size()) + " commit(s) of session " + plan.session +
                    " onto " + plan.branch + " in " + plan.project + " (" + how + "):\n";
  for (const auto& c : plan.commits) out += "  " + c + "\n";
  return out;
}

workspace::Approval decide(const workspace::ApplyPlan& plan, const policy::Answer& answer,
                           const workspace::Session& session, bool yes, bool& always) {
  const std::string where = answer.deciding_rule ? " by " + answer.deciding_rule->origin : std::string();
  switch (answer.decision) {
    case policy::Decision::allow:
      return {true, ""};
    case policy::Decision::deny:
      return {false, std::string(policy::kWorkspaceApply) + " is denied" + where};
    case policy::Decision::ask:
      break;
  }
  if (yes) return {true, ""};
  if (std::find(session.always.begin(), session.always.end(), policy::kWorkspaceApply) !=
      session.always.end())
    return {true, ""};
  Answer said = ask_terminal(policy::kWorkspaceApply, describe(plan));
  always = said.always;
  if (said.approved) return {true, ""};
  return {false, said.refusal + " (or answer in advance: chock apply " + plan.session + " --yes)"};
}

// The person answered `a`: this session applies without asking again.
void remember_always(const std::string& id) {
  auto s = workspace::load(id);
  if (!s) return;
  auto held = workspace::lock(*s, true);
  if (!held) return;
  auto fresh = workspace::load(id);
  if (!fresh) return;
  if (std::find(fresh->always.begin(), fresh->always.end(), policy::kWorkspaceApply) == fresh->always.end())
    fresh->always.emplace_back(policy::kWorkspaceApply);
  if (auto saved = workspace::save(*fresh); !saved)
    std::fprintf(stderr, "chock: warning: could not keep the answer: %s\n", saved.error().message().c_str());
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
    return 2;
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
    return outcome.error().kind == Errc::bad_config ? 2 : 1;
  }
  if (always) remember_always(id);
  log_integrate(*session, *outcome, answer);
  // Every line of the message is Chock's, and says so.
  std::string text = outcome->message;
  for (std::size_t at = text.find('\n'); at != std::string::npos; at = text.find('\n', at + 1))
    text.replace(at, 1, "\nchock: ");
  std::fprintf(stderr, "chock: %s\n", text.c_str());
  return outcome->state == workspace::ApplyOutcome::State::refused ? 1 : 0;
}

}  // namespace

void add_apply_command(CLI::App& app, Action& action) {
  auto o = std::make_shared<ApplyOptions>();
  CLI::App* cmd = app.add_subcommand("apply", "Bring a session's commits onto the checked-out branch");
  cmd->add_option("session", o->session, "The session (default: the one of this project with commits)");
  cmd->add_option("--mode", o->mode, "merge (default), rebase or squash, when the branch has moved")
      ->check(CLI::IsMember({"merge", "rebase", "squash"}));
  cmd->add_flag("--yes", o->yes, "Answer yes when the policy asks (a deny still refuses)");
  add_layer_flags(*cmd, o->layers);
  cmd->callback([o, &action] { action = [o] { return apply(*o); }; });
}

}  // namespace chock::cli
