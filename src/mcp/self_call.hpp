// A tool call of `chock mcp` that is a `chock` command of its own (`chock
// memory`, `chock fetch`, `chock apply`), run as a child process: it gets
// the command line's whole path (session lock, policy, log), and nothing it
// prints can reach the protocol's stdout.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "chock/error.hpp"
#include "chock/session.hpp"

namespace chock::mcp {

// The first bytes of a stream, and how many there were in all.
struct Captured {
  std::string head;
  std::uint64_t total = 0;
  [[nodiscard]] std::uint64_t cut() const { return total - head.size(); }
};

struct SelfCall {
  std::string chock;              // the binary
  std::vector<std::string> args;  // after argv[0]
  std::string input;              // its stdin (then closed)
  std::string cwd;                // where it starts (a session's project: `chock run` checks it is there)
  std::size_t cap = 64U << 10;    // kept of each stream
  // Set: the command's policy questions come back on an ask channel
  // (ask_channel.hpp) and are answered with it; unset: it has nobody to ask.
  session::Hooks::Ask ask;
};

struct SelfResult {
  int exit_status = 0;  // 128+N for a signal
  Captured out, err;
};

// Runs it to the end. The child has no terminal (a session of its own), so
// nothing it runs asks at one, and it gets SIGTERM if this process dies.
[[nodiscard]] Expected<SelfResult> call_self(const SelfCall& call);

}  // namespace chock::mcp
