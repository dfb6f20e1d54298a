// The call never holds the person's terminal: when chock's own descriptors
// are a terminal, the call gets a pseudo-terminal of its own. Driven through
// a real terminal made by script(1); the shell around chock stands for the
// person's shell, which reads the same terminal before and after the call.
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

#include "process.hpp"

namespace chock::test {
namespace {

std::string describe(const Output& o) {
  return "status " + std::to_string(o.status) + ", out: " + o.out + ", err: " + o.err;
}

// `script` running `shell` (sh -c) on a terminal of its own, `typed` fed to
// that terminal from the start.
Output on_terminal(const std::string& shell, const std::string& typed = {}) {
  RunOptions o;
  o.env = {{"CHOCK", chock_binary()}};
  o.stdin_data = typed;
  o.timeout = std::chrono::seconds(60);
  return run_process({"script", "-qec", shell, "/dev/null"}, o);
}

class Terminal : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::access("/usr/bin/script", X_OK) != 0) GTEST_SKIP() << "script(1) is not installed (bsdutils)";
  }
};

// The attack: read keystrokes through fd 2, which was the person's terminal.
// They were never the call's; and since what the terminal queued during the
// call may be its answers to the call's queries, the shell does not get them
// either (issue 54: the input is flushed without --stdin).
TEST_F(Terminal, KeystrokesTypedDuringTheCallNeverReachItWithoutStdin) {
  const Output o = on_terminal(
      "stty -echo; \"$CHOCK\" sandbox -- sh -c 'timeout 3 head -c 7 <&2 | od -c; echo call-done'; "
      "stty -icanon min 0 time 5; echo \"after:[$(dd bs=64 count=1 2>/dev/null)]\"",
      "secret\n");
  EXPECT_NE(o.out.find("call-done"), std::string::npos) << describe(o);
  EXPECT_EQ(o.out.find("s   e   c"), std::string::npos) << "the call read the keystrokes: " << describe(o);
  EXPECT_NE(o.out.find("after:["), std::string::npos) << describe(o);
  EXPECT_EQ(o.out.find("after:[secret"), std::string::npos) << "not flushed: " << describe(o);
}

// With --stdin the call gets what is typed, through its own terminal.
TEST_F(Terminal, WithStdinTheCallReadsWhatIsTyped) {
  const Output o = on_terminal("\"$CHOCK\" sandbox --stdin -- sh -c 'read line; echo got:$line'", "hello\n");
  EXPECT_EQ(o.status, 0) << describe(o);
  EXPECT_NE(o.out.find("got:hello"), std::string::npos) << describe(o);
}

// Echo off and TIOCEXCL on the call's terminal do not outlive the call:
// the person's terminal echoes and opens afterwards.
TEST_F(Terminal, WhatTheCallDoesToItsTerminalStaysWithTheCall) {
  if (::access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "/usr/bin/python3 is not installed";
  const Output o = on_terminal(
      "\"$CHOCK\" sandbox -- sh -c \"stty -echo <&2 && python3 -c 'import fcntl, termios; "
      "fcntl.ioctl(2, termios.TIOCEXCL); print(\\\"exclusive\\\")'\"; "
      "stty -a | tr ' ' '\\n' | grep -x -- '-\\?echo'; sh -c 'exec 3</dev/tty && echo reopened'");
  EXPECT_NE(o.out.find("exclusive"), std::string::npos) << describe(o);
  EXPECT_NE(o.out.find("\necho\r\n"), std::string::npos) << "the terminal no longer echoes: " << describe(o);
  EXPECT_NE(o.out.find("reopened"), std::string::npos) << describe(o);
}

// isatty still holds inside, so colours still work.
TEST_F(Terminal, ColoursStillWorkOnATerminal) {
  const Output o = on_terminal("\"$CHOCK\" sandbox -- ls --color=auto /");
  EXPECT_EQ(o.status, 0) << describe(o);
  EXPECT_NE(o.out.find("\x1b["), std::string::npos) << describe(o);
  // The program's "\n" reaches the person's terminal once, as "\r\n", not "\r\r\n".
  EXPECT_EQ(o.out.find("\r\r\n"), std::string::npos) << describe(o);
}

// No terminal, no relay: the bytes are the program's own, in order.
TEST_F(Terminal, APipeGetsTheBytesAsTheyAre) {
  const Output o =
      chock({"sandbox", "--", "sh", "-c", "printf 'one\\n'; printf 'two' >&2; printf 'three\\n'"});
  EXPECT_EQ(o.status, 0) << describe(o);
  EXPECT_EQ(o.out, "one\nthree\n");
  EXPECT_EQ(o.err, "two");
}

}  // namespace
}  // namespace chock::test
