// Bad input on every command-line surface: each is one line naming what is
// wrong, the documented exit status, never a crash and never a raw control
// byte of the input echoed back.
#include <gtest/gtest.h>

#include "cli_env.hpp"

namespace chock::test {
namespace {

struct Case {
  std::vector<std::string> args;
  int status;
  std::string says;  // in the one line
};

TEST(BadInput, EachIsOneLineWithItsExitStatus) {
  TempDir home("chock-bad-input");
  RunOptions env = chock_dirs_under(home);
  env.cwd = home / "p";
  RunOptions setup = env;
  setup.cwd = home.path();
  ASSERT_EQ(run_process({"sh", "-c", "mkdir p && cd p && git init -q && echo a > a"}, setup).status, 0);
  const Case cases[] = {
      {{"--bogus"}, 2, "(see 'chock --help')"},
      {{"run", "--bogus", "--", "true"}, 125, "--bogus"},
      {{"run"}, 125, "command is required"},
      {{"run", "--timeout", "abc", "--", "true"}, 125, "expected a number of seconds above 0, not 'abc'"},
      {{"sandbox", "--timeout", "-3", "--", "true"}, 125, "expected a number of seconds above 0, not '-3'"},
      {{"run", "--session", "../../etc", "--", "true"}, 125, "bad session id"},
      {{"run", "--session", "a\nb\x1b[31m", "--", "true"}, 125, "bad session id"},
      {{"run", "--session", "-rf", "--", "true"}, 125, "bad session id"},
      {{"run", "--project", "/nonexistent/dir", "--", "true"}, 125, "/nonexistent/dir: ENOENT"},
      {{"run", "--cwd", "../..", "--", "true"}, 125, "is outside the project"},
      {{"run", "--env", "=x", "--", "true"}, 125, "expected K=V"},
      {{"run", "--net", "everywhere", "--", "true"}, 125, "everywhere"},
      {{"sandbox", "--", ""}, 125, "no command given"},
      {{"sandbox", "--", "/nonexistent"}, 127, "command not found in the sandbox"},
      {{"sandbox", "--ro", "relative/path", "--", "true"}, 125, "absolute path"},
      {{"sandbox", "--ro", "/a/../etc", "--", "true"}, 125, "without . or .."},
      {{"sandbox", "--device", "/etc/passwd", "--", "true"}, 125, "a device is a node below /dev"},
      {{"apply", "zzzzzzzz"}, 125, "no session 'zzzzzzzz'"},
      {{"workspace", "remove"}, 2, "session is required"},
      {{"workspace", "remove", "no\nsuch"}, 2, "bad session id"},
      {{"memory", "read", "Bad Name"}, 2, "a note's name"},
      {{"memory", "write", "n", "--kind", "rumour", "--description", "d"}, 2, "rumour"},
      {{"policy", "explain", "Bad.Action"}, 2, "upper case"},
      {{"policy", "explain", "*"}, 2, "*"},
      {{"mcp", "wrap"}, 2, "name is required"},
      {{"completion", "fish"}, 2, "fish not in"},
      {{"fetch", "ftp://x"}, 2, "only http and https"},
      {{"tasks", "show", "nosuch"}, 2, "a task id looks like SESSION-NN"},
      {{"tasks", "wait", "abcdefgh-01", "--timeout", "soon"}, 2, "not 'soon'"},
  };
  for (const auto& c : cases) {
    Output o = chock(c.args, env);
    std::string shown;
    for (const auto& a : c.args) shown += " " + a;
    SCOPED_TRACE("chock" + shown);
    EXPECT_EQ(o.status, c.status) << o.err;
    EXPECT_FALSE(o.signal) << "killed by a signal";
    ASSERT_FALSE(o.err.empty());
    EXPECT_EQ(o.err.find('\n'), o.err.size() - 1) << "more than one line:\n" << o.err;
    EXPECT_TRUE(o.err.starts_with("chock: ")) << o.err;
    EXPECT_NE(o.err.find(c.says), std::string::npos) << o.err;
    EXPECT_EQ(o.err.find('\x1b'), std::string::npos) << "an escape byte of the input reached the terminal";
  }
}

}  // namespace
}  // namespace chock::test
