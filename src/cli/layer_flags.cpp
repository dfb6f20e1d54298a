#include "cli/layer_flags.hpp"

#include <poll.h>
#include <unistd.h>

#include <cerrno>

#include <algorithm>
#include <cstdio>
#include <iostream>

#include "chock/workspace.hpp"
#include "mcp/ask_channel.hpp"

namespace chock::cli {

void add_layer_flags(Command sub, config::LayerOptions& options) {
  sub.add_option("--org-bundle", options.org_bundle,
                 "The organisation's policy bundle (default: /etc/chock/bundle.zon if present)")
      .type_name("PATH");
  sub.add_option(
         "--policy-rule", options.policy_rules,
         "A rule of yours that stands for the project's for this call (it replaces chock.zon's row for the "
         "same action; the organisation bundle still bounds it), e.g. "
         "net.connect.org.example.443=allow (repeatable)")
      .type_name("ACTION=DECISION")
      .type_size(1)
      .expected(1)
      .take_all();
}

Answer ask_terminal(const std::string& action, const std::string& what, bool offer_always, int cancel_fd) {
  if (::isatty(STDIN_FILENO) == 0 || ::isatty(STDERR_FILENO) == 0)
    return {false, false, policy::nobody_to_ask(action)};
  std::fprintf(stderr, "chock: %s\nchock: %s asks: go ahead? [y]es, [n]o%s: ", what.c_str(), action.c_str(),
               offer_always ? ", [a]lways for this session" : "");
  std::fflush(stderr);
  // A line typed, or the call's end (a timeout, Ctrl-C): never a wait past it.
  for (;;) {
    pollfd p[2] = {{STDIN_FILENO, POLLIN, 0}, {cancel_fd, POLLIN, 0}};
    if (::poll(p, cancel_fd >= 0 ? 2 : 1, -1) < 0) {
      if (errno == EINTR) continue;
      return {false, false, "no answer was given"};
    }
    if (cancel_fd >= 0 && p[1].revents != 0) {
      std::fprintf(stderr, "\n");
      return {false, false, "the call was ending before the question was answered"};
    }
    if (p[0].revents != 0) break;
  }
  std::string line;
  if (!std::getline(std::cin, line)) return {false, false, "no answer was given"};
  if (line == "y" || line == "Y" || line == "yes") return {true, false, ""};
  if (offer_always && (line == "a" || line == "A" || line == "always")) return {true, true, ""};
  return {false, false, "you answered no"};
}

session::Hooks::Ask terminal_ask() {
  if (::isatty(STDIN_FILENO) == 0 || ::isatty(STDERR_FILENO) == 0) return nullptr;
  return [](const std::string& action, const std::string& what, bool offer_always, int cancel_fd) {
    return ask_terminal(action, what, offer_always, cancel_fd);
  };
}

namespace {
UniqueFd& ask_channel() {
  static UniqueFd channel;
  return channel;
}
}  // namespace

void take_ask_channel() {
  ask_channel() = mcp::take_ask_channel();
}

session::Hooks::Ask person_ask() {
  if (!ask_channel()) return terminal_ask();
  return [fd = ask_channel().get()](const std::string& action, const std::string& what, bool offer_always,
                                    int cancel_fd) {
    return mcp::ask_over(fd, action, what, offer_always, cancel_fd);
  };
}

Answer ask_person(const std::string& action, const std::string& what, bool offer_always) {
  const session::Hooks::Ask ask = person_ask();
  if (!ask) return {false, false, policy::nobody_to_ask(action)};
  return ask(action, what, offer_always, -1);
}

void remember_always(const std::string& id, const std::vector<std::string>& actions) {
  auto s = workspace::load(id);
  if (!s) return;
  auto held = workspace::lock(*s, true);
  if (!held) return;
  auto fresh = workspace::load(id);
  if (!fresh) return;
  for (const auto& a : actions)
    if (std::find(fresh->always.begin(), fresh->always.end(), a) == fresh->always.end())
      fresh->always.push_back(a);
  if (auto saved = workspace::save(*fresh); !saved)
    std::fprintf(stderr, "chock: warning: could not keep the answer: %s\n", saved.error().message().c_str());
}

}  // namespace chock::cli
