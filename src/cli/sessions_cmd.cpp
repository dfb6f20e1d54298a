// chock sessions verify SESSION: walks the session log's chain of hashes.
#include <cstdio>
#include <memory>
#include <string>

#include "cli/command.hpp"
#include "log/session_log.hpp"

namespace chock::cli {

namespace {

int verify(const std::string& session) {
  auto path = log::find_log(session);
  if (!path) {
    std::fprintf(stderr, "chock: %s\n", path.error().message().c_str());
    return exit_status_for(path.error(), 2);
  }
  auto checked = log::verify(*path);
  if (!checked) {
    std::fprintf(stderr, "chock: %s\n", checked.error().message().c_str());
    return 2;
  }
  if (!checked->ok) {
    std::fprintf(stderr, "chock: %s: %s\n", path->c_str(), checked->problem.c_str());
    return 1;
  }
  std::printf("%s: %zu lines, the chain is whole%s\n", path->c_str(), checked->lines,
              checked->head_behind ? " (its head file is one line behind: a write of it did not finish, the "
                                     "disk full or chock stopped; the next line brings it up to date)"
                                   : "");
  return 0;
}

}  // namespace

void add_sessions_command(Command app, Action& action) {
  auto session = std::make_shared<std::string>();
  Command cmd = app.add_subcommand("sessions", "Check the session logs");
  cmd.require_subcommand(1);
  Command v = cmd.add_subcommand("verify", "Check that no line of a session's log was edited or removed");
  v.add_option("session", *session, "The session id").required();
  v.callback([session, &action] { action = [session] { return verify(*session); }; });
}

}  // namespace chock::cli
