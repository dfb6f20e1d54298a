// A project's Nix dev shell is evaluated on the host only for content the
// person allowed (issue 54, section 1): evaluating runs the project's Nix
// code as the caller. The hostile shell.nix here reads a file the project
// has no business reading (root's 0600 file as root; the caller's own 0600
// file otherwise) into a variable of the shell, and names an input whose
// builder writes a marker outside the store (Debian's `sandbox = false`).
// Without a yes: Nix is not run at all, nothing of the secret is in any
// environment or store derivation, the marker is never written, the call
// runs on the host's toolchain and one line says why and how to allow it.
#include <sys/stat.h>
#include <unistd.h>

#include <random>

#include "nix_support.hpp"

namespace chock::test::ws {
namespace {

class NixAllow : public NixToolchain {
 protected:
  void SetUp() override {
    NixToolchain::SetUp();
    if (IsSkipped()) return;
    std::random_device random;
    char nonce[32];
    std::snprintf(nonce, sizeof nonce, "%08x%08x", random(), random());
    nonce_ = nonce;
    secret_ = "chock-secret-" + nonce_;
    secret_file_ = dir_.path() + "/secret";
    write_file(secret_file_, secret_, 0600);  // root's own file as root, the caller's otherwise
    ASSERT_EQ(::chmod(secret_file_.c_str(), 0600), 0);
    // Where the input's builder (a nixbld user) can write: as /tmp is.
    const std::string markers = dir_.path() + "/markers";
    ASSERT_EQ(::mkdir(markers.c_str(), 0755), 0);
    ASSERT_EQ(::chmod(markers.c_str(), 01777), 0);
    marker_ = markers + "/built";
  }

  // `one_byte` is the comment's one letter: changing it changes one byte.
  void write_hostile(char one_byte = 'a') const {
    write_shell(std::string(1, one_byte),
                "  secret = builtins.readFile \"" + secret_file_ +
                    "\";\n  evil = builtins.derivation {\n    name = \"chock-test-evil-" + nonce_ +
                    "\";\n    system = builtins.currentSystem;\n    builder = \"${bash}/bin/bash\";\n"
                    "    args = [ \"-c\" \"echo built > " +
                    marker_ + "; echo > $out\" ];\n  };\n",
                "  SECRET = secret;\n  EVIL = \"${evil}\";\n");
  }

  bool marker_written() const { return ::access(marker_.c_str(), F_OK) == 0; }

  // The store's derivations that hold the secret, and the store paths of the evil input.
  int derivations_with_secret() const {
    auto r =
        run_process({"sh", "-c", "grep -l -F -- '" + secret_ + "' /nix/store/*.drv 2>/dev/null | wc -l"});
    return std::atoi(r.out.c_str());
  }
  int evil_store_paths() const {
    auto r = run_process({"sh", "-c", "ls /nix/store | grep -c -F -- 'chock-test-evil-" + nonce_ + "'"});
    return std::atoi(r.out.c_str());
  }

  // The lines of Chock's that speak of the dev shell.
  static std::vector<std::string> shell_lines(const std::string& err) {
    std::vector<std::string> out;
    std::istringstream lines(err);
    for (std::string l; std::getline(lines, l);)
      if (has(l, "Nix dev shell")) out.push_back(l);
    return out;
  }

  std::string nonce_, secret_, secret_file_, marker_;
};

constexpr const char* kOnHost = "test -d /usr/lib && test ! -e /nix && echo host; env";

TEST_F(NixAllow, AHostileShellNixIsNotEvaluatedWithoutAYesAndAChangedByteAsksAgain) {
  write_hostile();
  auto refused = run(kOnHost);  // no terminal: stdin is a pipe
  ASSERT_EQ(refused.status, 0) << describe(refused);
  EXPECT_TRUE(refused.out.starts_with("host\n")) << describe(refused);
  EXPECT_FALSE(has(refused.out + refused.err, secret_))
      << "the secret reached the call: " << describe(refused);
  EXPECT_EQ(nix_runs(), 0) << "Nix ran for a shell nobody allowed";
  EXPECT_FALSE(marker_written()) << "the input's builder ran on the host";
  EXPECT_EQ(derivations_with_secret(), 0) << "the secret was written into the store";
  EXPECT_EQ(evil_store_paths(), 0) << "the input was instantiated";
  const auto lines = shell_lines(refused.err);
  ASSERT_EQ(lines.size(), 1U) << describe(refused);
  EXPECT_TRUE(lines[0].starts_with("chock: toolchain: the host's; the Nix dev shell " + f.file("shell.nix")))
      << lines[0];
  EXPECT_TRUE(has(lines[0], "never allowed") && has(lines[0], "nobody is at a terminal")) << lines[0];
  EXPECT_TRUE(has(lines[0], "`chock toolchain allow --project " + f.project() + "`")) << lines[0];
  auto status = chock({"toolchain", "status"});
  EXPECT_EQ(status.status, 0) << describe(status);
  EXPECT_TRUE(has(status.out, "never allowed")) << describe(status);
  // The hash is what sha256sum says, so a person can check what they allow.
  const std::string sum = run_process({"sha256sum", f.file("shell.nix")}).out.substr(0, 64);
  EXPECT_TRUE(has(status.out, "shell.nix (sha256 " + sum + ")")) << describe(status) << sum;

  // The person allows it: the dev shell is the toolchain, and what the
  // file does it now does (which is what the checks above would have seen).
  allow();
  auto allowed = run("echo \"$SECRET\"; test -e /usr/lib; echo \"usr $?\"");
  ASSERT_EQ(allowed.status, 0) << describe(allowed);
  EXPECT_EQ(allowed.out, secret_ + "\nusr 1\n") << describe(allowed);
  EXPECT_TRUE(marker_written());
  EXPECT_GT(derivations_with_secret(), 0);
  const int evaluated = evaluations();
  EXPECT_EQ(evaluated, 1);

  // One byte changed: new content, nobody to ask, not evaluated.
  write_hostile('b');
  auto changed = run(kOnHost);
  ASSERT_EQ(changed.status, 0) << describe(changed);
  EXPECT_TRUE(changed.out.starts_with("host\n")) << describe(changed);
  EXPECT_FALSE(has(changed.out, secret_)) << describe(changed);
  EXPECT_EQ(evaluations(), evaluated) << "a changed shell.nix was evaluated without a yes";
  const auto again = shell_lines(changed.err);
  ASSERT_EQ(again.size(), 1U) << describe(changed);
  EXPECT_TRUE(has(again[0], "changed since it was last allowed")) << again[0];
}

// At a terminal the engine asks once: n runs this call on the host's
// toolchain and keeps nothing; y allows this content for the calls after.
TEST_F(NixAllow, AtATerminalNoRunsOnTheHostAndYesAllowsThisContent) {
  if (run_process({"script", "--version"}).status != 0) GTEST_SKIP() << "script(1) is not installed";
  write_hostile();
  const std::vector<std::string> args{"run", "--", "sh", "-c", "echo \"secret:$SECRET\""};
  auto no = f.on_terminal(args, "n\n");
  EXPECT_TRUE(has(no.out, "toolchain.nix asks: go ahead? [y]es, [n]o: ")) << describe(no);
  EXPECT_FALSE(has(no.out, "[a]lways")) << describe(no);
  EXPECT_TRUE(has(no.out, "is not evaluated: you answered no")) << describe(no);
  EXPECT_TRUE(has(no.out, "secret:\r\n") || has(no.out, "secret:\n")) << describe(no);
  EXPECT_FALSE(has(no.out, secret_)) << describe(no);
  EXPECT_EQ(nix_runs(), 0);
  EXPECT_FALSE(marker_written());
  auto yes = f.on_terminal(args, "y\n");
  EXPECT_TRUE(has(yes.out, "toolchain.nix asks: go ahead?")) << describe(yes);
  EXPECT_TRUE(has(yes.out, "secret:" + secret_)) << describe(yes);
  EXPECT_EQ(evaluations(), 1);
  // Kept: the next call, with nobody at a terminal, uses the shell unasked.
  auto later = run("echo \"secret:$SECRET\"");
  EXPECT_EQ(later.status, 0) << describe(later);
  EXPECT_EQ(later.out, "secret:" + secret_ + "\n") << describe(later);
  EXPECT_FALSE(has(later.err, "asks")) << describe(later);
}

// toolchain.nix = deny in the organisation's bundle: never evaluated, even
// content the person allowed. A project's own `allow` is no yes: the
// project is what asks.
TEST_F(NixAllow, AnOrganisationsDenyHoldsAnAllowedShellAndAProjectsAllowIsNoYes) {
  write_hostile();
  write_file(f.file("chock.zon"),
             ".{ .policy = .{ .rules = .{ .{ .action = \"toolchain.nix\", .decision = .allow } } } }\n");
  auto own = run(kOnHost);
  ASSERT_EQ(own.status, 0) << describe(own);
  EXPECT_TRUE(own.out.starts_with("host\n")) << describe(own);
  EXPECT_EQ(nix_runs(), 0) << "the project's own allow evaluated its shell";
  auto explained = chock({"policy", "explain", "toolchain.nix"});
  EXPECT_TRUE(has(explained.out, "toolchain.nix: allow (project, " + f.file("chock.zon")) &&
              has(explained.out, "; read as ask: only the organisation bundle's allow needs no yes"))
      << describe(explained);
  allow();
  const std::string bundle = dir_.path() + "/bundle.zon";
  write_file(bundle,
             ".{ .policy = .{ .rules = .{ .{ .action = \"toolchain.nix\", .decision = .deny } } } }\n");
  auto denied = run(kOnHost, {"--org-bundle", bundle});
  ASSERT_EQ(denied.status, 0) << describe(denied);
  EXPECT_TRUE(denied.out.starts_with("host\n")) << describe(denied);
  EXPECT_FALSE(has(denied.out, secret_)) << describe(denied);
  EXPECT_EQ(evaluations(), 0) << "an organisation's deny did not hold";
  EXPECT_FALSE(marker_written());
  const auto lines = shell_lines(denied.err);
  ASSERT_EQ(lines.size(), 1U) << describe(denied);
  EXPECT_TRUE(has(lines[0], "toolchain.nix is deny (the bundle rule toolchain.nix = deny at " + bundle))
      << lines[0];
  auto status = chock({"toolchain", "status", "--org-bundle", bundle});
  EXPECT_TRUE(has(status.out, "never evaluated")) << describe(status);
  // Without the bundle, the allowed content is the toolchain.
  auto used = run("echo \"$SECRET\"");
  EXPECT_EQ(used.out, secret_ + "\n") << describe(used);
}

// `chock toolchain deny`: nobody is asked, the host's toolchain runs, and
// the kept answer of the shell goes.
TEST_F(NixAllow, DenyStopsAnAllowedShellAndForgetsItsAnswer) {
  write_hostile();
  allow();
  ASSERT_EQ(run("echo \"$SECRET\"").out, secret_ + "\n");
  auto said = chock({"toolchain", "deny"});
  EXPECT_EQ(said.status, 0) << describe(said);
  EXPECT_TRUE(has(said.out, "chock: denied the Nix dev shell")) << describe(said);
  auto r = run(kOnHost);
  EXPECT_TRUE(r.out.starts_with("host\n")) << describe(r);
  EXPECT_FALSE(has(r.out, secret_)) << describe(r);
  const auto lines = shell_lines(r.err);
  ASSERT_EQ(lines.size(), 1U) << describe(r);
  EXPECT_TRUE(has(lines[0], "it was denied")) << lines[0];
  auto kept = run_process({"sh", "-c", "ls -A " + f.data() + "/chock/toolchains 2>/dev/null"});
  EXPECT_EQ(kept.out, "") << "the denied shell's answer is still kept";
}

// A background call's runner has nobody to ask either: its task runs on
// the host's toolchain until the content is allowed, then on the shell.
TEST_F(NixAllow, ABackgroundTaskEvaluatesOnlyAnAllowedShell) {
  write_hostile();
  auto task = [this](const std::string& script) {
    auto started = run(script, {"--background"});
    EXPECT_EQ(started.status, 0) << describe(started);
    const std::string id = started.out.substr(0, started.out.find('\n'));
    auto waited = chock({"tasks", "wait", id, "--timeout", "120"});
    EXPECT_EQ(waited.status, 0) << describe(waited);
    return waited.out;
  };
  const std::string refused = task(kOnHost);
  // The task's output holds the runner's own lines too.
  EXPECT_TRUE(has(refused, "\nhost\n")) << refused;
  EXPECT_TRUE(has(refused, "is not evaluated: it was never allowed, and nobody is at a terminal")) << refused;
  EXPECT_FALSE(has(refused, secret_)) << refused;
  EXPECT_EQ(nix_runs(), 0) << "a task evaluated a shell nobody allowed";
  EXPECT_FALSE(marker_written());
  allow();
  EXPECT_TRUE(task("echo \"$SECRET\"").ends_with("\n" + secret_ + "\n"));
  EXPECT_EQ(evaluations(), 1);
}

// chock mcp has no terminal and asks no client about this: an agent's
// run_command in a project nobody allowed runs on the host's toolchain, and
// Chock's line in the tool's result says how the person allows it.
TEST_F(NixAllow, AnMcpCallNeverEvaluatesAShellNobodyAllowed) {
  write_hostile();
  const std::string call =
      R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"run_command","arguments":{"argv":["sh","-c",")" +
      std::string(kOnHost) + R"("]}}})";
  // Its input stays open while the call runs: an ended input cancels it.
  const std::string input =
      R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{}}})"
      "\n"
      R"({"jsonrpc":"2.0","method":"notifications/initialized"})"
      "\n" +
      call + "\n";
  write_file(dir_.path() + "/mcp-input", input);
  RunOptions o = f.options();
  o.timeout = std::chrono::seconds(120);
  auto r = run_process(
      {"sh", "-c", "(cat \"$0\"; sleep 8) | \"$1\" mcp", dir_.path() + "/mcp-input", chock_binary()}, o);
  std::string answer;
  std::istringstream lines(r.out);
  for (std::string l; std::getline(lines, l);)
    if (has(l, "\"id\":2")) answer = l;
  ASSERT_FALSE(answer.empty()) << describe(r);
  EXPECT_TRUE(has(answer, "host\\n")) << answer;
  EXPECT_TRUE(has(answer, "is not evaluated: it was never allowed, and nobody is at a terminal")) << answer;
  EXPECT_TRUE(has(answer, "chock toolchain allow --project " + f.project())) << answer;
  EXPECT_FALSE(has(answer, secret_)) << answer;
  EXPECT_EQ(nix_runs(), 0) << "an MCP call evaluated a shell nobody allowed";
  EXPECT_FALSE(marker_written());
  EXPECT_EQ(derivations_with_secret(), 0);
}

}  // namespace
}  // namespace chock::test::ws
