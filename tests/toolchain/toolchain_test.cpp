// The caller's PATH inside a call: an entry the sandbox does not have is
// named when the session starts, a command found there outside is named
// with what runs inside instead, and the operator (never a project) binds
// such toolchains read-only at their own paths with .toolchain_paths.
#include <sys/stat.h>
#include <unistd.h>

#include "support.hpp"

namespace chock::test::ws {
namespace {

class Toolchain : public ::testing::Test {
 protected:
  void SetUp() override {
    f.init_git();
    ASSERT_EQ(::mkdir((tools_.path() + "/bin").c_str(), 0755), 0);
    write_file(tools_.path() + "/bin/python3", "#!/bin/sh\necho the callers python\n", 0755);
    ASSERT_EQ(::mkdir((f.config() + "/chock").c_str(), 0755), 0);
  }
  Output run(const std::vector<std::string>& command) const {
    RunOptions o;
    o.cwd = f.project();
    o.env = {{"XDG_DATA_HOME", f.data()},
             {"XDG_STATE_HOME", f.state()},
             {"XDG_CONFIG_HOME", f.config()},
             {"PATH", tools_.path() + "/bin:/usr/local/bin:/usr/bin:/bin"}};
    std::vector<std::string> args{"run", "--"};
    args.insert(args.end(), command.begin(), command.end());
    return chock(args, o);
  }
  void operator_file(const std::string& text) const { write_file(f.config() + "/chock/config.zon", text); }
  Fixture f;
  TempDir tools_{"chock-tools"};
};

TEST_F(Toolchain, APathEntryTheSandboxLacksAndTheCommandFoundThereAreNamed) {
  Output o = run({"python3", "-c", "print('inside')"});
  EXPECT_EQ(o.status, 0) << describe(o);
  EXPECT_EQ(o.out, "inside\n") << describe(o);
  EXPECT_NE(
      o.err.find("chock: PATH entries the sandbox does not have: " + tools_.path() + "/bin (an operator"),
      std::string::npos)
      << describe(o);
  EXPECT_NE(
      o.err.find("chock: `python3` is " + tools_.path() +
                 "/bin/python3 outside, which the sandbox does not have; inside it is /usr/bin/python3, "
                 "another program"),
      std::string::npos)
      << describe(o);
  // A command the sandbox has at the same path gets no line.
  Output same = run({"true"});
  EXPECT_EQ(same.err.find("`true`"), std::string::npos) << describe(same);
}

TEST_F(Toolchain, TheOperatorsToolchainPathsAreBoundReadOnlyAtTheirOwnPaths) {
  operator_file(".{ .toolchain_paths = .{ \"" + tools_.path() + "\" } }\n");
  Output o =
      run({"sh", "-c", "python3; echo x > " + tools_.path() + "/bin/new 2>/dev/null || echo read-only"});
  EXPECT_EQ(o.status, 0) << describe(o);
  EXPECT_EQ(o.out, "the callers python\nread-only\n") << describe(o);
  EXPECT_EQ(o.err.find("PATH entries the sandbox does not have"), std::string::npos) << describe(o);
  EXPECT_EQ(o.err.find("`python3`"), std::string::npos) << describe(o);
  EXPECT_FALSE(exists(tools_.path() + "/bin/new"));
}

TEST_F(Toolchain, ToolchainPathsAreTheOperatorsAndCheckedWhereWritten) {
  write_file(f.file("chock.zon"), ".{ .toolchain_paths = .{ \"/opt\" } }\n");
  f.commit_all("a project naming a toolchain");
  Output project = run({"true"});
  EXPECT_EQ(project.status, 125) << describe(project);
  EXPECT_NE(project.err.find("/chock.zon:1:4: error: .toolchain_paths is the operator's"), std::string::npos)
      << describe(project);
  git_ok(f.project(), {"rm", "-q", "chock.zon"});
  f.commit_all("no more");
  ASSERT_EQ(::symlink(tools_.path().c_str(), (tools_.path() + "-link").c_str()), 0);
  struct Case {
    std::string entry, said;
  };
  const Case cases[] = {
      {"relative/dir", "\"relative/dir\" is relative; toolchain_paths takes absolute paths (or ~/...)"},
      {tools_.path() + "/../x", "has an empty, '.' or '..' component"},
      {tools_.path() + "-link", "is a symbolic link; name the directory it leads to"},
      {tools_.path() + "/nothing-here", "/nothing-here does not exist"},
      {tools_.path() + "/bin/python3", "/bin/python3\" is not a directory"},
  };
  for (const auto& c : cases) {
    operator_file(".{ .toolchain_paths = .{ \"" + c.entry + "\" } }\n");
    Output o = run({"true"});
    EXPECT_EQ(o.status, 125) << describe(o);
    EXPECT_NE(o.err.find("/chock/config.zon:1:26: error: "), std::string::npos) << describe(o);
    EXPECT_NE(o.err.find(c.said), std::string::npos) << describe(o);
  }
  ::unlink((tools_.path() + "-link").c_str());
}

}  // namespace
}  // namespace chock::test::ws
