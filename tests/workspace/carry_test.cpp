// Carried directories: what git ignores (node_modules, .venv) reaches a git
// workspace copy-on-write when the project names it in .carry or --carry;
// what the call changes there stays in the session and is never work; a
// path outside the project, a tracked one, a link or a denied one is
// refused; a new git session whose project holds one it does not carry
// says so first, naming the row to add.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "support.hpp"

namespace chock::test::ws {
namespace {

constexpr const char* kJitAllow =
    ".policy = .{ .rules = .{ .{ .action = \"sandbox.jit\", .decision = .allow } } }";

// A Node project whose `npm test` needs a dev tool and a library from its
// installed node_modules, which git ignores.
void init_node_project(Fixture& f, const std::string& zon) {
  f.init_git();
  write_file(f.file(".gitignore"), "node_modules/\n");
  write_file(
      f.file("package.json"),
      "{\"name\":\"carried\",\"version\":\"1.0.0\",\"scripts\":{\"test\":\"lint-tool && node test.js\"}}\n");
  write_file(f.file("test.js"), "const greet = require('greet');\nconsole.log(greet('node'));\n");
  write_file(f.file("chock.zon"), zon);
  f.commit_all("node project");
  std::filesystem::create_directories(f.file("node_modules/greet"));
  std::filesystem::create_directories(f.file("node_modules/.bin"));
  write_file(f.file("node_modules/greet/package.json"), "{\"name\":\"greet\",\"main\":\"index.js\"}\n");
  write_file(f.file("node_modules/greet/index.js"), "module.exports = (who) => 'hello, ' + who;\n");
  write_file(f.file("node_modules/.bin/lint-tool"), "#!/bin/sh\necho lint ok\n", 0755);
}

TEST(Carry, NpmTestPassesInAFreshGitSessionWithCarriedNodeModules) {
  if (::access("/usr/bin/npm", X_OK) != 0 || ::access("/usr/bin/node", X_OK) != 0)
    GTEST_SKIP() << "node and npm are not installed (scripts/install-deps installs them)";
  Fixture f;
  init_node_project(f, std::string(".{ .carry = .{ \"node_modules\" }, ") + kJitAllow + " }\n");
  const std::string quiet = "npm_config_update_notifier=false npm test --silent";
  Output o = f.run({}, quiet);
  ASSERT_EQ(o.status, 0) << describe(o);
  EXPECT_EQ(o.out, "lint ok\nhello, node\n") << describe(o);
  EXPECT_NE(o.err.find("chock: carried copy-on-write from the project: node_modules"), std::string::npos)
      << describe(o);
  // The neighbour that proves it is the carry: without it the checkout has no node_modules.
  write_file(f.file("chock.zon"), std::string(".{ ") + kJitAllow + " }\n");
  Output bare = f.run({}, quiet);
  EXPECT_NE(bare.status, 0) << describe(bare);
  EXPECT_NE(bare.err.find("lint-tool: not found"), std::string::npos) << describe(bare);
  // --carry on the command line does the same.
  Output flag = f.run({"--carry", "node_modules"}, quiet);
  EXPECT_EQ(flag.status, 0) << describe(flag);
}

TEST(Carry, WhatTheCallChangesInACarriedDirectoryStaysInTheSession) {
  Fixture f;
  init_node_project(f, ".{ .carry = .{ \"node_modules\" } }\n");
  Output o = f.run({"--keep"},
                   "echo added > node_modules/added.txt; echo top $?; "
                   "echo changed > node_modules/greet/index.js 2>/dev/null; echo nested $?; "
                   "rm node_modules/.bin/lint-tool 2>/dev/null; echo removed $?");
  ASSERT_EQ(o.status, 0) << describe(o);
  EXPECT_NE(o.out.find("top 0\n"), std::string::npos) << describe(o);
  if (running_as_root() && !why_no_idmapped_layer(f.project()).empty()) {
    // The files are root's and the call runs as 65534; with no idmapped
    // mount here it reads them, and writes where it may.
    EXPECT_NE(o.out.find("nested 2\n"), std::string::npos) << describe(o);
    EXPECT_NE(o.out.find("removed 1\n"), std::string::npos) << describe(o);
  } else {
    // An unprivileged caller's own files; a root caller's, idmapped to the run uid.
    EXPECT_NE(o.out.find("nested 0\n"), std::string::npos) << describe(o);
    EXPECT_NE(o.out.find("removed 0\n"), std::string::npos) << describe(o);
  }
  // Nothing reached the real directory.
  EXPECT_FALSE(exists(f.file("node_modules/added.txt")));
  EXPECT_EQ(read_file(f.file("node_modules/greet/index.js")), "module.exports = (who) => 'hello, ' + who;\n");
  EXPECT_TRUE(exists(f.file("node_modules/.bin/lint-tool")));
  // The next call of the session sees what the first one left.
  Output next = f.run({"--session", session_id(o)}, "cat node_modules/added.txt");
  EXPECT_EQ(next.out, "added\n") << describe(next);
  // The real directory's newer files show through where the session did not change them.
  write_file(f.file("node_modules/late.txt"), "late\n");
  Output late = f.run({"--session", session_id(o)}, "cat node_modules/late.txt");
  EXPECT_EQ(late.out, "late\n") << describe(late);
}

// A Node project as npm makes it: a dependency packed with `npm pack` and
// installed from that tarball with `npm install` (offline: nothing is
// fetched), its bin linked into node_modules/.bin, node_modules ignored.
// npm's cache and HOME are the test's own. Empty: npm could not; the reason.
std::string npm_installed_project(Fixture& f, const TempDir& scratch) {
  f.init_git();
  const std::string pkg = scratch / "greet";
  std::filesystem::create_directories(pkg);
  write_file(pkg + "/package.json",
             "{\"name\":\"greet\",\"version\":\"1.0.0\",\"main\":\"index.js\","
             "\"bin\":{\"greet-check\":\"cli.js\"}}\n");
  write_file(pkg + "/index.js", "module.exports = (who) => 'hello, ' + who;\n");
  write_file(pkg + "/cli.js", "#!/usr/bin/env node\nconsole.log('greet-check ok');\n", 0755);
  RunOptions npm;
  npm.env = {{"HOME", scratch / "home"},
             {"npm_config_cache", scratch / "npm-cache"},
             {"npm_config_update_notifier", "false"},
             {"npm_config_audit", "false"},
             {"npm_config_fund", "false"}};
  npm.timeout = std::chrono::milliseconds(120000);
  npm.cwd = pkg;
  Output pack = run_process({"npm", "pack", "--silent", "--pack-destination", scratch.path()}, npm);
  if (pack.status != 0) return "npm pack failed: " + pack.err;
  write_file(f.file(".gitignore"), "node_modules/\n");
  write_file(f.file("package.json"),
             "{\"name\":\"carried\",\"version\":\"1.0.0\",\"scripts\":{\"test\":\"greet-check && node "
             "test.js\"}}\n");
  write_file(f.file("test.js"), "const greet = require('greet');\nconsole.log(greet('node'));\n");
  npm.cwd = f.project();
  Output install = run_process({"npm", "install", "--offline", scratch / "greet-1.0.0.tgz"}, npm);
  if (install.status != 0) return "npm install of a local tarball failed: " + install.err;
  if (!exists(f.file("node_modules/.bin/greet-check")))
    return "npm install made no node_modules/.bin/greet-check";
  return "";
}

// The failure a Node project meets first in a git session is "greet-check:
// not found": the session's first line names why, and the exact row.
TEST(Carry, AGitSessionLackingTheProjectsNodeModulesSaysSoFirstAndNamesTheRow) {
  if (::access("/usr/bin/npm", X_OK) != 0 || ::access("/usr/bin/node", X_OK) != 0)
    GTEST_SKIP() << "node and npm are not installed (scripts/install-deps installs them)";
  Fixture f;
  TempDir scratch("chock-npm");
  const std::string why = npm_installed_project(f, scratch);
  ASSERT_EQ(why, "");
  write_file(f.file("chock.zon"), std::string(".{ ") + kJitAllow + " }\n");
  f.commit_all("node project, installed");  // package.json and package-lock.json, not node_modules
  const std::string test = "npm_config_update_notifier=false npm test --silent";
  Output bare = f.run({"--keep"}, test);
  EXPECT_NE(bare.status, 0) << describe(bare);
  EXPECT_NE(bare.err.find("greet-check: not found"), std::string::npos) << describe(bare);
  const std::string line =
      "chock: node_modules is in the project and ignored by git, so this git workspace lacks it and a "
      "program "
      "that needs it fails";
  EXPECT_EQ(bare.err.rfind(line, 0), 0U) << "the session's first line: " << describe(bare);
  EXPECT_EQ(bare.err.find(line), bare.err.rfind(line)) << "said once: " << describe(bare);
  EXPECT_NE(bare.err.find("to carry it in copy-on-write, add .carry = .{ \"node_modules\" } to chock.zon (or "
                          "run with --carry node_modules)"),
            std::string::npos)
      << describe(bare);
  // Said when the session is made, not on each of its calls.
  Output next = f.run({"--session", session_id(bare)}, "true");
  EXPECT_EQ(next.err.find("ignored by git"), std::string::npos) << describe(next);
  // The row it named, added: npm test passes, and the line is not said.
  write_file(f.file("chock.zon"), std::string(".{ .carry = .{ \"node_modules\" }, ") + kJitAllow + " }\n");
  f.commit_all("carry node_modules");
  Output carried = f.run({}, test);
  EXPECT_EQ(carried.status, 0) << describe(carried);
  EXPECT_EQ(carried.out, "greet-check ok\nhello, node\n") << describe(carried);
  EXPECT_EQ(carried.err.find("ignored by git"), std::string::npos) << describe(carried);
  // A tracked directory of the same kind is the commit's: no line for it.
  std::filesystem::create_directories(f.file("vendor"));
  write_file(f.file("vendor/lib.txt"), "tracked\n");
  f.commit_all("vendor, tracked");
  Output tracked = f.run({}, "true");
  EXPECT_EQ(tracked.err.find("ignored by git"), std::string::npos) << describe(tracked);
}

// What a --keep session's npm install puts in a carried node_modules is not
// work: it holds no commit, and prune leaves the session unless named.
TEST(Carry, AKeptSessionFullOfCarriedDependenciesIsNotPrunedUnasked) {
  Fixture f;
  init_node_project(f, ".{ .carry = .{ \"node_modules\" } }\n");
  Output o =
      f.run({"--keep"},
            "mkdir -p node_modules/big/.cache && head -c 4194304 /dev/zero > node_modules/big/dep.bin && "
            "echo lint > node_modules/big/.cache/lint.json");
  ASSERT_EQ(o.status, 0) << describe(o);
  const std::string id = session_id(o);
  Output list = f.chock({"workspace", "list", "--json"});
  const auto sessions = nlohmann::json::parse(list.out, nullptr, false);
  ASSERT_TRUE(sessions.is_array() && sessions.size() == 1) << list.out;
  EXPECT_EQ(sessions[0]["unapplied"], 0) << list.out;
  EXPECT_GT(sessions[0]["size_bytes"].get<std::uint64_t>(), 4000000U) << list.out;
  Output prune = f.chock({"workspace", "prune"});
  EXPECT_EQ(prune.status, 0) << describe(prune);
  EXPECT_NE(prune.err.find("pruned 0 session(s)"), std::string::npos) << describe(prune);
  EXPECT_NE(prune.err.find("1 made with --keep were kept"), std::string::npos) << describe(prune);
  Output next =
      f.run({"--session", id}, "cat node_modules/big/.cache/lint.json && wc -c < node_modules/big/dep.bin");
  EXPECT_EQ(next.out, "lint\n4194304\n") << describe(next);
  EXPECT_FALSE(exists(f.file("node_modules/big"))) << "the call's write reached the project";
  Output named = f.chock({"workspace", "prune", id});
  EXPECT_EQ(named.status, 0) << describe(named);
  EXPECT_NE(named.err.find("pruned 1 session(s)"), std::string::npos) << describe(named);
  EXPECT_FALSE(exists(f.sessions() + "/" + id));
}

// An overlay session shows node_modules already; named in .carry, what a
// call writes there stays for the session's calls and is not a changed path.
TEST(Carry, AnOverlaySessionsWritesInACarriedDirectoryAreNotWorkAndStay) {
  Fixture f;
  f.init_plain();
  std::filesystem::create_directories(f.file("node_modules/greet"));
  write_file(f.file("node_modules/greet/index.js"), "module.exports = 1;\n");
  const std::string cache_write = "mkdir -p node_modules/.cache && echo lint > node_modules/.cache/lint.json";
  // The neighbour: not named, the same write is a changed path that keeps a one-call session.
  Output unnamed = f.run({}, cache_write);
  ASSERT_EQ(unnamed.status, 0) << describe(unnamed);
  EXPECT_NE(unnamed.err.find(" kept: 1 changed path(s)"), std::string::npos) << describe(unnamed);
  ASSERT_EQ(f.chock({"workspace", "remove", session_id(unnamed), "--force"}).status, 0);

  write_file(f.file("chock.zon"), ".{ .carry = .{ \"node_modules\" } }\n");
  Output once = f.run({}, cache_write);
  ASSERT_EQ(once.status, 0) << describe(once);
  EXPECT_NE(once.err.find("chock: carried: node_modules (an overlay workspace shows every file already"),
            std::string::npos)
      << describe(once);
  EXPECT_NE(once.err.find("removed: its call left no change"), std::string::npos) << describe(once);

  Output kept = f.run({"--keep"}, cache_write + " && rm node_modules/greet/index.js");
  ASSERT_EQ(kept.status, 0) << describe(kept);
  const std::string id = session_id(kept);
  Output list = f.chock({"workspace", "list", "--json"});
  const auto sessions = nlohmann::json::parse(list.out, nullptr, false);
  ASSERT_TRUE(sessions.is_array() && sessions.size() == 1) << list.out;
  EXPECT_EQ(sessions[0]["unapplied"], 0) << "a write and a removal in node_modules: " << list.out;
  Output next = f.run({"--session", id}, "cat node_modules/.cache/lint.json; ls node_modules/greet | wc -l");
  EXPECT_EQ(next.out, "lint\n0\n") << describe(next);
  EXPECT_TRUE(exists(f.file("node_modules/greet/index.js")));
  EXPECT_FALSE(exists(f.file("node_modules/.cache")));
  // Work beside it counts, and adopt takes that and not the carried directory.
  ASSERT_EQ(f.run({"--session", id}, "echo more >> a.txt").status, 0);
  Output adopt = f.chock({"workspace", "adopt", id});
  ASSERT_EQ(adopt.status, 0) << describe(adopt);
  EXPECT_NE(adopt.out.find("changed\ta.txt\n"), std::string::npos) << adopt.out;
  EXPECT_NE(adopt.out.find("skipped\tnode_modules\ta carried directory"), std::string::npos) << adopt.out;
  EXPECT_FALSE(exists(f.file(".chock-adopted/" + id + "/node_modules")));
}

TEST(Carry, ADeniedFileInsideACarriedDirectoryIsCovered) {
  Fixture f;
  init_node_project(f,
                    ".{ .carry = .{ \"node_modules\" }, .deny_read = .{ \"node_modules/greet/token\" } }\n");
  write_file(f.file("node_modules/greet/token"), "secret-token\n");
  Output o = f.run({}, "cat node_modules/greet/token; cat node_modules/greet/index.js");
  ASSERT_EQ(o.status, 0) << describe(o);
  EXPECT_EQ(o.out.find("secret-token"), std::string::npos) << describe(o);
  EXPECT_NE(o.out.find("denied by the project"), std::string::npos) << describe(o);
  EXPECT_NE(o.out.find("hello, "), std::string::npos) << describe(o);
}

TEST(Carry, PathsOutsideTrackedLinkedOrDeniedAreRefusedInOneLine) {
  Fixture f;
  init_node_project(f, ".{}\n");
  ASSERT_EQ(::symlink("node_modules", f.file("linked").c_str()), 0);
  write_file(f.file(".gitignore"), "node_modules/\nlinked\n.env\n");
  write_file(f.file(".env"), "SECRET=1\n");
  struct Case {
    std::vector<std::string> flags;
    std::string said;
  };
  const Case cases[] = {
      {{"--carry", "../x"},
       "chock: --carry ../x: '..' is refused; a carried path never leaves the project\n"},
      {{"--carry", ".git"}, "chock: --carry .git: the repository is never carried\n"},
      {{"--carry", "sub"},
       "chock: carry sub: git does not ignore it, so the workspace has it from the commit; carry names "
       "ignored directories (node_modules, .venv)\n"},
      {{"--carry", "linked"},
       "chock: carry linked: it is not a directory beneath the project reached without a symbolic link "
       "(ELOOP)\n"},
      {{"--deny", ".env", "--carry", ".env"},
       "chock: carry .env: it is a denied path; a denied path is never carried\n"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args{"run"};
    args.insert(args.end(), c.flags.begin(), c.flags.end());
    args.insert(args.end(), {"--", "true"});
    Output o = f.chock(args);
    EXPECT_EQ(o.status, 125) << describe(o);
    EXPECT_NE(o.err.find(c.said), std::string::npos) << describe(o);
  }
  // In chock.zon the same is refused where it is written.
  write_file(f.file("chock.zon"), ".{ .carry = .{ \"../x\" } }\n");
  Output zon = f.chock({"run", "--", "true"});
  EXPECT_EQ(zon.status, 125) << describe(zon);
  EXPECT_NE(zon.err.find("/chock.zon:1:16: error: \"../x\" has a '..' component"), std::string::npos)
      << describe(zon);
  write_file(f.file("chock.zon"), ".{ .deny_read = .{ \".env\" }, .carry = .{ \".env\" } }\n");
  Output denied = f.chock({"run", "--", "true"});
  EXPECT_EQ(denied.status, 125) << describe(denied);
  EXPECT_NE(denied.err.find("/chock.zon:1:42: error: \".env\" is denied by deny_read"), std::string::npos)
      << describe(denied);
}

}  // namespace
}  // namespace chock::test::ws
