// The questions of a `chock` command that `chock mcp` runs as a child of
// its own (`chock memory write`, `chock fetch`, `chock apply`: see
// self_call.hpp) go back to the server on a socket, and the server asks the
// person through its client. The child finds the socket's descriptor in
// CHOCK_ASK_FD, takes it at start (the variable unset, the descriptor
// closed on exec), so no program the command runs inherits either.
// One question a message (SOCK_SEQPACKET), one answer back, JSON both.
#pragma once

#include <string>

#include "chock/session.hpp"
#include "util/fd.hpp"

namespace chock::mcp {

inline constexpr const char* kAskChannelVariable = "CHOCK_ASK_FD";
// The longest `what` sent; a longer one is cut (an apply of many paths).
inline constexpr std::size_t kMaxQuestionBytes = 32U << 10;

// The child's side: the channel handed over in the environment, taken once
// (later calls get an empty descriptor). Anything but a Unix socket there is
// not a channel and is left alone.
[[nodiscard]] UniqueFd take_ask_channel();
// Asks over the channel (borrowed). A channel that fails is a refusal that
// says so; `cancel_fd` readable ends the wait with a no.
[[nodiscard]] session::Answer ask_over(int channel, const std::string& action, const std::string& what,
                                       bool offer_always, int cancel_fd);

// The server's side: reads one question from `channel` and answers it with
// `ask`. False once the channel has ended (the child is gone).
bool answer_one(int channel, const session::Hooks::Ask& ask);

}  // namespace chock::mcp
