#include <unistd.h>
#include <CLI/CLI.hpp>

#include <cstdio>
#include <string>
#include <utility>

#include "cli/command.hpp"
#include "cli/layer_flags.hpp"
#include "version.inc"  // generated: CHOCK_VERSION, CHOCK_COMMIT

namespace {

// CLI11 prints a usage page on error; a user wants one line saying what was
// wrong and where to look.
int usage_error(const CLI::App& app, const CLI::ParseError& e, const char* subcommand) {
  std::string where = subcommand != nullptr ? std::string("chock ") + subcommand : std::string("chock");
  std::fprintf(stderr, "chock: %s (see '%s --help')\n", e.what(), where.c_str());
  (void)app;
  // Under run and sandbox the program's own codes are reserved; 125 says
  // Chock refused before anything ran.
  if (subcommand != nullptr && (std::string(subcommand) == "sandbox" || std::string(subcommand) == "run"))
    return chock::cli::kExitChockFailed;
  return 2;
}

using AddCommand = void (*)(chock::cli::Command, chock::cli::Action&);
constexpr std::pair<const char*, AddCommand> kSubcommands[] = {
    {"sandbox", chock::cli::add_sandbox_command},
    {"run", chock::cli::add_run_command},
    {"apply", chock::cli::add_apply_command},
    {"workspace", chock::cli::add_workspace_command},
    {"policy", chock::cli::add_policy_command},
    {"sessions", chock::cli::add_sessions_command},
    {"doctor", chock::cli::add_doctor_command},
    {"fetch", chock::cli::add_fetch_command},
    {"cache", chock::cli::add_cache_command},
    {"toolchain", chock::cli::add_toolchain_command},
    {"credentials", chock::cli::add_credentials_command},
    {"memory", chock::cli::add_memory_command},
    {"memory-tool", chock::cli::add_memory_tool_command},
    {"tasks", chock::cli::add_tasks_command},
    {"mcp", chock::cli::add_mcp_command},
    {"completion", chock::cli::add_completion_command},
};

}  // namespace

void chock::cli::add_every_command(Command app, Action& action) {
  for (const auto& entry : kSubcommands) entry.second(app, action);
}

namespace {

int run_main(int argc, char** argv) {
  chock::cli::take_ask_channel();
  CLI::App app{"chock: a sandbox for AI-agent tool calls", "chock"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "chock " CHOCK_VERSION " (commit " CHOCK_COMMIT ")");
  chock::cli::Action action;
  // Building a subcommand's options costs start-up time on every call (and
  // `chock sandbox` is timed against bwrap): when argv[1] names one, only that
  // one is built. Anything else (--help, a typo) gets them all, so the usage
  // page and CLI11's own errors are what they always were.
  const std::string first = argc > 1 ? argv[1] : "";
  bool named = false;
  for (const auto& [name, add] : kSubcommands) {
    if (first == name) {
      add(chock::cli::Command(app), action);
      named = true;
    }
  }
  if (!named) {
    for (const auto& entry : kSubcommands) entry.second(chock::cli::Command(app), action);
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    const char* sub = argc > 1 && argv[1][0] != '-' ? argv[1] : nullptr;
    return usage_error(app, e, sub);
  }
  const int status = action ? action() : 0;
  // What is left is memory (the app, its options, static objects): freeing
  // it piece by piece costs start-up time, which is measured against bwrap,
  // and the kernel takes it back at once. Every descriptor, lock and
  // workspace the action held was released when it returned.
  std::fflush(nullptr);
  _exit(status);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run_main(argc, argv);
  } catch (const std::exception& e) {
    // Errors travel as values; this is the net under a bug, not a path.
    std::fprintf(stderr, "chock: internal error: %s\n", e.what());
    return chock::cli::kExitChockFailed;
  }
}
