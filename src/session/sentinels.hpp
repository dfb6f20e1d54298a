// Credentials stood for in a session's filtered calls: each credential that
// names a variable (`chock credentials set HOST --env VAR`) gives the call
// VAR holding a sentinel, of the secret's length and public prefix, made
// once for the session and kept in <session>/sentinels.json (the session's
// directory, which no call sees). The secret itself reaches no call: the
// host side's relay puts it in place of the sentinel on the wire to that
// host alone.
#pragma once

#include <string>
#include <vector>

#include "chock/workspace.hpp"
#include "net/credentials.hpp"

namespace chock::session {

struct StoodFor {
  net::Credential credential;
  std::string sentinel;
};

// Every credential with a variable, and this session's sentinel for it (made
// now if the session has none, or if the secret's shape has changed since).
[[nodiscard]] Expected<std::vector<StoodFor>> session_sentinels(const workspace::Session& session);

}  // namespace chock::session
