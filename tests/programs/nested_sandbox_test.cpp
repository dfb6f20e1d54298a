// What a layer stops, said in Chock's words with the program's own switch:
// a sandbox inside the call asking for a user namespace (Chromium's, the
// bubblewrap of Codex and Claude Code), and a JIT under write-xor-execute.
#include "programs_support.hpp"

namespace chock::test::programs {
namespace {

using ws::describe;

std::size_t at(const std::string& text, const std::string& needle) {
  return text.find(needle);
}

// Chromium's own sandbox needs a user namespace; the keeper answers ENOSPC,
// as the kernel does where none may be made, and names `--no-sandbox`.
TEST(NestedSandbox, ChromiumWithItsOwnSandboxIsToldToTurnItOff) {
  std::string why;
  const std::string chromium = program("chromium", &why);
  if (chromium.empty()) GTEST_SKIP() << why;
  ws::Fixture f;
  project_with_page(f, true);
  Output o = run_long(f, {}, chromium + " --headless --dump-dom \"file://$PWD/index.html\"");
  EXPECT_NE(o.status, 0) << describe(o);
  EXPECT_NE(at(o.err, "No usable sandbox!"), std::string::npos) << describe(o);
  const std::size_t line = at(o.err, "chock: `chromium` (pid ");
  ASSERT_NE(line, std::string::npos) << describe(o);
  EXPECT_NE(o.err.find("was refused a user namespace (ENOSPC)", line), std::string::npos) << describe(o);
  EXPECT_NE(o.err.find("Chromium's `--no-sandbox`", line), std::string::npos) << describe(o);
  // The neighbour: the same browser with its sandbox off runs the page.
  Output off = run_long(f, {}, chromium + " --headless --no-sandbox --dump-dom \"file://$PWD/index.html\"");
  ASSERT_EQ(off.status, 0) << describe(off);
  EXPECT_NE(off.out.find("script ran on"), std::string::npos) << describe(off);
  EXPECT_EQ(off.err.find("was refused a user namespace"), std::string::npos) << describe(off);
}

// Debian's bubblewrap stands in for the one Codex and Claude Code run: its
// clone(CLONE_NEWUSER) gets ENOSPC, Chock names it and docs/agents.md, and
// the call goes on (a refusal, not a kill).
TEST(NestedSandbox, ABubblewrapInsideIsRefusedItsUserNamespaceAndToldWhy) {
  std::string why;
  const std::string bwrap = program("bwrap", &why);
  if (bwrap.empty()) GTEST_SKIP() << why;
  ws::Fixture f;
  f.init_plain();
  const std::string result = f.file("../bwrap-result.json");
  Output o = f.chock({"run", "--result", result, "--", "sh", "-c",
                      bwrap + " --ro-bind / / --dev /dev true; echo \"bwrap said $?\"; echo after"});
  ASSERT_EQ(o.status, 0) << describe(o);
  EXPECT_NE(o.out.find("bwrap said 1\nafter\n"), std::string::npos) << describe(o);
  EXPECT_NE(o.err.find("bwrap: Creating new namespace failed"), std::string::npos) << describe(o);
  const std::size_t line = o.err.find("chock: `bwrap` (pid ");
  ASSERT_NE(line, std::string::npos) << describe(o);
  EXPECT_NE(o.err.find("was refused a user namespace (ENOSPC): a sandbox inside a call needs one", line),
            std::string::npos)
      << describe(o);
  EXPECT_NE(o.err.find("docs/agents.md", line), std::string::npos) << describe(o);
  const std::string r = read_file(result);
  EXPECT_NE(r.find("\"user_namespace_program\":\"bwrap\""), std::string::npos) << r;
  EXPECT_EQ(r.find("\"user_namespace_refused\":0"), std::string::npos) << r;
}

// Chromium under strict write-xor-execute does not fail, it hangs ("Failed to
// reserve virtual memory for CodeRange"): the reason is said while it still
// runs, before the deadline ends it, naming `sandbox.jit` and V8's switch.
TEST(NestedSandbox, ChromiumUnderWriteXorExecuteIsToldAtOnceHowToRun) {
  std::string why;
  const std::string chromium = program("chromium", &why);
  if (chromium.empty()) GTEST_SKIP() << why;
  ws::Fixture f;
  project_with_page(f, false);
  Output o = run_long(f, {"--timeout", "20"},
                      chromium + " --headless --no-sandbox --dump-dom \"file://$PWD/index.html\"");
  EXPECT_NE(o.status, 0) << describe(o);
  const std::size_t said = at(o.err, "chock: `chromium` (pid ");
  const std::size_t ended = at(o.err, "chock: the call ran past its timeout");
  ASSERT_NE(said, std::string::npos) << describe(o);
  ASSERT_NE(ended, std::string::npos) << describe(o);
  EXPECT_LT(said, ended) << "said only at the end: " << describe(o);
  EXPECT_NE(o.err.find("was refused a writable and executable mapping (write-xor-execute): a JIT needs "
                       "`sandbox.jit = allow`",
                       said),
            std::string::npos)
      << describe(o);
  EXPECT_NE(o.err.find("`--js-flags=--jitless`", said), std::string::npos) << describe(o);
  // The neighbour: V8 without its JIT runs the page under the same rules.
  Output jitless = run_long(
      f, {},
      chromium + " --headless --no-sandbox --js-flags=--jitless --dump-dom \"file://$PWD/index.html\"");
  ASSERT_EQ(jitless.status, 0) << describe(jitless);
  EXPECT_NE(jitless.out.find("script ran on"), std::string::npos) << describe(jitless);
  EXPECT_EQ(jitless.err.find("writable and executable"), std::string::npos) << describe(jitless);
}

}  // namespace
}  // namespace chock::test::programs
