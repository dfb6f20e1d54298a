// libFuzzer: arbitrary bytes into the ZON reader and the three schema
// readers. Any crash, sanitizer report or hang is a bug; so is an error
// message that does not name its position.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "config/chock_zon.hpp"
#include "config/zon.hpp"

namespace {

// Every refusal is "path:line:col: error: ..." (or "path:line:col: ..." from
// a schema reader); anything else means an error escaped without a position.
void check_positioned(const chock::Error& error, std::string_view path) {
  const std::string& m = error.what;
  if (m.compare(0, path.size(), path) != 0 || m.find(": error: ") == std::string::npos) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace chock::config;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (auto v = chock::zon::parse(text, "fuzz.zon"); !v) check_positioned(v.error(), "fuzz.zon");
  // "/" as the project: entries that name real directories (etc, usr) take
  // the lstat path too; lstat only looks.
  auto project = parse_project(text, "/p/chock.zon", "/");
  if (!project) check_positioned(project.error(), "/p/chock.zon");
  auto op = parse_operator(text, "/h/config.zon");
  if (!op) check_positioned(op.error(), "/h/config.zon");
  auto bundle = parse_bundle(text, "/b.zon");
  if (!bundle) check_positioned(bundle.error(), "/b.zon");
  if (project && project->deny_read.size() > kMaxDenyRead) std::abort();
  // The ratchet over whatever was read: at most one notice a limit, and
  // never a result above a ceiling.
  const LimitsSpec none;
  const Machine machine{3, 7ULL << 30};
  const LimitsSpec& ceiling = bundle ? bundle->limits : none;
  auto effective = ratchet(project ? project->limits : none, op ? op->limits : none, ceiling, machine);
  if (effective.notices.size() > 2) std::abort();
  if (ceiling.memory && effective.memory_bytes &&
      *effective.memory_bytes > resolve_memory(*ceiling.memory, machine))
    std::abort();
  if (ceiling.processes && effective.processes &&
      *effective.processes > resolve_processes(*ceiling.processes, machine))
    std::abort();
  return 0;
}
