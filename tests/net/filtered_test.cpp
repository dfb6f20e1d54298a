// --net filtered against the test internet: programs that know nothing of
// Chock (curl, git, Python, a C program) reach exactly the names the policy
// allows, through the call's own resolver and Chock's relay; everything else
// is refused at once, by the ruleset, the resolver or the judge.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "chock/net.hpp"
#include "chock/sandbox.hpp"
#include "log/session_log.hpp"
#include "util/fd.hpp"
#include "util/sha256.hpp"
#include "world.hpp"

namespace chock::test {
namespace {

const std::vector<std::string> kRules = {
    "net.connect.test.chock.www.*=allow", "net.connect.test.chock.v6.*=allow",
    "net.connect.test.chock.loopback.*=allow", "net.connect.test.chock.mapped.*=allow",
    "net.connect.test.chock.denied.*=deny"};

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// `chock sandbox --net filtered` with the rules, the stage read-only, `sh -c script`.
Output filtered(const std::string& script, const std::vector<std::string>& rules = kRules,
                const std::string& net = "filtered", const std::string& also = "") {
  std::vector<std::string> args{"sandbox", "--net", net, "--ro", stage_dir()};
  if (!also.empty()) args.insert(args.end(), {"--ro", also});
  if (net == "filtered")
    for (const auto& r : rules) args.insert(args.end(), {"--policy-rule", r});
  args.insert(args.end(), {"--", "sh", "-c", script});
  RunOptions o;
  o.timeout = std::chrono::milliseconds(120000);
  return chock(args, o);
}

std::string py(const std::string& code) {
  return "python3 -c '" + code + "'";
}

TEST(Filtered, CurlReachesAnAllowedNameOverTlsThroughTheRelay) {
  CHOCK_NEED_WORLD();
  CHOCK_NEED_TLS();
  auto out = filtered(
      "curl -sS -m 10 https://www.chock.test/whoami && curl -sS -m 10 -6 https://v6.chock.test/whoami");
  EXPECT_EQ(out.status, 0) << out.err;
  // The server saw Chock's relay come from the host's own address, and the
  // certificate was checked against the test CA in the call's /etc.
  EXPECT_TRUE(has(out.out, "served at 198.51.100.10\n") || has(out.out, "served at 2001:db8:100::10\n"))
      << out.out;
  EXPECT_TRUE(has(out.out, "served at 2001:db8:100::10\n")) << out.out;
}

TEST(Filtered, PythonAndACProgramResolveAndConnectLikeAnywhere) {
  CHOCK_NEED_WORLD();
  auto out =
      filtered(py("import urllib.request; print(urllib.request.urlopen(\"http://www.chock.test/whoami\", "
                  "timeout=10).read().decode(), end=\"\")") +
               " && " + program("net-client") + " www.chock.test 80 /whoami");
  EXPECT_EQ(out.status, 0) << out.err;
  EXPECT_EQ(std::count(out.out.begin(), out.out.end(), '\n') >= 2, true) << out.out;
  EXPECT_TRUE(has(out.out, "HTTP/1.0 200")) << out.out;
  EXPECT_EQ(std::count(out.out.begin(), out.out.end(), 's') > 0, true);
  EXPECT_TRUE(has(out.out, "served at ")) << out.out;
}

TEST(Filtered, GitClonesOverHttpThroughTheRelay) {
  CHOCK_NEED_WORLD();
  auto out = filtered("cd /tmp && HOME=/tmp git clone -q http://www.chock.test/repo.git r && cat r/README");
  EXPECT_EQ(out.status, 0) << out.err;
  EXPECT_EQ(out.out, "cloned through the relay\n");
}

TEST(Filtered, ARefusedNameFailsAtResolutionAndIsNeverLookedUp) {
  CHOCK_NEED_WORLD();
  const auto start = std::chrono::steady_clock::now();
  auto out = filtered("curl -sS -m 10 http://denied.chock.test/whoami");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_EQ(out.status, 6) << out.err;  // curl: could not resolve host
  EXPECT_TRUE(has(out.err,
                  "chock: the call's resolver refused denied.chock.test (net.connect.test.chock.denied.* "
                  "is denied by --policy-rule net.connect.test.chock.denied.*=deny)"))
      << out.err;
  EXPECT_TRUE(has(out.err, ".{ .action = \"net.connect.test.chock.denied.443\", .decision = .allow }"))
      << out.err;
  EXPECT_EQ(dns_queries("denied.chock.test"), 0);
}

// Every way around the resolver and the relay is refused at once: never a hang.
TEST(Filtered, EveryOtherWayOutIsRefusedAtOnce) {
  CHOCK_NEED_WORLD();
  const std::string code = R"PY(
import socket, time, errno, struct
def attempt(name, f):
    t = time.time()
    try:
        f(); r = "open"
    except OSError as e:
        r = errno.errorcode.get(e.errno, str(e.errno))
    print(name, r, "slow" if time.time() - t > 1 else "fast")
def tcp(addr, family=socket.AF_INET):
    s = socket.socket(family); s.settimeout(5); s.connect(addr); s.send(b"x"); s.recv(1)
def udp(addr):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(5); s.connect(addr); s.send(b"x"); s.recv(1)
def query(server, name, qtype):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(5)
    q = struct.pack("!HHHHHH", 7, 0x0100, 1, 0, 0, 0) + b"".join(bytes([len(p)]) + p.encode() for p in name.split(".")) + b"\0" + struct.pack("!HH", qtype, 1)
    s.sendto(q, server); return s.recv(512)
attempt("address", lambda: tcp(("198.51.100.10", 80)))
attempt("address6", lambda: tcp(("2001:db8:100::10", 80), socket.AF_INET6))
attempt("dns-elsewhere", lambda: query(("198.51.100.10", 53), "www.chock.test", 1))
attempt("quic", lambda: udp(("198.18.0.1", 443)))
attempt("relay-port", lambda: tcp(("127.0.0.1", 1)))
attempt("relay-port6", lambda: tcp(("::1", 1), socket.AF_INET6))
attempt("stub-tcp", lambda: tcp(("127.0.0.53", 53)))
attempt("unnamed-synthetic", lambda: tcp(("198.18.1.200", 80)))
attempt("raw", lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP))
attempt("packet", lambda: socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0))
print("txt-rcode", query(("127.0.0.53", 53), "www.chock.test", 16)[3] & 15)
print("a-rcode", query(("127.0.0.53", 53), "www.chock.test", 1)[3] & 15)
)PY";
  TempDir scratch("chock-filtered-escape");
  write_file(scratch / "probe.py", code);
  auto out = filtered("python3 " + (scratch / "probe.py"), kRules, "filtered", scratch.path());
  EXPECT_EQ(out.status, 0) << out.err;
  for (const char* line :
       {"address ENETUNREACH fast", "address6 ENETUNREACH fast", "dns-elsewhere ENETUNREACH fast",
        "quic EPERM fast", "relay-port ECONNREFUSED fast", "relay-port6 ECONNREFUSED fast",
        "stub-tcp ECONNREFUSED fast", "unnamed-synthetic ECONNRESET fast", "raw EPERM fast",
        "packet EPERM fast", "txt-rcode 5", "a-rcode 0"})
    EXPECT_TRUE(has(out.out, std::string(line) + "\n")) << line << "\n" << out.out;
  EXPECT_TRUE(has(out.err, "no name of the call's resolver has it")) << out.err;
}

TEST(Filtered, TheHostsOwnLoopbackIsUnreachableByEveryPath) {
  CHOCK_NEED_WORLD();
  // A server on the host's loopback (this process is the world's host).
  UniqueFd listener(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  ASSERT_TRUE(listener);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(listener.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(listener.get(), 16), 0);
  socklen_t len = sizeof a;
  ::getsockname(listener.get(), reinterpret_cast<sockaddr*>(&a), &len);
  const std::string port = std::to_string(ntohs(a.sin_port));
  auto out = filtered("for u in http://loopback.chock.test:" + port + "/ http://mapped.chock.test:" + port +
                      "/ http://127.0.0.1:" + port + "/ http://[::ffff:127.0.0.1]:" + port +
                      "/ http://127.0.0.1:1/; do curl -sS -m 5 \"$u\" >/dev/null 2>&1; echo \"$u $?\"; done");
  EXPECT_EQ(out.status, 0) << out.err;
  for (const std::string u : {"http://loopback.chock.test:", "http://mapped.chock.test:"})
    // Reset by the relay: curl says 56 (after its connect) or 7 (when the reset
    // beats the end of its happy-eyeballs connect); never 0.
    EXPECT_TRUE(has(out.out, u + port + "/ 56\n") || has(out.out, u + port + "/ 7\n")) << out.out;
  EXPECT_TRUE(has(out.out, "http://127.0.0.1:" + port + "/ 7\n"))
      << out.out;  // the call's own loopback: nothing there
  EXPECT_TRUE(has(out.out, "http://127.0.0.1:1/ 7\n")) << out.out;
  EXPECT_TRUE(has(out.err, "a loopback address")) << out.err;
  // Nothing ever reached the host's server.
  EXPECT_LT(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC), 0);
  EXPECT_EQ(errno, EAGAIN);
}

TEST(Filtered, TheBrokerHandsOutAStreamThatCannotBeReaimed) {
  CHOCK_NEED_WORLD();
  const std::string code = R"PY(
import socket, os, array
broker = socket.socket(fileno=int(os.environ["CHOCK_BROKER_FD"]))
def ask(target):
    broker.send(target.encode())
    fds = array.array("i")
    msg, anc, flags, addr = broker.recvmsg(64, socket.CMSG_SPACE(4))
    for level, kind, data in anc:
        fds.frombytes(data[:4])
    return msg, [socket.socket(fileno=f) for f in fds]
msg, got = ask("www.chock.test:80")
s = got[0]
print("family", s.family == socket.AF_UNIX)
for target in (("198.51.100.10", 80), "/run/other", b"\0abstract"):
    try:
        s.connect(target); print("reaim open")
    except (OSError, TypeError):
        pass
print("reaim refused")
s.sendall(b"GET /whoami HTTP/1.0\r\nHost: www.chock.test\r\n\r\n")
print(s.makefile("rb").read().decode().splitlines()[-1])
msg, got = ask("denied.chock.test:80")
print("denied", msg.decode(), len(got))
msg, got = ask("nonsense")
print("nonsense", msg.decode(), len(got))
)PY";
  TempDir scratch("chock-filtered-broker");
  write_file(scratch / "broker.py", code);
  auto out = filtered("python3 " + (scratch / "broker.py") +
                          " && printf 'GET /whoami HTTP/1.0\\r\\nHost: www.chock.test\\r\\n\\r\\n' | "
                          "chock-connect www.chock.test 80 | tail -1"
                          " && PATH=/run/chock/bin:$PATH chock-connect denied.chock.test 80 </dev/null; echo "
                          "\"connect-denied $?\"",
                      kRules, "filtered", scratch.path());
  EXPECT_EQ(out.status, 0) << out.err;
  EXPECT_TRUE(has(out.out, "family True\nreaim refused\nserved at ")) << out.out;
  EXPECT_TRUE(has(out.out, "denied refused 0\nnonsense refused 0\n")) << out.out;
  EXPECT_TRUE(has(out.out, "connect-denied 1\n")) << out.out;
  EXPECT_EQ(std::count(out.out.begin(), out.out.end(), 'v'), 2) << out.out;  // two "served at" lines
}

TEST(Filtered, TwoHundredParallelLinksAndAHundredMebibytesArriveWhole) {
  CHOCK_NEED_WORLD();
  const std::string code = R"PY(
import urllib.request, concurrent.futures
def get(i):
    return urllib.request.urlopen("http://www.chock.test/whoami", timeout=30).read()
with concurrent.futures.ThreadPoolExecutor(200) as pool:
    answers = list(pool.map(get, range(200)))
print("ok", sum(1 for a in answers if a.startswith(b"served at ")))
)PY";
  TempDir scratch("chock-filtered-load");
  write_file(scratch / "load.py", code);
  constexpr std::uint64_t kSize = 100ULL << 20;
  auto out = filtered("python3 " + (scratch / "load.py") +
                          " && curl -sS -m 100 'http://www.chock.test/stream?n=" + std::to_string(kSize) +
                          "' | sha256sum",
                      kRules, "filtered", scratch.path());
  EXPECT_EQ(out.status, 0) << out.err;
  EXPECT_TRUE(has(out.out, "ok 200\n")) << out.out;
  std::string pattern;
  for (int i = 0; i < 4096; ++i)
    for (int b = 0; b < 256; ++b) pattern.push_back(static_cast<char>(b));
  pattern.push_back('\x01');
  std::string all;
  all.reserve(kSize);
  while (all.size() < kSize)
    all.append(pattern, 0, std::min<std::size_t>(pattern.size(), kSize - all.size()));
  EXPECT_TRUE(has(out.out, sha256_hex(all) + "  -\n")) << out.out;
}

TEST(Filtered, TheHostsEtcIsUntouchedAndTheCertificatesAreTheSame) {
  CHOCK_NEED_WORLD();
  const std::string before = read_file("/etc/resolv.conf") + read_file("/etc/hosts");
  auto out = filtered(
      "sha256sum /etc/ssl/certs/ca-certificates.crt; echo x > /etc/resolv.conf; echo \"write $?\"; "
      "grep -c 127.0.0.53 /etc/resolv.conf; grep hosts: /etc/nsswitch.conf; ls /var/run/nscd/socket 2>&1 | "
      "wc -l");
  EXPECT_EQ(out.status, 0) << out.err;
  EXPECT_TRUE(has(out.out, "write 2\n1\nhosts: files dns\n")) << out.out;  // sh: cannot create
  EXPECT_EQ(read_file("/etc/resolv.conf") + read_file("/etc/hosts"), before);
  const std::string bundle = read_file("/etc/ssl/certs/ca-certificates.crt");
  EXPECT_TRUE(has(out.out, sha256_hex(bundle) + "  /etc/ssl/certs/ca-certificates.crt\n")) << out.out;
}

TEST(Filtered, ANoneCallHasNoStubNoRelayNoRulesetNoBroker) {
  CHOCK_NEED_WORLD();
  auto out = filtered(
      "echo \"broker=${CHOCK_BROKER_FD:-unset}\"; ls /proc/self/fd/3 >/dev/null 2>&1; echo \"fd3 $?\"; "
      "grep -c 127.0.0.53 /etc/resolv.conf; curl -sS -m 5 http://198.18.0.1/ 2>/dev/null; echo \"curl $?\"; "
      "grep -c ':0035 ' /proc/net/udp; true",
      {}, "none");
  EXPECT_EQ(out.status, 0) << out.err;
  EXPECT_TRUE(has(out.out, "broker=unset\nfd3 2\n0\ncurl 7\n0\n")) << out.out;
}

TEST(Filtered, ARunLogsEveryConnectionAndASummary) {
  CHOCK_NEED_WORLD();
  NetProject p(
      Rules{{"net.connect.test.chock.www.80", "allow"}, {"net.connect.test.chock.denied.*", "deny"}});
  write_file(p.path() + "/chock.zon",
             ".{\n    .network = .filtered,\n    .policy = .{ .rules = .{\n"
             "        .{ .action = \"net.connect.test.chock.www.80\", .decision = .allow },\n"
             "        .{ .action = \"net.connect.test.chock.denied.*\", .decision = .deny },\n    } },\n}\n");
  auto out = chock({"run", "--project", p.path(), "--keep", "--", "sh", "-c",
                    "curl -sS -m 10 http://www.chock.test/whoami; curl -sS -m 10 http://denied.chock.test/; "
                    "curl -sS -m 10 https://www.chock.test/ 2>/dev/null; true"});
  EXPECT_EQ(out.status, 0) << out.err;
  EXPECT_TRUE(has(out.out, "served at ")) << out.out;
  const std::string mark = "chock: session ";
  const auto at = out.err.find(mark);
  ASSERT_NE(at, std::string::npos) << out.err;
  auto path = log::find_log(out.err.substr(at + mark.size(), 8));
  ASSERT_TRUE(path) << path.error().message();
  std::ifstream in(*path);
  std::vector<nlohmann::json> connects;
  nlohmann::json summary;
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line);
    if (j["event"] == "net.connect") connects.push_back(j);
    if (j["event"] == "network.summary") summary = j;
  }
  ASSERT_GE(connects.size(), 3U) << out.err;
  EXPECT_EQ(connects[0]["action"], "net.connect.test.chock.www.80");
  EXPECT_EQ(connects[0]["decision"], "allow");
  EXPECT_GT(connects[0]["bytes_in"].get<int>(), 0);
  bool denied_name = false, asked_port = false;
  for (const auto& c : connects) {
    denied_name |= c["name"] == "denied.chock.test" && c["stage"] == "resolver";
    asked_port |= c["action"] == "net.connect.test.chock.www.443" && c.contains("refused");
  }
  EXPECT_TRUE(denied_name);
  EXPECT_TRUE(asked_port);  // 443 asks, nobody is here: refused at the connect
  EXPECT_EQ(summary["connections"], 1);
  EXPECT_GE(summary["refused"].get<int>(), 2);
  EXPECT_TRUE(has(out.err, "net.connect.test.chock.www.443 asks, and nobody is here to answer")) << out.err;
}

// A library user gets the same network by calling spawn and wait: the
// Child's wait serves the resolver and the relay, and the judge it was
// given decides and counts.
TEST(Filtered, TheLibrarysChildServesTheNetworkOfItsCall) {
  CHOCK_NEED_WORLD();
  int out[2];
  ASSERT_EQ(::pipe2(out, O_CLOEXEC), 0);
  UniqueFd read_end(out[0]), write_end(out[1]);
  Config c;
  c.argv = {program("net-client"), "www.chock.test", "80", "/whoami"};
  c.env = std::vector<std::string>{"PATH=/usr/bin:/bin"};
  c.binds.push_back({stage_dir(), "", Access::read_only});
  c.network = Network::filtered;
  c.stdio = {0, write_end.get(), 2};
  std::vector<std::string> asked;
  c.judge = std::make_shared<net::Judge>([&asked](const std::string& action) {
    asked.push_back(action);
    return net::Ruling{true, "allow", "the test", ""};
  });
  auto child = spawn(c);
  ASSERT_TRUE(child) << child.error().message();
  write_end.reset();
  const Result r = child->wait();
  EXPECT_EQ(r.exit_status(), 0);
  EXPECT_TRUE(r.network_filtered);
  std::string printed(4096, '\0');
  const ssize_t n = ::read(read_end.get(), printed.data(), printed.size());
  printed.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
  EXPECT_TRUE(has(printed, "served at ")) << printed;
  EXPECT_NE(std::find(asked.begin(), asked.end(), "net.connect.test.chock.www.80"), asked.end());
  const auto summary = c.judge->summary();
  EXPECT_EQ(summary["connections"], 1) << summary;
  EXPECT_GT(summary["bytes_in"].get<int>(), 0) << summary;
}

// `ask` is put to the person at the terminal when the program connects (the
// port is known then), y / n / a; nothing is looked up before the answer.
TEST(Filtered, AskIsAnsweredAtTheTerminalWhenTheProgramConnects) {
  CHOCK_NEED_WORLD();
  TempDir p("chock-filtered-ask");
  write_file(p / "chock.zon", ".{ .network = .filtered }\n");
  auto on_terminal = [&](const std::string& args, const std::string& typed) {
    RunOptions o;
    o.stdin_data = typed;
    o.cwd = p.path();
    o.timeout = std::chrono::milliseconds(60000);
    return run_process({"script", "-qec", chock_binary() + " run " + args, "/dev/null"}, o);
  };
  const std::string curl = " -- curl -sS -m 10 http://asked.chock.test/whoami";
  const int looked_up = dns_queries("asked.chock.test");  // the world is shared with the fetch tests
  Output no = on_terminal("--keep" + curl, "n\n");
  EXPECT_TRUE(
      has(no.out, "net.connect.test.chock.asked.80 asks: go ahead? [y]es, [n]o, [a]lways for this session"))
      << no.out;
  EXPECT_TRUE(has(no.out, "you answered no")) << no.out;
  EXPECT_FALSE(has(no.out, "served at")) << no.out;
  EXPECT_EQ(dns_queries("asked.chock.test"), looked_up);
  Output yes = on_terminal("--keep" + curl, "y\n");
  EXPECT_TRUE(has(yes.out, "served at 198.51.100.10")) << yes.out;
  // `a`: yes, and kept in the session, so its next call is not asked.
  Output always = on_terminal("--keep" + curl, "a\n");
  EXPECT_TRUE(has(always.out, "served at 198.51.100.10")) << always.out;
  const std::string mark = "chock: session ";
  const auto at = always.out.find(mark);
  ASSERT_NE(at, std::string::npos) << always.out;
  const std::string session = always.out.substr(at + mark.size(), 8);
  RunOptions here;
  here.cwd = p.path();
  auto again = chock(
      {"run", "--session", session, "--", "curl", "-sS", "-m", "10", "http://asked.chock.test/whoami"}, here);
  EXPECT_EQ(again.status, 0) << again.err;
  EXPECT_TRUE(has(again.out, "served at 198.51.100.10")) << again.out << again.err;
}

// The person's own --policy-rule opens a host for `chock run`: their row
// stands for the project's (replacing chock.zon's deny for the same action),
// and the organisation bundle's deny still refuses it.
TEST(Filtered, APersonsPolicyRuleOpensAHostUnderTheBundlesCeiling) {
  CHOCK_NEED_WORLD();
  auto run = [](const NetProject& p, const std::vector<std::string>& flags) {
    std::vector<std::string> args{"run", "--project", p.path(), "--net", "filtered"};
    args.insert(args.end(), flags.begin(), flags.end());
    args.insert(args.end(), {"--", "curl", "-sS", "-m", "10", "http://www.chock.test/whoami"});
    RunOptions o;
    o.timeout = std::chrono::milliseconds(120000);
    return chock(args, o);
  };
  const std::string allow = "net.connect.test.chock.www.80=allow";
  NetProject bare(Rules{});
  // No row: the action asks, and nobody is here.
  const Output asked = run(bare, {});
  EXPECT_NE(asked.status, 0) << asked.err;
  EXPECT_FALSE(has(asked.out, "served at")) << asked.out;
  EXPECT_TRUE(has(asked.err, "asks, and nobody is here to answer")) << asked.err;
  EXPECT_TRUE(has(asked.err, "or pass --policy-rule net.connect.test.chock.www.443=allow")) << asked.err;
  // The person's row: it connects.
  const Output opened = run(bare, {"--policy-rule", allow});
  EXPECT_EQ(opened.status, 0) << opened.err;
  EXPECT_TRUE(has(opened.out, "served at ")) << opened.out << opened.err;
  EXPECT_FALSE(has(opened.err, "nobody is here to answer")) << opened.err;
  // The project denies the name; the person's row for the port replaces that.
  NetProject denies(Rules{{"net.connect.test.chock.www.*", "deny"}});
  const Output denied = run(denies, {});
  EXPECT_NE(denied.status, 0) << denied.err;
  EXPECT_FALSE(has(denied.out, "served at")) << denied.out;
  EXPECT_TRUE(has(denied.err, "net.connect.test.chock.www.* is denied by " + denies.path() + "/chock.zon"))
      << denied.err;
  const Output replaced = run(denies, {"--policy-rule", allow});
  EXPECT_EQ(replaced.status, 0) << replaced.err;
  EXPECT_TRUE(has(replaced.out, "served at ")) << replaced.out << replaced.err;
  // The bundle's deny holds over the person's row, and the name is never looked up.
  TempDir org("chock-org");
  write_file(org / "bundle.zon",
             ".{ .policy = .{ .rules = .{ .{ .action = \"net.connect.test.chock.www.*\", .decision = .deny } "
             "} } }\n");
  const int looked_up = dns_queries("www.chock.test");
  const Output bounded = run(bare, {"--org-bundle", org / "bundle.zon", "--policy-rule", allow});
  EXPECT_NE(bounded.status, 0) << bounded.err;
  EXPECT_FALSE(has(bounded.out, "served at")) << bounded.out;
  EXPECT_TRUE(has(bounded.err, "net.connect.test.chock.www.* is denied by " + org / "bundle.zon:1:"))
      << bounded.err;
  EXPECT_EQ(dns_queries("www.chock.test"), looked_up);
}

// Docker and Podman bind the container's hostname, hosts and resolv.conf
// over files of /etc. In the call's user namespace those mounts are locked,
// and an overlay refused /etc as a layer (mount_tree: EINVAL), stopping
// every filtered call. The call's /etc is then Chock's own, with the host's
// entries bound in: its resolver is Chock's, the host's mounted hostname and
// certificates are there, and a name resolves and connects.
TEST(Filtered, AFileBindMountedInEtcDoesNotStopAFilteredCall) {
  CHOCK_NEED_WORLD();
  TempDir dir("chock-etc-mounts");
  std::vector<std::string> args{chock_binary(), "sandbox", "--net", "filtered", "--ro", stage_dir()};
  for (const auto& r : kRules) args.insert(args.end(), {"--policy-rule", r});
  args.insert(args.end(),
              {"--", "sh", "-c",
               "cat /etc/hostname; head -n 1 /etc/resolv.conf; grep -c . /etc/passwd >/dev/null && "
               "echo passwd; " +
                   program("net-client") + " www.chock.test 80 /whoami"});
  RunOptions o;
  o.timeout = std::chrono::milliseconds(120000);
  const Output out = run_process(with_files_mounted_in_etc(dir.path(), args), o);
  EXPECT_EQ(out.status, 0) << out.err;
  EXPECT_TRUE(
      has(out.out, "chock-container\n# Written by Chock: the filtered call's own resolver.\npasswd\n"))
      << out.out << out.err;
  EXPECT_TRUE(has(out.out, "HTTP/1.0 200")) << out.out;
  EXPECT_TRUE(has(out.out, "served at ")) << out.out;
  // Nothing reached the files the host mounted.
  EXPECT_EQ(read_file(dir / "hostname"), "chock-container\n");
  EXPECT_FALSE(has(read_file(dir / "resolv.conf"), "Written by Chock"));
}

// A refusal is said when it happens, while the program still runs (an
// `npm install` with no rule for its registry would otherwise run on in
// silence), and not again at the end: through `chock run` and `chock sandbox`.
TEST(Filtered, ARefusalIsSaidWhileTheProgramStillRuns) {
  CHOCK_NEED_WORLD();
  NetProject p(Rules{{"net.connect.test.chock.denied.*", "deny"}});
  write_file(p.path() + "/chock.zon",
             ".{ .network = .filtered, .policy = .{ .rules = .{\n"
             "    .{ .action = \"net.connect.test.chock.denied.*\", .decision = .deny } } } }\n");
  const std::string script =
      "curl -sS -m 5 http://denied.chock.test/ 2>/dev/null; sleep 3; echo program-goes-on >&2";
  auto quoted = [](const std::string& a) {
    std::string q = "'";
    for (char c : a) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
  };
  const std::vector<std::vector<std::string>> runs = {
      {"run", "--project", p.path(), "--", "sh", "-c", script},
      {"sandbox", "--net", "filtered", "--policy-rule", "net.connect.test.chock.denied.*=deny", "--", "sh",
       "-c", script}};
  for (const auto& args : runs) {
    std::string command = quoted(chock_binary());
    for (const auto& a : args) command += " " + quoted(a);
    // Each line of chock's stderr with the time it arrived, in ms.
    RunOptions o;
    o.timeout = std::chrono::milliseconds(60000);
    const Output out = run_process(
        {"sh", "-c",
         command +
             " 2>&1 >/dev/null | while IFS= read -r l; do echo \"$(($(date +%s%N) / 1000000)) $l\"; done"},
        o);
    auto at = [&](const std::string& part) -> long long {
      const auto where = out.out.find(part);
      if (where == std::string::npos) return -1;
      const auto line = out.out.rfind('\n', where);
      return std::stoll(out.out.substr(line == std::string::npos ? 0 : line + 1));
    };
    const long long refused = at("the call's resolver refused denied.chock.test");
    const long long went_on = at("program-goes-on");
    ASSERT_GE(refused, 0) << args[0] << "\n" << out.out;
    ASSERT_GE(went_on, 0) << args[0] << "\n" << out.out;
    EXPECT_GE(went_on - refused, 2000) << args[0] << ": said only after the program went on\n" << out.out;
    const std::string line = "refused denied.chock.test";
    EXPECT_EQ(out.out.find(line), out.out.rfind(line)) << args[0] << ": said twice\n" << out.out;
  }
}

}  // namespace
}  // namespace chock::test
