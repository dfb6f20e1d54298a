// Issue 53: a filtered call attacks Chock's own host side (the relay, the
// broker, the resolver) rather than the sandbox. Each attack is stopped in
// a way the test names, chock outlives it and ends in time, and an allowed
// neighbour in the same call still works.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <time.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "util/fd.hpp"
#include "world.hpp"

namespace chock::test {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

const std::vector<std::string> kRules = {"net.connect.test.chock.www.*=allow",
                                         "net.connect.test.chock.flood.*=allow",
                                         "net.connect.test.chock.slow.*=allow"};

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::vector<std::string> sandbox_args(const std::string& script, const std::vector<std::string>& flags = {}) {
  std::vector<std::string> args{"sandbox", "--net", "filtered", "--ro", stage_dir()};
  for (const auto& r : kRules) args.insert(args.end(), {"--policy-rule", r});
  args.insert(args.end(), flags.begin(), flags.end());
  args.insert(args.end(), {"--", "sh", "-c", script});
  return args;
}

Output filtered(const std::string& script) {
  RunOptions o;
  o.timeout = milliseconds(60000);
  return chock(sandbox_args(script), o);
}

double realtime_now() {
  timespec t{};
  ::clock_gettime(CLOCK_REALTIME, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
}

// The number after `mark` in `text` ("ended 1733570000.123"), or -1.
double number_after(const std::string& text, const std::string& mark) {
  const auto at = text.find(mark);
  return at == std::string::npos ? -1 : std::stod(text.substr(at + mark.size()));
}

// Whether this kernel refuses SCM_RIGHTS to a socket that asks
// (SO_PASSRIGHTS, Linux 6.16), asked of the kernel, not of Chock's code.
bool kernel_refuses_passed_fds() {
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) return false;
  UniqueFd a(pair[0]), b(pair[1]);
  const int off = 0;
  constexpr int kSoPassRightsNumber = 83;  // asm-generic/socket.h
  return ::setsockopt(a.get(), SOL_SOCKET, kSoPassRightsNumber, &off, sizeof off) == 0;
}

// The broker flooded with bad requests that are never read, then the
// broker's own socket sent into itself, then the program's end: chock
// hung there for good (its broker thread blocked in send(), the socket kept
// open by the descriptor parked in it). Now the descriptor is refused at
// the sender, the call loses its broker with a line, and chock ends at once.
TEST(HostSide, BrokerFloodThenSelfSendDoesNotHangChock) {
  CHOCK_NEED_WORLD();
  const std::string hostile = program("net-hostile");
  const std::string connect = "PATH=/run/chock/bin:$PATH chock-connect";
  const Clock::time_point start = Clock::now();
  const Output out =
      filtered("printf 'GET /whoami HTTP/1.0\\r\\nHost: www.chock.test\\r\\n\\r\\n' | " + connect +
               " www.chock.test 80 | tail -1; echo; " + hostile + " broker-flood; " + connect +
               " www.chock.test 80 </dev/null; echo \"connect-after $?\"; curl -sS -m 10 "
               "http://www.chock.test/whoami; "
               "echo; echo \"ended $(date +%s.%N)\"");
  const double ended_after = realtime_now() - number_after(out.out, "ended ");
  ASSERT_FALSE(out.timed_out) << "chock hung after its call: " << out.err;
  EXPECT_EQ(out.status, 0) << out.err;
  // The descriptor: refused at the sender's sendmsg where the kernel can,
  // else taken and closed by the broker at once.
  EXPECT_TRUE(has(out.out, kernel_refuses_passed_fds() ? "first-selfsend EPERM\n" : "first-selfsend ok\n"))
      << out.out;
  // The flood: the broker answered until it held its most unread answers,
  // then closed; the next send, and the self-send after, meet EPIPE.
  EXPECT_TRUE(has(out.out, "flood EPIPE\nselfsend EPIPE\n")) << out.out;
  EXPECT_TRUE(has(out.err, "chock: the call lost its broker (CHOCK_BROKER_FD): a program of it asked "))
      << out.err;
  EXPECT_TRUE(has(out.err, " times without reading the answers, and Chock keeps at most 64 answers unread"))
      << out.err;
  EXPECT_TRUE(has(out.out, "connect-after 3\n")) << out.out;  // the broker is gone for the rest of the call
  // The neighbours: the broker served before the flood, the relay after it.
  std::size_t served = 0;
  for (auto at = out.out.find("served at "); at != std::string::npos; at = out.out.find("served at ", at + 1))
    ++served;
  EXPECT_EQ(served, 2U) << out.out;
  EXPECT_LT(ended_after, 2.0) << "chock ended " << ended_after << " s after the call's last process";
  std::printf("host-side: broker flood: chock took %.3f s in all, ended %.3f s after its call\n",
              std::chrono::duration<double>(Clock::now() - start).count(), ended_after);
}

// A program that asks for a large answer through the relay (plain or TLS)
// and closes its socket without reading: the relay's next write meets a
// closed socket, and SIGPIPE killed chock (141), leaving no result.
TEST(HostSide, AConnectionClosedUnreadDoesNotKillChockWithSigpipe) {
  CHOCK_NEED_WORLD();
  std::string tls;
  if (std::getenv("CHOCK_WORLD_NO_TLS") == nullptr)
    tls =
        "python3 -c 'import socket, ssl\n"
        "for i in range(5):\n"
        "    c = ssl.create_default_context().wrap_socket(socket.create_connection((\"www.chock.test\", "
        "443)),"
        " server_hostname=\"www.chock.test\")\n"
        "    c.sendall(b\"GET /stream?n=50000000 HTTP/1.0\\r\\nHost: www.chock.test\\r\\n\\r\\n\"); "
        "c.close()\n"
        "print(\"tls unread\")'; sleep 0.5; ";
  const Output out = filtered(program("net-hostile") + " unread-streams 20; " + tls +
                              "curl -sS -m 10 http://www.chock.test/whoami");
  ASSERT_FALSE(out.timed_out) << out.err;
  EXPECT_EQ(out.status, 0) << "status " << out.status << (out.status == 141 ? " (SIGPIPE)" : "") << "\n"
                           << out.err;
  EXPECT_TRUE(has(out.out, "unread 21 of 21\n")) << out.out;
  if (!tls.empty()) {
    EXPECT_TRUE(has(out.out, "tls unread\n")) << out.out;
  }
  EXPECT_TRUE(has(out.out, "served at ")) << out.out;  // the neighbour, after
}

// Made-up names without end asked of the call's resolver grew the
// host-side chock without bound (261,120 names, 152 MB). Past the cap a
// new name is refused, with a line; a name answered before still connects.
TEST(HostSide, ANameFloodIsRefusedPastTheResolversCap) {
  CHOCK_NEED_WORLD();
  const Output out = filtered("curl -sS -m 10 http://www.chock.test/whoami; echo; " + program("net-hostile") +
                              " name-flood 1500; curl -sS -m 10 http://www.chock.test/whoami");
  ASSERT_FALSE(out.timed_out) << out.err;
  EXPECT_EQ(out.status, 0) << out.err;
  // www.chock.test took one of the 1024 names: 1023 of the flood are answered.
  EXPECT_TRUE(has(out.out, "names noerror=1023 refused=477 other=0\n")) << out.out;
  EXPECT_TRUE(has(out.out, "first-again rcode=0\n")) << out.out;
  // Said at the end, as a note: the program went on and exited 0.
  EXPECT_TRUE(has(out.err,
                  "chock: note: the call's resolver refused 477 questions for new names: a call may ask for "
                  "1024 names, and this one asked for more; the program went on, and exited 0"))
      << out.err;
  std::size_t served = 0;
  for (auto at = out.out.find("served at "); at != std::string::npos; at = out.out.find("served at ", at + 1))
    ++served;
  EXPECT_EQ(served, 2U) << out.out;
}

// --timeout, SIGINT and SIGTERM end chock within 2 s whatever the call's
// host side is doing: its broker flooded, lost and sent into itself; a
// relayed stream nobody reads; the broker waiting on a lookup that never
// answers (slow.chock.test's queries are dropped).
TEST(HostSide, TimeoutAndSignalsEndChockWithinTwoSecondsInEveryState) {
  CHOCK_NEED_WORLD();
  const std::string connect = "PATH=/run/chock/bin:$PATH chock-connect";
  const std::vector<std::pair<std::string, std::string>> states = {
      {"a broker flooded and lost", program("net-hostile") + " broker-flood; sleep 100"},
      {"a stream unread and a lookup pending",
       "curl -sS http://www.chock.test/stream?n=500000000 | sleep 100 & " + connect +
           " slow.chock.test 80 </dev/null & sleep 100"},
  };
  for (const auto& [state, script] : states) {
    RunOptions o;
    o.timeout = milliseconds(20000);
    const Clock::time_point start = Clock::now();
    const Output timeout = chock(sandbox_args(script, {"--timeout", "3"}), o);
    const double past_timeout = std::chrono::duration<double>(Clock::now() - start).count() - 3;
    EXPECT_FALSE(timeout.timed_out) << state << ": --timeout did not end chock\n" << timeout.err;
    EXPECT_LT(past_timeout, 2.0) << state << ": --timeout\n" << timeout.err;
    EXPECT_TRUE(has(timeout.err, "chock: the call ran past its timeout")) << state << "\n" << timeout.err;
    std::printf("host-side: %s: --timeout ended chock %.3f s after it passed\n", state.c_str(), past_timeout);
    for (int sig : {SIGINT, SIGTERM}) {
      o.signal = sig;
      o.signal_after = milliseconds(3000);
      const Output e = chock(sandbox_args(script), o);
      EXPECT_FALSE(e.timed_out) << state << ": SIG" << sigabbrev_np(sig) << " did not end chock\n" << e.err;
      EXPECT_GE(e.seconds_after_signal, 0) << state << ": SIG" << sigabbrev_np(sig) << "\n" << e.err;
      EXPECT_LT(e.seconds_after_signal, 2.0) << state << ": SIG" << sigabbrev_np(sig) << "\n" << e.err;
      EXPECT_TRUE(has(e.err, "chock: the call was cancelled")) << state << "\n" << e.err;
      std::printf("host-side: %s: SIG%s ended chock in %.3f s\n", state.c_str(), sigabbrev_np(sig),
                  e.seconds_after_signal);
    }
  }
}

// A question pending at the person's terminal (a name no rule answers asks)
// is answered no by the call's end: --timeout and Ctrl-C end chock in time
// while nobody answers. (script(1) gives chock a terminal.)
TEST(HostSide, AQuestionPendingAtTheTerminalEndsWithTheCall) {
  CHOCK_NEED_WORLD();
  if (run_process({"script", "--version"}).status != 0)
    GTEST_SKIP() << "script(1) is not installed (util-linux)";
  auto quoted = [](const std::string& a) {
    std::string q = "'";
    for (char c : a) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
  };
  auto on_terminal = [&](const std::string& flags, const std::string& typed_after_3s) {
    std::string command = quoted(chock_binary());
    for (const auto& a : sandbox_args("curl -sS http://other.chock.test/; sleep 100", {}))
      command += " " + (a == "--" ? flags + " --" : quoted(a));
    // How long chock ran, measured on the terminal's side: script(1) itself
    // waits for its input to end.
    // The shell traps SIGINT (the terminal's ^C reaches its whole group) so
    // that it lives to print the time; a trap is not inherited by chock.
    const std::string timed = "trap : INT; t0=$(date +%s%N); " + command +
                              "; echo \"chock-ended-after $(( ($(date +%s%N) - t0) / 1000000 )) ms\"";
    RunOptions o;
    o.timeout = milliseconds(30000);
    Output out = run_process(
        {"sh", "-c",
         "(sleep 3; printf '" + typed_after_3s + "'; sleep 5) | script -qec " + quoted(timed) + " /dev/null"},
        o);
    return std::pair{out, number_after(out.out, "chock-ended-after ") / 1000};
  };
  const auto [timed, timed_s] = on_terminal("--timeout 3", "");
  EXPECT_FALSE(timed.timed_out) << timed.out;
  EXPECT_TRUE(has(timed.out, "net.connect.test.chock.other.80 asks: go ahead?")) << timed.out;
  EXPECT_TRUE(has(timed.out, "chock: the call ran past its timeout")) << timed.out;
  EXPECT_GT(timed_s, 2.9) << timed.out;
  EXPECT_LT(timed_s, 5.0) << timed.out;
  std::printf("host-side: a question pending: --timeout 3 ended chock after %.3f s\n", timed_s);
  const auto [interrupted, interrupted_s] = on_terminal("", "\\003");
  EXPECT_FALSE(interrupted.timed_out) << interrupted.out;
  EXPECT_TRUE(has(interrupted.out, "asks: go ahead?")) << interrupted.out;
  EXPECT_TRUE(has(interrupted.out, "chock: the call was cancelled")) << interrupted.out;
  EXPECT_GT(interrupted_s, 2.5) << interrupted.out;
  EXPECT_LT(interrupted_s, 5.0) << interrupted.out;
  std::printf("host-side: a question pending: Ctrl-C after 3 s ended chock after %.3f s\n", interrupted_s);
}

}  // namespace
}  // namespace chock::test
