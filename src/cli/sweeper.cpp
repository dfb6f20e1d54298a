#include "cli/sweeper.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <optional>

#include "chock/workspace.hpp"
#include "config/chock_zon.hpp"

extern char** environ;

namespace chock::cli {

namespace {

constexpr std::int64_t kUnusedBaseSeconds = std::int64_t{7} * 86400;

}  // namespace

void start_sweeper() {
  posix_spawn_file_actions_t files;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&files);
  posix_spawnattr_init(&attr);
  for (int fd = 0; fd <= 2; ++fd) posix_spawn_file_actions_addopen(&files, fd, "/dev/null", O_RDWR, 0);
  // Its own session: a terminal's hangup or Ctrl-C aimed at the caller does not reach it.
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID);
  char self[] = "/proc/self/exe";
  char arg0[] = "chock";
  char ws[] = "workspace";
  char sweep[] = "sweep";
  char* argv[] = {arg0, ws, sweep, nullptr};
  pid_t pid = 0;
  const int rc = ::posix_spawn(&pid, self, &files, &attr, argv, environ);
  posix_spawn_file_actions_destroy(&files);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    std::fprintf(stderr, "chock: warning: the trash is deleted later: start its sweeper: %s\n",
                 std::strerror(rc));
    return;
  }
  // Not waited for: chock ends right after a removal, and the sweeper, in a
  // session of its own, goes on as init's (or the caller's subreaper's) child.
}

void add_sweep_command(CLI::App& workspace, Action& action) {
  CLI::App* cmd = workspace.add_subcommand("sweep", "");  // no description: not for people
  cmd->group("");
  cmd->callback([&action] {
    action = [] {
      (void)::setpriority(PRIO_PROCESS, 0, 10);
      // Bases no session has used for a week go with it (workspace gc does it
      // now), and past the operator's .bases_max_size the least recently used.
      std::optional<std::uint64_t> max_bytes;
      if (auto operator_file = config::read_operator(); operator_file)
        max_bytes = operator_file->bases_max_bytes;
      else
        std::fprintf(stderr, "chock: %s\n", operator_file.error().message().c_str());
      if (auto old = workspace::collect_bases(kUnusedBaseSeconds, max_bytes); !old)
        std::fprintf(stderr, "chock: %s\n", old.error().message().c_str());
      auto swept = workspace::sweep_trash();
      if (!swept) {
        std::fprintf(stderr, "chock: %s\n", swept.error().message().c_str());
        return 1;
      }
      return 0;
    };
  });
}

}  // namespace chock::cli
