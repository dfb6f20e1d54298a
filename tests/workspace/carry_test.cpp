// Carried directories: what git ignores (node_modules, .venv) reaches a git
// workspace copy-on-write when the project names it in .carry or --carry;
// what the call changes there stays in the session; a path outside the
// project, a tracked one, a link or a denied one is refused.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

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
