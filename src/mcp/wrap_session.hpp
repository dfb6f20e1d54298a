// The session a wrapped MCP server runs in (`chock mcp wrap`, wrap.hpp), as
// the relay sees it when the server's run ends: the work it holds, and the
// words that tell the client (and the person behind it) how to take that
// work back or continue the session.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "chock/workspace.hpp"
#include "config/layers.hpp"

namespace chock::mcp {

// What a session holds that a person may want.
struct Held {
  std::uint64_t commits = 0;             // git: commits not yet applied
  std::vector<std::string> uncommitted;  // git: paths changed or new and not committed (escaped)
  std::uint64_t changed = 0;             // overlay: changed paths not adopted
  std::string problem;                   // set: what could not be counted
  [[nodiscard]] bool any() const { return commits > 0 || !uncommitted.empty() || changed > 0; }
};

// A git session's commits and uncommitted changes, read by git inside a
// call of the session (its repository is the calls' writing, never read by
// the host's git); an overlay session's changed paths.
[[nodiscard]] Held held_by(const workspace::Session& s, const config::LayerOptions& layers);

// A git session's uncommitted changes in words, with the commands that
// commit and apply them: "2 uncommitted change(s) (a.txt, b.txt); ...".
[[nodiscard]] std::string uncommitted_words(const std::string& id, const std::vector<std::string>& paths);

// The line said when a server's run in a session that lasts (--keep,
// --session) ends: the session, what it holds and how to take it back,
// and how to continue it. Without "chock: ".
[[nodiscard]] std::string kept_line(const workspace::Session& s, const Held& held, const std::string& server);

}  // namespace chock::mcp
