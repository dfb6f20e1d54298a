// The policy table and chock.zon through `chock run` and `chock apply`, and
// the session log they write: real projects, real sandboxes.
#include <dirent.h>
#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include "support.hpp"

namespace chock::test::ws {
namespace {

constexpr const char* kJitAllow =
    ".{ .policy = .{ .rules = .{ .{ .action = \"sandbox.jit\", .decision = .allow } } } }\n";

// A git project with `zon` as its chock.zon and the attack program committed
// (the sandbox sees the workspace and the toolchain, not the build tree).
void init_with(Fixture& f, const std::string& zon, bool with_attack = false) {
  f.init_git();
  if (!zon.empty()) write_file(f.file("chock.zon"), zon);
  if (with_attack) write_file(f.file("attack"), read_file(program("attack")), 0755);
  if (!zon.empty() || with_attack) f.commit_all("configure");
}

TEST(Policy, JitAllowLetsAnRwxPageThroughAndSaysSo) {
  Fixture f;
  init_with(f, kJitAllow, true);
  Output o = f.chock({"run", "--keep", "--", "./attack", "rwx_page_runs"});
  EXPECT_EQ(o.status, 0) << describe(o);
  EXPECT_NE(o.err.find("write-xor-execute is OFF"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("chock.zon:1:"), std::string::npos) << "the warning names the rule: " << o.err;
  std::string id = session_id(o);
  auto lines = log_lines(f, id);
  EXPECT_TRUE(has_event(lines, "sandbox.open", "\"write_execute\":\"relaxed\"")) << describe(o);
  EXPECT_TRUE(has_event(lines, "sandbox.open", "\"decision\":\"allow\""));
  // The third announcement: chock doctor reads the same rules.
  Output doctor = f.chock({"doctor"});
  EXPECT_NE(doctor.out.find("write^execute       OFF"), std::string::npos) << describe(doctor);
  // Nothing else moved: ptrace still kills.
  Output ptrace = f.chock({"run", "--session", id, "--", "./attack", "ptrace"});
  EXPECT_EQ(ptrace.status, 128 + SIGSYS) << describe(ptrace);
}

TEST(Policy, WithoutTheRuleAnRwxPageIsRefused) {
  Fixture f;
  init_with(f, "", true);
  Output o = f.chock({"run", "--", "./attack", "mmap_rwx"});
  EXPECT_EQ(o.status, EPERM) << describe(o);
  EXPECT_NE(o.out.find("attack mmap_rwx: EPERM"), std::string::npos) << describe(o);
  EXPECT_EQ(o.err.find("write-xor-execute is OFF"), std::string::npos) << o.err;
  EXPECT_TRUE(has_event(log_lines(f, session_id(o)), "sandbox.open", "\"write_execute\":\"strict\""));
}

TEST(Policy, JitAskIsARefusal) {
  Fixture f;
  init_with(f, ".{ .policy = .{ .rules = .{ .{ .action = \"sandbox.jit\", .decision = .ask } } } }\n", true);
  Output o = f.chock({"run", "--", "./attack", "mmap_rwx"});
  EXPECT_EQ(o.status, EPERM) << describe(o);
}

TEST(Policy, ABundleDenyHoldsAProjectAllow) {
  Fixture f;
  init_with(f, kJitAllow, true);
  TempDir org("chock-org");
  write_file(org / "bundle.zon",
             ".{ .policy = .{ .rules = .{ .{ .action = \"sandbox.*\", .decision = .deny } } } }\n");
  Output o = f.chock({"run", "--org-bundle", org / "bundle.zon", "--", "./attack", "mmap_rwx"});
  EXPECT_EQ(o.status, EPERM) << describe(o);
  Output explain = f.chock({"policy", "explain", "sandbox.jit", "--org-bundle", org / "bundle.zon"});
  EXPECT_EQ(explain.status, 0) << describe(explain);
  EXPECT_NE(explain.out.find("sandbox.jit: deny (bundle, " + org / "bundle.zon:1:"), std::string::npos)
      << explain.out;
}

TEST(Policy, ChockPolicyPrintsEveryRuleWithItsLayerAndTheFoldedAnswers) {
  Fixture f;
  init_with(f,
            ".{ .policy = .{ .rules = .{\n"
            "    .{ .action = \"net.connect.com.github.*\", .decision = .allow },\n"
            "    .{ .action = \"workspace.apply\", .decision = .deny },\n"
            "} } }\n");
  Output o = f.chock({"policy", "--policy-rule", "sandbox.jit=deny"});
  ASSERT_EQ(o.status, 0) << describe(o);
  std::string zon = f.file("chock.zon");
  EXPECT_NE(o.out.find("project       net.connect.com.github.*                 allow  " + zon + ":2:5"),
            std::string::npos)
      << o.out;
  EXPECT_NE(o.out.find("command line  sandbox.jit"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("workspace.apply                          deny (project, " + zon + ":3:5)"),
            std::string::npos)
      << o.out;
  EXPECT_NE(o.out.find("sandbox.jit                              deny (command line"), std::string::npos)
      << o.out;
  Output explain = f.chock({"policy", "explain", "net.connect.com.github.443"});
  EXPECT_NE(explain.out.find("net.connect.com.github.443: allow (project, " + zon + ":2:5)"),
            std::string::npos)
      << explain.out;
  EXPECT_NE(explain.out.find("net.connect.com.github.* at " + zon + ":2:5"), std::string::npos)
      << explain.out;
  Output bare = f.chock({"policy", "explain", "*"});
  EXPECT_EQ(bare.status, 2) << describe(bare);
}

// The person's --policy-rule rows stand for the project's: a row of theirs
// replaces chock.zon's for the same action, narrowing or widening it, and
// the organisation bundle still bounds it.
TEST(Policy, ACommandLineRuleStandsForTheProjectsUnderTheBundle) {
  Fixture f;
  init_with(f, kJitAllow, true);
  Output narrowed = f.chock({"run", "--policy-rule", "sandbox.jit=deny", "--", "./attack", "mmap_rwx"});
  EXPECT_EQ(narrowed.status, EPERM) << describe(narrowed);
  EXPECT_TRUE(has_event(log_lines(f, session_id(narrowed)), "session.config", "sandbox.jit=deny"));

  // The project never named it: the person's allow opens it.
  Fixture g;
  init_with(g, "", true);
  Output widened = g.chock({"run", "--policy-rule", "sandbox.jit=allow", "--", "./attack", "mmap_rwx"});
  EXPECT_EQ(widened.status, 0) << describe(widened);
  EXPECT_NE(widened.err.find("--policy-rule sandbox.jit=allow"), std::string::npos)
      << "the warning names the person's row: " << describe(widened);

  // The project denies it: the person's row for the same action replaces that.
  Fixture h;
  init_with(h, ".{ .policy = .{ .rules = .{ .{ .action = \"sandbox.jit\", .decision = .deny } } } }\n", true);
  Output denied = h.chock({"run", "--", "./attack", "mmap_rwx"});
  EXPECT_EQ(denied.status, EPERM) << describe(denied);
  Output replaced = h.chock({"run", "--policy-rule", "sandbox.jit=allow", "--", "./attack", "mmap_rwx"});
  EXPECT_EQ(replaced.status, 0) << describe(replaced);
  Output explain = h.chock({"policy", "explain", "sandbox.jit", "--policy-rule", "sandbox.jit=allow"});
  EXPECT_EQ(explain.status, 0) << describe(explain);
  EXPECT_NE(
      explain.out.find("sandbox.jit: allow (command line (as the project), --policy-rule sandbox.jit=allow)"),
      std::string::npos)
      << explain.out;
  EXPECT_NE(explain.out.find("(replaced by the command line's row)"), std::string::npos) << explain.out;
  EXPECT_NE(explain.out.find("(the person, as the project)"), std::string::npos) << explain.out;
  Output json = h.chock({"policy", "explain", "sandbox.jit", "--json", "--policy-rule", "sandbox.jit=allow"});
  EXPECT_NE(json.out.find("\"replaced\": true"), std::string::npos) << json.out;
  EXPECT_NE(json.out.find("\"deciding_layer\": \"command line\""), std::string::npos) << json.out;

  // The bundle's deny bounds the person's row as it bounds the project's.
  TempDir org("chock-org");
  write_file(org / "bundle.zon",
             ".{ .policy = .{ .rules = .{ .{ .action = \"sandbox.*\", .decision = .deny } } } }\n");
  Output bounded = h.chock({"run", "--org-bundle", org / "bundle.zon", "--policy-rule", "sandbox.jit=allow",
                            "--", "./attack", "mmap_rwx"});
  EXPECT_EQ(bounded.status, EPERM) << describe(bounded);
  Output bounded_explain = h.chock({"policy", "explain", "sandbox.jit", "--org-bundle", org / "bundle.zon",
                                    "--policy-rule", "sandbox.jit=allow"});
  EXPECT_NE(bounded_explain.out.find("sandbox.jit: deny (bundle, " + org / "bundle.zon:1:"),
            std::string::npos)
      << bounded_explain.out;
}

TEST(Policy, WorkspaceApplyDenyRefusesApply) {
  Fixture f;
  init_with(f, ".{ .policy = .{ .rules = .{ .{ .action = \"workspace.apply\", .decision = .deny } } } }\n");
  Output o = f.run({}, "echo x > x.txt && git add x.txt && git commit -q -m x");
  ASSERT_EQ(o.status, 0) << describe(o);
  std::string id = session_id(o);
  Output apply = f.chock({"apply", id, "--yes"});
  EXPECT_EQ(apply.status, 1) << describe(apply);
  EXPECT_NE(apply.err.find("workspace.apply is denied by " + f.file("chock.zon") + ":1:"), std::string::npos)
      << apply.err;
  EXPECT_NE(apply.err.find("refs/chock/" + id), std::string::npos) << apply.err;
  EXPECT_FALSE(exists(f.file("x.txt")));
  EXPECT_TRUE(has_event(log_lines(f, id), "workspace.integrate", "\"state\":\"refused\""));
}

TEST(Policy, WorkspaceApplyAskWithNobodyHereRefusesAndSaysHow) {
  Fixture f;
  init_with(f, ".{ .policy = .{ .rules = .{ .{ .action = \"workspace.apply\", .decision = .ask } } } }\n");
  Output o = f.run({}, "echo x > x.txt && git add x.txt && git commit -q -m x");
  ASSERT_EQ(o.status, 0) << describe(o);
  Output apply = f.chock({"apply", session_id(o)});
  EXPECT_EQ(apply.status, 1) << describe(apply);
  EXPECT_NE(
      apply.err.find("chock: not applied: workspace.apply asks, and nobody is here to answer: add a rule"),
      std::string::npos)
      << apply.err;
  EXPECT_FALSE(exists(f.file("x.txt")));
}

TEST(Policy, WorkspaceApplyAllowAppliesWithoutAsking) {
  Fixture f;
  init_with(f, ".{ .policy = .{ .rules = .{ .{ .action = \"workspace.apply\", .decision = .allow } } } }\n");
  Output o = f.run({}, "echo x > x.txt && git add x.txt && git commit -q -m x");
  ASSERT_EQ(o.status, 0) << describe(o);
  Output apply = f.chock({"apply", session_id(o)});
  EXPECT_EQ(apply.status, 0) << describe(apply);
  EXPECT_EQ(read_file(f.file("x.txt")), "x\n");
  EXPECT_TRUE(has_event(log_lines(f, session_id(o)), "workspace.integrate", "\"state\":\"applied\""));
}

TEST(Policy, ABadChockZonIsRefusedWithItsPositionAndNothingRuns) {
  Fixture f;
  init_with(f, ".{\n  .policy = .{ .rulez = .{} },\n}\n");
  Output o = f.run({}, "touch ran");
  EXPECT_EQ(o.status, 125) << describe(o);
  EXPECT_NE(o.err.find("chock: " + f.file("chock.zon") + ":2:"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("error:"), std::string::npos) << o.err;
  EXPECT_EQ(session_id(o), "");
  EXPECT_FALSE(exists(f.sessions()) && !snapshot(f.sessions()).empty()) << "a session was made";
}

TEST(Policy, DenyReadInChockZonCoversTheFile) {
  Fixture f;
  f.init_git();
  write_file(f.file("chock.zon"), ".{ .deny_read = .{ \"notes.txt\" } }\n");
  f.commit_all("deny notes");
  write_file(f.file("notes.txt"), "TOKEN=secret-bytes-123\n");  // never committed
  Output o = f.run({"--allow-dirty"}, "cat notes.txt");
  EXPECT_EQ(o.status, 0) << describe(o);
  EXPECT_EQ(o.out, "chock: this file is denied by the project. Its bytes are not in this sandbox.\n");
  std::string id = session_id(o);
  EXPECT_TRUE(files_containing(f.sessions() + "/" + id, "secret-bytes-123").empty());
}

TEST(Policy, LimitsFromChockZonReachTheCallAndTheBundleHoldsThemOnce) {
  Fixture f;
  init_with(f, ".{ .limits = .{ .processes = 60, .memory = \"3GiB\" } }\n");
  TempDir org("chock-org");
  write_file(org / "bundle.zon", ".{ .limits = .{ .processes = 40 } }\n");
  std::string result = f.data() + "/result.json";
  Output first =
      f.chock({"run", "--keep", "--org-bundle", org / "bundle.zon", "--result", result, "--", "true"});
  ASSERT_EQ(first.status, 0) << describe(first);
  EXPECT_NE(first.err.find("bundle holds it to 40"), std::string::npos) << first.err;
  std::string json = read_file(result);
  // The floor carries it on every machine (cgroup v2 only where delegated):
  // 40 for the program, and 1 more for the sandbox's own keeper.
  EXPECT_NE(json.find("{\"hard\":41,\"name\":\"nproc\",\"soft\":41}"), std::string::npos) << json;
  // 3 GiB for the call's memory: memory.max, or Chock's measurement.
  EXPECT_TRUE(json.find("\"memory_max\":3221225472") != std::string::npos ||
              json.find("\"memory_measured\":{\"limit\":3221225472,") != std::string::npos)
      << json;
  std::string id = session_id(first);
  Output second =
      f.chock({"run", "--session", id, "--org-bundle", org / "bundle.zon", "--result", result, "--", "true"});
  ASSERT_EQ(second.status, 0) << describe(second);
  EXPECT_EQ(second.err.find("holds it to"), std::string::npos) << "said once: " << second.err;
}

TEST(Policy, ChockZonIsReadOnlyInsideAGitWorkspace) {
  Fixture f;
  init_with(f, ".{ .network = .none }\n");
  Output o = f.run({"--keep"},
                   "echo '// more' >> chock.zon; mv chock.zon moved; cat chock.zon; echo other > other.txt");
  EXPECT_EQ(o.status, 0) << describe(o);
  EXPECT_NE(o.err.find("chock.zon: Read-only file system"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("Device or resource busy"), std::string::npos) << o.err;
  EXPECT_EQ(o.out, ".{ .network = .none }\n");
  // The rest of the tree stays writable, and what was written stays in the session.
  Output next = f.chock({"run", "--session", session_id(o), "--", "cat", "other.txt"});
  EXPECT_EQ(next.out, "other\n") << describe(next);
}

TEST(Policy, TheSessionLogChainFindsAnEditedOrRemovedLine) {
  Fixture f;
  init_with(f, "");
  Output o = f.run({"--keep"}, "true");
  ASSERT_EQ(o.status, 0) << describe(o);
  std::string id = session_id(o);
  ASSERT_EQ(f.chock({"run", "--session", id, "--", "true"}).status, 0);
  Output ok = f.chock({"sessions", "verify", id});
  EXPECT_EQ(ok.status, 0) << describe(ok);
  std::string path = log_path(f, id);
  ASSERT_FALSE(path.empty());
  std::string original = read_file(path);
  auto lines = log_lines(f, id);
  ASSERT_GE(lines.size(), 6U);
  for (const auto& l : lines) EXPECT_NE(l.find("\"prev\":\""), std::string::npos) << l;

  // Edit line 3: a changed exit status, say.
  std::string edited;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    std::string l = lines[i];
    if (i == 2) l.insert(l.size() - 1, ",\"x\":1");
    edited += l + "\n";
  }
  write_file(path, edited, 0600);
  Output bad = f.chock({"sessions", "verify", id});
  EXPECT_EQ(bad.status, 1) << describe(bad);
  EXPECT_NE(bad.err.find("line 4"), std::string::npos) << "the line after the edit breaks: " << bad.err;

  // Remove line 2.
  std::string removed;
  for (std::size_t i = 0; i < lines.size(); ++i)
    if (i != 1) removed += lines[i] + "\n";
  write_file(path, removed, 0600);
  bad = f.chock({"sessions", "verify", id});
  EXPECT_EQ(bad.status, 1) << describe(bad);
  EXPECT_NE(bad.err.find("line 2"), std::string::npos) << bad.err;

  write_file(path, original, 0600);
  EXPECT_EQ(f.chock({"sessions", "verify", id}).status, 0);
}

}  // namespace
}  // namespace chock::test::ws
