// chock as a command-line tool: its version, its completion scripts (loaded
// by real shells), and a binary built the way Debian hardens its packages.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli_env.hpp"

namespace chock::test {
namespace {

// What bash offers for the words typed so far, the last one being completed.
std::string bash_completes(const std::string& line) {
  RunOptions o;
  o.env = {{"CHOCK", chock_binary()}, {"LINE", line}};
  Output out =
      run_process({"bash", "--norc", "-c",
                   "source <(\"$CHOCK\" completion bash) || exit 3; read -ra COMP_WORDS <<<\"$LINE\"; "
                   "[[ $LINE == *' ' ]] && COMP_WORDS+=(''); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _chock; "
                   "printf '%s\\n' \"${COMPREPLY[@]}\""},
                  o);
  EXPECT_EQ(out.status, 0) << out.err;
  return out.out;
}

TEST(Cli, VersionNamesTheCommitItWasBuiltFrom) {
  Output v = chock({"--version"});
  EXPECT_EQ(v.status, 0);
  EXPECT_TRUE(v.out.starts_with("chock 0.1.0 (commit ")) << v.out;
  Output head = run_process(
      {"git", "-c", "safe.directory=*", "-C", CHOCK_SOURCE_DIR, "rev-parse", "--short=12", "HEAD"});
  if (head.status != 0) GTEST_SKIP() << "the source is not a git checkout: the commit is \"unknown\"";
  EXPECT_NE(v.out.find(head.out.substr(0, 12)), std::string::npos) << v.out << " vs " << head.out;
}

TEST(Cli, BashCompletesSubcommandsOptionsAndPolicyActions) {
  EXPECT_EQ(bash_completes("chock wo"), "workspace\n");
  EXPECT_EQ(bash_completes("chock workspace re"), "remove\n");
  EXPECT_NE(bash_completes("chock run --ses").find("--session"), std::string::npos);
  EXPECT_NE(bash_completes("chock mcp wrap --").find("--env"), std::string::npos);
  EXPECT_NE(bash_completes("chock sandbox --policy-rule sandbox.").find("sandbox.jit="), std::string::npos);
  EXPECT_EQ(bash_completes("chock run --policy-rule toolchain."), "toolchain.nix=\n");
  EXPECT_EQ(bash_completes("chock toolchain al"), "allow\n");
  EXPECT_NE(bash_completes("chock toolchain status --").find("--project"), std::string::npos);
  // Chock's own hidden subcommands and options are not offered.
  EXPECT_EQ(bash_completes("chock file").find("file-tool"), std::string::npos);
  EXPECT_EQ(bash_completes("chock run --prog").find("--program-stderr"), std::string::npos);
  // Every subcommand of `chock --help` is offered.
  const std::string all = bash_completes("chock ");
  for (const char* sub : {"sandbox", "run", "apply", "workspace", "policy", "doctor", "fetch", "mcp",
                          "memory", "tasks", "cache", "toolchain", "credentials", "sessions", "completion"})
    EXPECT_NE(all.find(std::string(sub) + "\n"), std::string::npos) << sub << "\n" << all;
}

TEST(Cli, BashCompletesSessionIdsFromTheWorkspaceList) {
  TempDir home("chock-cli");
  RunOptions o = chock_dirs_under(home);
  o.env["CHOCK"] = chock_binary();
  o.cwd = home.path();
  Output made = run_process({"sh", "-c",
                             "mkdir p && cd p && echo a > a && \"$CHOCK\" run --keep -- true 2>&1 | "
                             "sed -n 's/^chock: session \\([a-z0-9]*\\) .*/\\1/p'"},
                            o);
  ASSERT_EQ(made.status, 0) << made.err;
  const std::string id = made.out.substr(0, made.out.find('\n'));
  ASSERT_FALSE(id.empty()) << made.out;
  o.env["LINE"] = "chock run --session " + id.substr(0, 2);
  Output out =
      run_process({"bash", "--norc", "-c",
                   "source <(\"$CHOCK\" completion bash); read -ra COMP_WORDS <<<\"$LINE\"; "
                   "COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); PATH=$(dirname \"$CHOCK\"):$PATH; _chock; "
                   "printf '%s\\n' \"${COMPREPLY[@]}\""},
                  o);
  EXPECT_NE(out.out.find(id), std::string::npos) << out.out << out.err;
}

// zsh's own matcher keeps the candidates that begin with what was typed
// (its bashcompinit compgen does not filter): the test filters as it does.
TEST(Cli, ZshLoadsTheCompletionWithCompinit) {
  if (run_process({"sh", "-c", "command -v zsh"}).status != 0)
    GTEST_SKIP() << "zsh is not installed (scripts/install-deps installs it)";
  TempDir home("chock-zsh");
  RunOptions o;
  o.env = {{"CHOCK", chock_binary()}, {"ZDOTDIR", home.path()}, {"HOME", home.path()}};
  Output out = run_process(
      {"zsh", "-f", "-c",
       "autoload -U compinit && compinit -u -d \"$HOME/.zcompdump\" && "
       "source <(\"$CHOCK\" completion zsh) && [[ -n ${_comps[chock]} ]] && setopt ksharrays && "
       "COMP_WORDS=(chock wo) && COMP_CWORD=1 && _chock && print -l -- \"${(M)COMPREPLY[@]:#wo*}\""},
      o);
  EXPECT_EQ(out.status, 0) << out.err;
  EXPECT_EQ(out.out, "workspace\n") << out.err;
  EXPECT_EQ(out.err, "");
}

// Runs `chock ARGS...` in `env`, and checks its stdout against docs/schemas/SCHEMA.
Output json_of(const std::vector<std::string>& args, const RunOptions& env, const std::string& schema,
               const std::string& scratch) {
  Output o = chock(args, env);
  write_file(scratch + "/out.json", o.out);
  Output v = run_process({"/usr/bin/python3", std::string(CHOCK_SOURCE_DIR) + "/tests/cli/validate_json.py",
                          std::string(CHOCK_SOURCE_DIR) + "/docs/schemas", schema, scratch + "/out.json"});
  EXPECT_EQ(v.status, 0) << "chock " << args[0] << " --json against " << schema << ":\n"
                         << v.err << "\n"
                         << o.out << "\n"
                         << o.err;
  return o;
}

TEST(Cli, EveryJsonOutputValidatesAgainstItsSchema) {
  if (run_process({"/usr/bin/python3", "-c", "import jsonschema"}).status != 0)
    GTEST_SKIP() << "Debian's python3-jsonschema is not installed (scripts/install-deps installs it)";
  TempDir home("chock-json");
  RunOptions env = chock_dirs_under(home);
  env.env["GIT_CONFIG_NOSYSTEM"] = "1";
  env.env["HOME"] = home.path();
  env.cwd = home / "p";
  ASSERT_EQ(
      run_process({"sh", "-c",
                   "mkdir p && cd p && git init -q -b main && echo a > a.txt && printf '%s\\n' "
                   "'.{ .policy = .{ .rules = .{ .{ .action = \"memory.write\", .decision = .allow } } } }' "
                   "> chock.zon && git add . && git -c user.name=t -c user.email=t@t commit -qm init"},
                  [&] {
                    RunOptions o = env;
                    o.cwd = home.path();
                    return o;
                  }())
          .status,
      0);
  Output ran = json_of({"run", "--json", "--keep", "--", "sh", "-c", "echo out; echo err >&2; exit 3"}, env,
                       "run.schema.json", home.path());
  EXPECT_EQ(ran.status, 3);
  nlohmann::json r = nlohmann::json::parse(ran.out, nullptr, false);
  ASSERT_TRUE(r.is_object()) << ran.out;
  EXPECT_EQ(r["stdout"], "out\n");
  EXPECT_EQ(r["stderr"], "err\n");
  EXPECT_EQ(r["exit_status"], 3);
  EXPECT_EQ(r["result"]["exit_code"], 3);
  EXPECT_FALSE(r["chock"].empty());
  EXPECT_EQ(ran.err, "") << "Chock's own lines are in the object, not on stderr";
  const std::string session = r["session"];
  Output refused =
      json_of({"run", "--json", "--session", "nosuchid", "--", "true"}, env, "run.schema.json", home.path());
  EXPECT_EQ(refused.status, 125);
  Output task = chock({"run", "--session", session, "--background", "--", "echo", "hi"}, env);
  ASSERT_EQ(task.status, 0) << task.err;
  const std::string id = task.out.substr(0, task.out.find('\n'));
  EXPECT_EQ(chock({"tasks", "wait", id}, env).status, 0);
  json_of({"tasks", "list", "--json"}, env, "tasks-list.schema.json", home.path());
  json_of({"workspace", "list", "--json"}, env, "workspace-list.schema.json", home.path());
  EXPECT_EQ(chock({"memory", "write", "a-note", "--kind", "insight", "--description", "d"},
                  [&] {
                    RunOptions o = env;
                    o.stdin_data = "body\n";
                    return o;
                  }())
                .status,
            0);
  Output notes = json_of({"memory", "list", "--json"}, env, "memory-list.schema.json", home.path());
  EXPECT_NE(notes.out.find("a-note"), std::string::npos);
  json_of({"policy", "--json"}, env, "policy.schema.json", home.path());
  json_of({"policy", "explain", "memory.write", "--json"}, env, "policy-explain.schema.json", home.path());
}

// "path") options="..." subcommands="..." of the completion script: every
// subcommand and option the command line accepts.
std::map<std::string, std::pair<std::vector<std::string>, std::vector<std::string>>> cli_surface() {
  Output script = chock({"completion", "bash"});
  std::map<std::string, std::pair<std::vector<std::string>, std::vector<std::string>>> out;
  std::istringstream in(script.out);
  auto words = [](const std::string& line, const std::string& key) {
    std::vector<std::string> w;
    const std::size_t at = line.find(key + "=\"");
    if (at == std::string::npos) return w;
    std::istringstream list(
        line.substr(at + key.size() + 2, line.find('"', at + key.size() + 2) - at - key.size() - 2));
    for (std::string x; list >> x;) w.push_back(x);
    return w;
  };
  for (std::string line; std::getline(in, line);)
    if (line.find(") options=\"") != std::string::npos) {
      const std::size_t q = line.find('"');
      out[line.substr(q + 1, line.find('"', q + 1) - q - 1)] = {words(line, "options"),
                                                                words(line, "subcommands")};
    }
  return out;
}

TEST(Cli, EveryOptionAndSubcommandIsInTheManualPage) {
  const std::string page = read_file(std::string(CHOCK_SOURCE_DIR) + "/docs/man/chock.1.scd");
  const auto surface = cli_surface();
  ASSERT_GT(surface.size(), 20U);
  for (const auto& [path, level] : surface) {
    for (const auto& option : level.first) {
      if (option == "--help" || option == "-h") continue;
      EXPECT_NE(page.find("*" + option + "*"), std::string::npos)
          << "chock " << path << " " << option << " is not in docs/man/chock.1.scd";
    }
    for (const auto& sub : level.second)
      EXPECT_NE(page.find("*" + (path.empty() ? sub : path + " " + sub)), std::string::npos)
          << "chock " << path << " " << sub << " is not in docs/man/chock.1.scd";
  }
}

TEST(Cli, TheManualPagesRenderWithoutWarnings) {
  const std::string man = std::string(CHOCK_BUILD_DIR) + "/man/";
  if (!exists(man + "chock.1"))
    GTEST_SKIP() << "the pages were not built: scdoc is missing (scripts/install-deps)";
  for (const char* page : {"chock.1", "chock.zon.5", "chock-connect.1"}) {
    RunOptions o;
    o.env = {{"MANWIDTH", "80"}, {"LC_ALL", "C.UTF-8"}};
    Output out = run_process({"man", "--warnings", "-l", man + page}, o);
    EXPECT_EQ(out.status, 0) << page << out.err;
    EXPECT_EQ(out.err, "") << page;
    EXPECT_NE(out.out.find("NAME"), std::string::npos) << page;
  }
}

TEST(Cli, TheManualsChockZonExamplesAreRead) {
  const std::string page = read_file(std::string(CHOCK_SOURCE_DIR) + "/docs/man/chock.zon.5.scd");
  int read = 0;
  for (std::size_t at = page.find("```\n"); at != std::string::npos; at = page.find("```\n", at)) {
    const std::size_t end = page.find("```", at + 4);
    ASSERT_NE(end, std::string::npos);
    TempDir dir("chock-man-zon");
    ASSERT_EQ(run_process({"git", "init", "-q", dir.path()}).status, 0);
    write_file(dir / "chock.zon", page.substr(at + 4, end - at - 4));
    RunOptions o;
    o.cwd = dir.path();
    Output policy = chock({"policy"}, o);
    EXPECT_EQ(policy.status, 0) << policy.err << page.substr(at, end - at);
    ++read;
    at = end + 3;
  }
  EXPECT_EQ(read, 2);
}

TEST(Cli, TheBinaryIsHardenedAsDebianBuildsItsPackages) {
  if (!CHOCK_HARDENED) GTEST_SKIP() << "this build turned CHOCK_HARDEN off";
  const std::string bin = chock_binary();
  Output segments = run_process({"readelf", "-lW", bin});
  ASSERT_EQ(segments.status, 0) << segments.err;
  EXPECT_NE(segments.out.find("GNU_RELRO"), std::string::npos) << "no RELRO segment";
  Output dynamic = run_process({"readelf", "-dW", bin});
  EXPECT_NE(dynamic.out.find("BIND_NOW"), std::string::npos) << "lazy binding left on:\n" << dynamic.out;
  Output symbols = run_process({"readelf", "-sW", bin});
  EXPECT_NE(symbols.out.find("__stack_chk_fail"), std::string::npos) << "no stack protector";
  EXPECT_NE(symbols.out.find("_chk"), std::string::npos);
  bool fortified = false;
  for (const char* f : {"__fprintf_chk", "__snprintf_chk", "__memcpy_chk", "__read_chk", "__sprintf_chk"})
    fortified = fortified || symbols.out.find(f) != std::string::npos;
  EXPECT_TRUE(fortified) << "no fortified libc call";
  // -fcf-protection: Chock's own functions begin with an IBT landing pad. (The
  // binary's IBT property is dropped by the linker: Debian 12's static libc
  // and libstdc++ objects are built without it.)
  Output main_fn = run_process({"objdump", "-d", "--no-show-raw-insn", "--disassemble=main", bin});
  const std::size_t entry = main_fn.out.find("<main>:\n");
  ASSERT_NE(entry, std::string::npos) << main_fn.err;
  const std::string first = main_fn.out.substr(entry, main_fn.out.find('\n', entry + 9) - entry);
  EXPECT_NE(first.find("endbr64"), std::string::npos) << "main does not begin with endbr64:\n" << first;
  // Stack-clash probes leave no mark in the binary: the flag is read from how each file was compiled.
  const std::string commands = read_file(std::string(CHOCK_BUILD_DIR) + "/compile_commands.json");
  EXPECT_NE(commands.find("-fstack-clash-protection"), std::string::npos);
  EXPECT_NE(commands.find("-D_FORTIFY_SOURCE=3"), std::string::npos);
}

}  // namespace
}  // namespace chock::test
