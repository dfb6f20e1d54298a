// What a call writes reaches the person's terminal only as ordinary output
// (issue 54, class 2), and the person's output file stays the person's
// (class 4). Driven through a pseudo-terminal the test opens itself: chock
// (or a shell standing for the person's) runs on its slave side, and the
// master side reads every byte the person's terminal would get, and writes
// what the terminal would answer.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "process.hpp"

namespace chock::test {
namespace {

struct OnTerminal {
  int status = -1;
  std::string out;  // every byte the terminal got
};

std::string visible(const std::string& bytes) {
  std::string s;
  for (unsigned char c : bytes) {
    if (c >= 0x20 && c < 0x7F) {
      s.push_back(static_cast<char>(c));
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      s += hex;
    }
  }
  return s;
}

// `argv` on a fresh terminal (raw, so the bytes are exactly what was
// written; a read of it waits at most a second), $CHOCK naming chock. Once
// `ready` has come out, `answer` is called with the master: the terminal's side.
OnTerminal on_terminal(const std::vector<std::string>& argv, const std::string& ready = {},
                       const std::function<void(int)>& answer = {}) {
  int master = -1;
  int slave = -1;
  termios raw{};
  cfmakeraw(&raw);
  raw.c_cc[VMIN] = 0;
  raw.c_cc[VTIME] = 10;
  winsize size{24, 80, 0, 0};
  if (::openpty(&master, &slave, nullptr, &raw, &size) != 0) return {};
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setsid();
    ::ioctl(slave, TIOCSCTTY, 0);
    for (int fd = 0; fd < 3; ++fd) ::dup2(slave, fd);
    if (slave > 2) ::close(slave);
    ::close(master);
    ::setenv("CHOCK", chock_binary().c_str(), 1);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    ::_exit(127);
  }
  ::close(slave);
  OnTerminal r;
  bool answered = !answer;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  char buf[4096];
  for (;;) {
    pollfd p{master, POLLIN, 0};
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      break;
    }
    if (::poll(&p, 1, 500) <= 0) continue;
    const ssize_t n = ::read(master, buf, sizeof buf);
    if (n <= 0) break;  // EIO: the shell and chock have closed the terminal
    r.out.append(buf, static_cast<std::size_t>(n));
    if (!answered && r.out.find(ready) != std::string::npos) {
      answer(master);
      answered = true;
    }
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ::close(master);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

// `chock sandbox [flags] -- printf %s BYTES` on a terminal.
OnTerminal printed(const std::string& bytes, const std::vector<std::string>& flags = {}) {
  std::vector<std::string> argv{chock_binary(), "sandbox"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.insert(argv.end(), {"--", "printf", "%s", bytes});
  return on_terminal(argv);
}

TEST(TerminalRelay, OrdinaryOutputReachesTheTerminalUnchanged) {
  const std::string ordinary =
      "plain \xc3\xa9\xe2\x9c\x93\xf0\x9f\x98\x80\r\n\t\b\a"                  // text, UTF-8, controls
      "\x1b[1;31mred\x1b[38;5;196m\x1b[38:2::1:2:3m\x1b[48;2;4;5;6mx\x1b[0m"  // SGR
      "\x1b[2A\x1b[3B\x1b[4C\x1b[D\x1b[10;20H\x1b[5G\x1b[K\x1b[2J\x1b[3X\x1b[2P\x1b[L\x1b[M"
      "\x1b[1;20r\x1b[r\x1b[S\x1b[T\x1b"
      "7\x1b"
      "8\x1bM\x1b(0q\x1b(B"                                 // scroll, cursor, charset
      "\x1b[?1049h\x1b[?1h\x1b=\x1b[?25l\x1b[?12h\x1b[?7l"  // less's and vim's modes
      "\x1b[?7h\x1b[?25h\x1b>\x1b[?1l\x1b[?1049l done";     // ...put back by the call
  const OnTerminal o = printed(ordinary);
  EXPECT_EQ(o.status, 0) << visible(o.out);
  EXPECT_EQ(o.out, ordinary) << visible(o.out);
}

TEST(TerminalRelay, AnOsc52FromTheCallNeverReachesTheClipboard) {
  const OnTerminal o = printed(
      "a\x1b]52;c;aWQgPiAvdG1wL3gK\ab\x1b]52;p;aWQK\x1b\\c\x1b]0;title\ad\x1b]2;; id > /tmp/x\x1b\\e"
      "\x1b]8;;https://example.org\x1b\\f\x1b]8;;\x1b\\g");
  EXPECT_EQ(o.status, 0) << visible(o.out);
  EXPECT_EQ(o.out, "abcdefg") << visible(o.out);
}

// An OSC number passes only where the person allowed it (terminal.osc.8:
// hyperlinks); the clipboard's stays dropped beside it.
TEST(TerminalRelay, AnOscNumberThePersonAllowedPassesAndNoOther) {
  const std::string bytes = "a\x1b]8;;https://example.org\x1b\\b\x1b]8;;\x1b\\c\x1b]52;c;aWQK\ad";
  const OnTerminal allowed = printed(bytes, {"--policy-rule", "terminal.osc.8=allow"});
  EXPECT_EQ(allowed.status, 0) << visible(allowed.out);
  EXPECT_EQ(allowed.out, "a\x1b]8;;https://example.org\x1b\\b\x1b]8;;\x1b\\cd") << visible(allowed.out);
  const OnTerminal none = printed(bytes);
  EXPECT_EQ(none.out, "abcd") << visible(none.out);
}

TEST(TerminalRelay, NoSequenceFromTheCallMakesThePersonsTerminalAnswer) {
  const OnTerminal o = printed(
      "a\x05"                                            // ENQ
      "b\x1b[c\x1b[>c\x1b[=c\x1b[0c"                     // device attributes
      "c\x1b[5n\x1b[6n\x1b[?6n"                          // status, cursor position
      "d\x1b[21t\x1b[14t\x1b[18t\x1b[13t"                // title, size and position reports
      "e\x1bP$qm\x1b\\\x1bP+q544e\x1b\\"                 // DECRQSS, XTGETTCAP (DCS)
      "f\x1b[?2004$p\x1b[>q\x1b[?u\x1b_Gi=1;AAAA\x1b\\"  // DECRQM, XTVERSION, keyboard, APC
      "g\x1b^pm\x1b\\\x1bXsos\x1b\\\x1bZ\xc2\x9b"
      "6n\x9b"
      "6n"  // PM, SOS, DECID, C1 CSI
      "h");
  EXPECT_EQ(o.status, 0) << visible(o.out);
  EXPECT_EQ(o.out, "abcdefg6n6nh") << visible(o.out);
}

TEST(TerminalRelay, ModesTheCallLeavesOnAreTurnedOffWhenItEnds) {
  const OnTerminal o = printed("\x1b[?1049h\x1b[?25l\x1b=\x1b[?2004h\x1b[?1000;1006h\x1b[?1004h\x1b[7mx");
  EXPECT_EQ(o.status, 0) << visible(o.out);
  EXPECT_EQ(o.out,
            "\x1b[?1049h\x1b[?25l\x1b=\x1b[?2004h\x1b[?1000;1006h\x1b[?1004h\x1b[7mx"
            "\x1b[?1049l\x1b[?25h\x1b[?1000l\x1b[?1004l\x1b[?1006l\x1b[?2004l\x1b>\x1b[m")
      << visible(o.out);
}

TEST(TerminalRelay, RawTerminalPassesTheCallsBytesForOneCall) {
  const std::string bytes = "a\x1b]0;title\ab\x1b[6n";
  const OnTerminal o = printed(bytes, {"--raw-terminal"});
  EXPECT_EQ(o.status, 0) << visible(o.out);
  EXPECT_EQ(o.out, bytes) << visible(o.out);
}

// The terminal answers a query (a title report, device attributes) into its
// own input, where the person's shell reads next: what it queued while the
// call ran is gone when chock returns.
TEST(TerminalRelay, AnAnswerTheTerminalQueuedDuringTheCallIsNotReadByTheShell) {
  const OnTerminal o =
      on_terminal({"sh", "-c",
                   "\"$CHOCK\" sandbox -- sh -c 'echo ready; sleep 2; echo call-done'; "
                   "echo \"shell read:[$(dd bs=256 count=1 2>/dev/null | od -An -c | tr -s ' ')]\""},
                  "ready", [](int master) {
                    const std::string answer = "\x1b]l; id > /tmp/x\x1b\\\r\x1b[?64;1;9c";
                    (void)!::write(master, answer.data(), answer.size());
                  });
  EXPECT_EQ(o.status, 0) << visible(o.out);
  EXPECT_NE(o.out.find("call-done"), std::string::npos) << visible(o.out);
  EXPECT_NE(o.out.find("shell read:[]"), std::string::npos) << visible(o.out);
}

// `chock sandbox ... >> person.log`: the call's fd 1 is a pipe, so it can
// neither truncate the person's log nor change its mode.
TEST(OutputFile, TheCallCannotTruncateOrChmodTheCallersOutputFile) {
  if (::access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "/usr/bin/python3 is not installed";
  TempDir dir("chock-output-file");
  ::chmod(dir.path().c_str(), 0755);
  const std::string log = dir / "person.log";
  write_file(log, "earlier line 1\nearlier line 2\n", 0644);
  // The call's uid (65534 under a root caller) owns it, as the caller does: fchmod would work on the file.
  if (running_as_root()) {
    ASSERT_EQ(::chown(log.c_str(), 65534, 65534), 0);
  }
  const int fd = ::open(log.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(fd, 1);
    ::execl(chock_binary().c_str(), "chock", "sandbox", "--", "/usr/bin/python3", "-c",
            "import os\n"
            "for what, call in (('truncate', lambda: os.ftruncate(1, 0)), ('chmod', lambda: os.fchmod(1, "
            "0o666))):\n"
            "    try:\n"
            "        call(); print(what, 'done', flush=True)\n"
            "    except OSError as e:\n"
            "        print(what, 'refused', e.errno, flush=True)\n",
            nullptr);
    ::_exit(127);
  }
  ::close(fd);
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  const std::string after = read_file(log);
  EXPECT_EQ(after.rfind("earlier line 1\nearlier line 2\n", 0), 0u) << after;
  EXPECT_NE(after.find("truncate refused"), std::string::npos) << after;
  EXPECT_NE(after.find("chmod"), std::string::npos) << after;
  struct stat st {};
  ASSERT_EQ(::stat(log.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0644u);
}

// 2>&1 into one file: one pipe, so the program's order is kept.
TEST(OutputFile, StdoutAndStderrIntoOneFileKeepTheirOrder) {
  TempDir dir("chock-output-file");
  const std::string log = dir / "both.log";
  const Output o = run_process(
      {"sh", "-c",
       "\"$0\" sandbox -- sh -c 'i=0; while [ $i -lt 300 ]; do echo o$i; echo e$i >&2; i=$((i+1)); done' "
       ">\"$1\" 2>&1",
       chock_binary(), log});
  EXPECT_EQ(o.status, 0) << o.err;
  std::string expected;
  for (int i = 0; i < 300; ++i) expected += "o" + std::to_string(i) + "\ne" + std::to_string(i) + "\n";
  EXPECT_EQ(read_file(log), expected);
}

}  // namespace
}  // namespace chock::test
