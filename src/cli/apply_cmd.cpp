// chock apply [SESSION] [--mode merge|rebase|squash] [--yes]
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include "chock/workspace.hpp"
#include "cli/command.hpp"

namespace chock::cli {

namespace {

struct ApplyOptions {
  std::string session;
  std::string mode = "merge";
  bool yes = false;
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

workspace::Approval ask(const workspace::ApplyPlan& plan, bool yes) {
  if (yes) return {true, ""};
  if (::isatty(STDIN_FILENO) == 0 || ::isatty(STDERR_FILENO) == 0)
    return {false, "there is no terminal to ask and --yes was not given; to apply, run 'chock apply " +
                       plan.session + " --yes'"};
  std::fprintf(stderr, "chock: %sApply? [y/N] ", describe(plan).c_str());
  std::fflush(stderr);
  std::string line;
  if (!std::getline(std::cin, line)) return {false, "no answer was given"};
  if (line == "y" || line == "Y" || line == "yes") return {true, ""};
  return {false, "you answered no"};
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
  bool yes = o.yes;
  auto outcome =
      workspace::apply(id, *mode, [yes](const workspace::ApplyPlan& plan) { return ask(plan, yes); });
  if (!outcome) {
    std::fprintf(stderr, "chock: %s\n", outcome.error().message().c_str());
    return outcome.error().kind == Errc::bad_config ? 2 : 1;
  }
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
  cmd->add_flag("--yes", o->yes, "Apply without asking");
  cmd->callback([o, &action] { action = [o] { return apply(*o); }; });
}

}  // namespace chock::cli
