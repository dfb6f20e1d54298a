#include "session/ending.hpp"

#include <fcntl.h>
#include <spawn.h>

#include <cstring>

#include "log/session_log.hpp"
#include "util/dirs.hpp"
#include "util/escape.hpp"

extern char** environ;

namespace chock::session {

void start_sweeper(const std::function<void(const std::string&)>& say) {
  auto helper = companion("chock-helper");
  if (!helper) {
    say("warning: the trash is deleted later: " + helper.error().message());
    return;
  }
  posix_spawn_file_actions_t files;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&files);
  posix_spawnattr_init(&attr);
  for (int fd = 0; fd <= 2; ++fd) posix_spawn_file_actions_addopen(&files, fd, "/dev/null", O_RDWR, 0);
  // Its own session: a terminal's hangup or Ctrl-C aimed at the caller does not reach it.
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID);
  char arg0[] = "chock-helper";
  char sweep[] = "sweep";
  char* argv[] = {arg0, sweep, nullptr};
  pid_t pid = 0;
  const int rc = ::posix_spawn(&pid, helper->c_str(), &files, &attr, argv, environ);
  posix_spawn_file_actions_destroy(&files);
  posix_spawnattr_destroy(&attr);
  if (rc != 0)
    say(std::string("warning: the trash is deleted later: start its sweeper: ") + std::strerror(rc));
  // Not waited for: in a session of its own, it goes on as init's (or the
  // caller's subreaper's) child, after a chock that ends right away.
}

bool end_one_call(const workspace::Session& s, const std::function<void(const std::string&)>& say) {
  auto end = workspace::remove_if_empty(s.id);
  if (!end) {
    say("session " + s.id + " kept: " + printable(end.error().message()));
    return false;
  }
  if (end->removed) {
    start_sweeper(say);
    if (auto log = log::SessionLog::open(s.project, s.id); log)
      (void)log->append(log::event::kSessionEnd, {{"removed", true}, {"reason", "nothing to keep"}});
    say("session " + s.id + " removed: its call left " +
        (s.kind == workspace::Kind::git ? "no commit" : "no change") + " (--keep keeps a session)");
    return true;
  }
  const std::string pending = std::to_string(end->pending);
  if (!end->problem.empty())
    say("session " + s.id + " kept: " + printable(end->problem));
  else if (s.kind == workspace::Kind::git)
    say("session " + s.id + " kept: " + pending + " commit(s) not applied; `chock apply " + s.id +
        "` applies those of its HEAD, --session " + s.id + " continues it");
  else
    say("session " + s.id + " kept: " + pending + " changed path(s); `chock workspace adopt " + s.id +
        "` copies them out, --session " + s.id + " continues it");
  return false;
}

}  // namespace chock::session
