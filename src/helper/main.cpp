// chock-helper: the processes a session keeps beside its calls, as a
// program of Chock's own (libexec/chock/), so that no library code ever
// re-executes the program that embeds it (chock, chock mcp, an embedder):
//   chock-helper hold-overlay ...   a session's overlay holder (sandbox/overlay_holder.hpp)
//   chock-helper sweep              the trash's sweeper (session/ending.hpp)
//   chock-helper task SESSION NN    a background call's runner (session/tasks.hpp)
//   chock-helper file-tool          the MCP file tools' fixed program, inside their call
// None of it is for people: each is started only the way its module starts it.
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include "chock/workspace.hpp"
#include "config/chock_zon.hpp"
#include "mcp/file_tool.hpp"
#include "sandbox/overlay_holder.hpp"
#include "session/tasks.hpp"

namespace {

constexpr std::int64_t kUnusedBaseSeconds = std::int64_t{7} * 86400;

// Deletes what removals renamed into the trash; bases no session used for a
// week go with it, and past the operator's .bases_max_size the least
// recently used.
int sweep() {
  (void)::setpriority(PRIO_PROCESS, 0, 10);
  std::optional<std::uint64_t> max_bytes;
  if (auto operator_file = chock::config::read_operator(); operator_file)
    max_bytes = operator_file->bases_max_bytes;
  else
    std::fprintf(stderr, "chock: %s\n", operator_file.error().message().c_str());
  if (auto old = chock::workspace::collect_bases(kUnusedBaseSeconds, max_bytes); !old)
    std::fprintf(stderr, "chock: %s\n", old.error().message().c_str());
  auto swept = chock::workspace::sweep_trash();
  if (!swept) {
    std::fprintf(stderr, "chock: %s\n", swept.error().message().c_str());
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  try {
    if (mode == chock::sandbox::kHoldOverlayArg) return chock::sandbox::overlay_holder_main(argc, argv);
    if (mode == "sweep" && argc == 2) return sweep();
    if (mode == "task" && argc == 4) {
      char* end = nullptr;
      const long n = std::strtol(argv[3], &end, 10);
      if (*end != '\0' || n < 1 || n > chock::session::kMaxTasks) return 2;
      return chock::session::run_task(argv[2], static_cast<int>(n));
    }
    if (mode == "file-tool" && argc == 2) return chock::mcp::file_tool_main();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "chock-helper: internal error: %s\n", e.what());
    return 125;
  }
  std::fprintf(stderr, "chock-helper: a program of Chock's own, started only by Chock\n");
  return 2;
}
