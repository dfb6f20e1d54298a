#include "sandbox/program_hints.hpp"

namespace chock::program_hints {
namespace {

bool starts_with(const char* s, const char* prefix) noexcept {
  for (; *prefix != '\0'; ++s, ++prefix)
    if (*s != *prefix) return false;
  return true;
}

bool equals(const char* a, const char* b) noexcept {
  for (; *a != '\0' && *a == *b; ++a, ++b) {
  }
  return *a == *b;
}

}  // namespace

Kind kind_of(const char* program) noexcept {
  if (program == nullptr) return Kind::other;
  // Debian's chromium, Google's chrome, chrome-headless-shell, and the
  // Electron builds that keep the name.
  if (starts_with(program, "chrom") || starts_with(program, "headless_shell") || equals(program, "electron"))
    return Kind::chromium;
  if (equals(program, "node") || equals(program, "nodejs")) return Kind::node;
  if (starts_with(program, "firefox")) return Kind::firefox;
  if (equals(program, "bwrap")) return Kind::bubblewrap;
  return Kind::other;
}

const char* without_jit(Kind kind) noexcept {
  switch (kind) {
    case Kind::chromium:
      return "Chromium's own switch to run without one, `--js-flags=--jitless`";
    case Kind::node:
      return "Node's own switch to run without one, `node --jitless`";
    case Kind::firefox:
      return "nothing else: Firefox has no switch that runs it without one";
    case Kind::bubblewrap:
    case Kind::other:
      break;
  }
  return "its own switch to run without one (`node --jitless`, Chromium's `--js-flags=--jitless`)";
}

const char* without_own_sandbox(Kind kind) noexcept {
  switch (kind) {
    case Kind::chromium:
      return "Chromium's `--no-sandbox` (Playwright passes it unless `chromiumSandbox: true`; Puppeteer "
             "takes it in `args`)";
    case Kind::bubblewrap:
      return "a coding agent's bubblewrap is turned off by the agent's own setting (docs/agents.md says "
             "which, per agent)";
    case Kind::firefox:
      return "Firefox goes on without its own and needs nothing";
    case Kind::node:
    case Kind::other:
      break;
  }
  return "the program's own switch for it (docs/agents.md names the coding agents')";
}

}  // namespace chock::program_hints
