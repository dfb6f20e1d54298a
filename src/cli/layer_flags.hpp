// The flags that name configuration layers, shared by every subcommand the
// policy decides: --org-bundle PATH and --policy-rule ACTION=DECISION.
#pragma once

#include <string>
#include <vector>

#include "chock/session.hpp"
#include "cli/flags.hpp"
#include "config/layers.hpp"

namespace chock::cli {

void add_layer_flags(Command sub, config::LayerOptions& options);

// Asks the person at the terminal about `action` (`y` yes, `n` no, `a` yes
// and always for this session, unless `offer_always` is false). `what` says
// what would happen; it is printed as it is, so escape what a call wrote.
using Answer = session::Answer;
// `cancel_fd` (or -1): readable, the question is moot (the call is ending) and the answer no.
[[nodiscard]] Answer ask_terminal(const std::string& action, const std::string& what,
                                  bool offer_always = true, int cancel_fd = -1);

// ask_terminal where stdin and stderr are a terminal, else unset (nobody to ask).
[[nodiscard]] session::Hooks::Ask terminal_ask();

// Run by `chock mcp` for a tool call (memory, fetch, apply), this command's
// questions go back to it on the ask channel it was handed
// (mcp/ask_channel.hpp), and the person answers through the MCP client.
// Taken once at start, before anything runs.
void take_ask_channel();
// The channel when there is one, else terminal_ask().
[[nodiscard]] session::Hooks::Ask person_ask();
// Asks through person_ask(); nobody to ask is a refusal naming the row to add.
[[nodiscard]] Answer ask_person(const std::string& action, const std::string& what, bool offer_always = true);

// The person answered `a`: `actions` are answered yes for the rest of
// session `id` (kept in its session.json, under its lock). A failure is a
// warning: the answer given still stands for this command.
void remember_always(const std::string& id, const std::vector<std::string>& actions);

}  // namespace chock::cli
