// The sandbox core (issue 2), proven by attacks: each test tries what a
// defence stops, asserts how it was stopped, and that a neighbour still works.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/magic.h>
#include <linux/securebits.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <dirent.h>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "chock/sandbox.hpp"
#include "process.hpp"
#include "support.hpp"

namespace chock {
namespace {

using test::Output;
using test::RunOptions;
using test::core::probe;
using test::core::sandbox;
using test::core::trim;

// Host processes whose command line starts with `marker`. A process may end
// while it is read: that read fails and the process is not counted.
int count_host_processes(const std::string& marker) {
  int count = 0;
  DIR* d = opendir("/proc");
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    int fd = open((std::string("/proc/") + e->d_name + "/cmdline").c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    char buf[512];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) continue;
    std::string cmdline(buf, static_cast<size_t>(n));
    for (auto& ch : cmdline)
      if (ch == '\0') ch = ' ';
    if (cmdline.rfind(marker, 0) == 0) ++count;  // the command itself, not a shell naming it
  }
  closedir(d);
  return count;
}

std::string unique_sleep_seconds() {
  // A sleep length no other process on the machine is using: a marker.
  return std::to_string(1000 + (getpid() % 1000)) + "." + std::to_string(std::rand() % 100000 + 1);
}

// `chock sandbox -- sh -c 'setsid sleep M & sleep M'` in the background;
// returns once both sleeps run (or after 5 s), with chock's pid.
pid_t start_daemon_and_sleep(const std::string& marker) {
  std::string chock = test::chock_binary();
  pid_t pid = fork();
  if (pid == 0) {
    int null = open("/dev/null", O_RDWR);
    dup2(null, 0);
    dup2(null, 1);
    dup2(null, 2);
    execl(chock.c_str(), chock.c_str(), "sandbox", "--", "sh", "-c",
          ("setsid sleep " + marker + " > /dev/null 2>&1 < /dev/null & sleep " + marker).c_str(), nullptr);
    _exit(127);
  }
  for (int i = 0; i < 100 && count_host_processes("sleep " + marker) < 2; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  return pid;
}

TEST(Identity, NoUidZeroAndNoCapability) {
  Output o = probe({}, {"identity"});
  ASSERT_EQ(o.status, 0) << o.err;
  uid_t expected = test::running_as_root() ? 65534 : geteuid();
  EXPECT_NE(o.out.find("uid " + std::to_string(expected) + " euid " + std::to_string(expected)),
            std::string::npos)
      << o.out;
  EXPECT_EQ(o.out.find("uid 0 "), std::string::npos) << o.out;
  for (const char* cap : {"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"}) {
    EXPECT_NE(o.out.find(std::string(cap) + ":\t0000000000000000"), std::string::npos) << cap << "\n"
                                                                                       << o.out;
  }
  EXPECT_NE(o.out.find("NoNewPrivs:\t1"), std::string::npos) << o.out;
}

TEST(Identity, RootCallerCannotReadShadow) {
  if (!test::running_as_root()) GTEST_SKIP() << "the root caller's promise; this run is unprivileged";
  // Root on the host can read it: the defence is the uid the call runs as.
  ASSERT_EQ(access("/etc/shadow", R_OK), 0);
  EXPECT_EQ(trim(probe({}, {"read", "/etc/shadow"}).out), "EACCES");
  EXPECT_EQ(trim(probe({}, {"read", "/etc/passwd"}).out).rfind("ok", 0), 0u);
}

TEST(Identity, UserFlagIsForRootOnly) {
  Output o = probe({"--user", "4242"}, {"identity"});
  if (test::running_as_root()) {
    ASSERT_EQ(o.status, 0) << o.err;
    EXPECT_NE(o.out.find("uid 4242 euid 4242"), std::string::npos) << o.out;
  } else {
    EXPECT_EQ(o.status, 125);
    EXPECT_NE(o.err.find("--user is only for a root caller"), std::string::npos) << o.err;
  }
}

TEST(MountTree, HostHomeIsAbsent) {
  const char* home = std::getenv("HOME");
  ASSERT_NE(home, nullptr);
  ASSERT_EQ(access(home, F_OK), 0) << "the host's $HOME exists outside";
  EXPECT_EQ(trim(probe({}, {"stat", home}).out), "ENOENT");
}

// pivot_root leaves the host's tree stacked on the new root, where it
// shows: a second "/", the host's root file system and its /sys. It is
// detached before the program runs.
TEST(MountTree, OldRootIsDetachedBeforeTheProgramRuns) {
  Output o = probe({}, {"mounts"});
  ASSERT_EQ(o.status, 0) << o.err;
  int roots = 0;
  bool proc = false;
  std::istringstream lines(o.out);
  std::string point;
  std::string type;
  while (lines >> point >> type) {
    if (point == "/") {
      ++roots;
      EXPECT_EQ(type, "tmpfs") << o.out;
    }
    if (point == "/proc" && type == "proc") proc = true;
    EXPECT_NE(type, "sysfs") << o.out;
    EXPECT_NE(point.rfind("/sys", 0), 0u) << o.out;
  }
  EXPECT_EQ(roots, 1) << o.out;
  EXPECT_TRUE(proc) << "the sandbox's own /proc is listed\n" << o.out;
}

TEST(MountTree, ReadOnlyBindRefusesWritesWithErofs) {
  test::TempDir dir;
  chmod(dir.path().c_str(), 0777);
  EXPECT_EQ(trim(probe({"--ro", dir.path()}, {"write", dir / "f"}).out), "EROFS");
  EXPECT_FALSE(test::exists(dir / "f"));
  // The neighbour: the same directory read-write takes the write, on the host.
  EXPECT_EQ(trim(probe({"--rw", dir.path()}, {"write", dir / "f"}).out), "ok");
  EXPECT_EQ(test::read_file(dir / "f"), "probe\n");
}

TEST(MountTree, ToolchainIsReadOnly) {
  EXPECT_EQ(trim(probe({}, {"write", "/usr/chock-probe"}).out), "EROFS");
  EXPECT_EQ(trim(probe({}, {"write", "/etc/chock-probe"}).out), "EROFS");
  EXPECT_EQ(trim(probe({}, {"write", "/chock-probe"}).out), "EROFS");
  EXPECT_EQ(trim(probe({}, {"write", "/tmp/chock-probe"}).out), "ok");
}

// Tools and test suites write to /var/tmp: a capped tmpfs of its own, like /tmp.
TEST(MountTree, VarTmpIsACappedWritableTmpfs) {
  const Output o = sandbox({}, {"sh", "-c",
                                "echo kept > /var/tmp/f && cat /var/tmp/f && stat -f -c %T /var/tmp && "
                                "stat -c %a /var/tmp && test $(df -k --output=size /var/tmp | tail -1) -le "
                                "$(df -k --output=size /tmp | tail -1) && echo capped"});
  EXPECT_EQ(o.status, 0) << o.err;
  EXPECT_EQ(o.out, "kept\ntmpfs\n1777\ncapped\n") << o.err;
}

TEST(MountTree, MaskedProcEntriesReadEmpty) {
  const char* entries[] = {"cmdline",     "version",       "kallsyms",   "config.gz",     "kcore",
                           "modules",     "iomem",         "ioports",    "mtrr",          "sched_debug",
                           "timer_list",  "latency_stats", "interrupts", "schedstat",     "slabinfo",
                           "vmallocinfo", "keys",          "key-users",  "sysrq-trigger", "kmsg"};
  int present = 0;
  for (const char* e : entries) {
    std::string path = std::string("/proc/") + e;
    Output o = probe({}, {"read", path});
    if (access(path.c_str(), F_OK) != 0) {
      EXPECT_EQ(trim(o.out), "ENOENT") << path;  // this kernel has no such entry
      continue;
    }
    ++present;
    EXPECT_EQ(trim(o.out), "ok 0") << path << " is not masked";
  }
  EXPECT_GE(present, 10);  // the test is not vacuous on this kernel
  // The live neighbours.
  Output cpu = probe({}, {"read", "/proc/cpuinfo"});
  EXPECT_EQ(cpu.out.rfind("ok ", 0), 0u);
  EXPECT_NE(trim(cpu.out), "ok 0");
  Output exe = sandbox({}, {"readlink", "/proc/self/exe"});
  EXPECT_EQ(trim(exe.out), "/usr/bin/readlink");
  EXPECT_EQ(trim(probe({}, {"write", "/proc/sys/kernel/hostname"}).out), "EROFS");
}

TEST(PidNamespace, OnlyTheCallsOwnProcessesAreVisible) {
  Output o = probe({}, {"pids"});
  ASSERT_EQ(o.status, 0) << o.err;
  std::istringstream in(o.out);
  std::vector<int> pids;
  for (std::string line; std::getline(in, line);) pids.push_back(std::stoi(line));
  EXPECT_EQ(pids, (std::vector<int>{1, 2})) << o.out;
}

TEST(PidNamespace, SignallingAHostProcessFails) {
  // This test's own pid: alive on the host, unnamed inside.
  EXPECT_EQ(trim(probe({}, {"kill", std::to_string(getpid())}).out), "ESRCH");
  EXPECT_EQ(trim(probe({}, {"kill", "2"}).out), "ok");  // itself
}

// The call's network namespace has its own loopback and nothing else: no
// other interface, no route (a documentation address: nothing is sent).
TEST(Network, NoneReachesNoHostAndItsOwnLoopbackOnly) {
  EXPECT_EQ(trim(probe({}, {"connect", "198.51.100.1", "80"}).out), "ENETUNREACH");
  EXPECT_EQ(trim(probe({"--net", "none"}, {"connect", "127.0.0.1", "80"}).out), "ECONNREFUSED");
  EXPECT_EQ(trim(probe({}, {"socketpair"}).out), "ok");
}

// Test suites start servers on 127.0.0.1 and ::1 and talk to them.
TEST(Network, AServerOnTheCallsOwnLoopbackAnswersTheCall) {
  for (const char* tool : {"/usr/bin/python3", "/usr/bin/curl"})
    if (::access(tool, X_OK) != 0)
      GTEST_SKIP() << tool << " is not installed (scripts/install-deps installs it)";
  const Output o = sandbox(
      {}, {"sh", "-c",
           "cd /tmp && python3 -m http.server --bind 127.0.0.1 8000 >/dev/null 2>&1 & "
           "cd /tmp && python3 -m http.server --bind ::1 8001 >/dev/null 2>&1 & "
           "for i in 1 2 3 4 5 6 7 8 9 10; do "
           "curl -s -o /dev/null -w 'v4 %{http_code}\\n' http://127.0.0.1:8000/ && "
           "curl -s -o /dev/null -w 'v6 %{http_code}\\n' 'http://[::1]:8001/' && break; sleep 0.5; done; "
           "kill %1 %2"});
  EXPECT_NE(o.out.find("v4 200\nv6 200\n"), std::string::npos) << o.out << o.err;
}

// Node's http server and a request to it, with the JIT it needs.
TEST(Network, ANodeServerOnLoopbackAnswersTheCall) {
  if (::access("/usr/bin/node", X_OK) != 0)
    GTEST_SKIP() << "/usr/bin/node is not installed (scripts/install-deps installs it)";
  const Output o = sandbox(
      {"--allow-jit"},
      {"node", "-e",
       "const http = require('http');"
       "const s = http.createServer((q, r) => r.end('hello')).listen(0, '127.0.0.1', () => {"
       "  http.get({port: s.address().port, host: '127.0.0.1'}, (r) => {"
       "    let b = ''; r.on('data', (d) => b += d); r.on('end', () => { console.log(b); s.close(); });"
       "  });"
       "});"});
  EXPECT_EQ(o.status, 0) << o.err;
  EXPECT_EQ(trim(o.out), "hello") << o.err;
}

// A name lookup fails at once: the resolver the host names has no route here.
TEST(Network, ANameLookupFailsAtOnce) {
  const auto start = std::chrono::steady_clock::now();
  const Output o = sandbox({}, {"getent", "hosts", "example.com"});
  EXPECT_EQ(o.status, 2) << o.out << o.err;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

// Chock says in a line of its own that the sandbox refused the network,
// from the call's own counters, because the program's words do not.
constexpr const char* kNoNetworkLine = "chock: the call tried to reach the network (";

// Whether the host's resolver is reached off loopback, so a lookup in the
// call finds no route (a resolver on 127.0.0.53 gets a port unreachable from
// the call's own loopback instead, which is not counted).
bool resolver_off_loopback() {
  std::ifstream in("/etc/resolv.conf");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("nameserver", 0) == 0)
      return line.find(" 127.") == std::string::npos && line.find(" ::1") == std::string::npos;
  return false;
}

TEST(Network, AnAddressTriedInNoneIsSaidInALineOfChocks) {
  if (::access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "/usr/bin/python3 is not installed";
  const Output o =
      sandbox({"--result", "/dev/stdout"},
              {"python3", "-c", "import socket; socket.create_connection(('198.51.100.1', 80), timeout=2)"});
  EXPECT_NE(o.status, 0);
  EXPECT_NE(o.err.find("Network is unreachable"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find(std::string(kNoNetworkLine) +
                       "1 packet found no route): a call has no network but its own "
                       "loopback, by the sandbox's design, not a fault in the command"),
            std::string::npos)
      << o.err;
  EXPECT_NE(o.out.find("\"network_unreachable\":1"), std::string::npos) << o.out;
  // A program that failed: the line may be why, and is said as it is.
  EXPECT_EQ(o.err.find("chock: note: "), std::string::npos) << o.err;
}

// A program that went on past the refusal and exited 0 (npm's update
// notifier, in a test that passed): the line is a note, not the cause of a
// failure there was none of.
TEST(Network, AnAddressTriedByAProgramThatExitsZeroIsANote) {
  if (::access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "/usr/bin/python3 is not installed";
  const Output o = sandbox({}, {"python3", "-c",
                                "import socket\ntry:\n  socket.create_connection(('198.51.100.1', 80), "
                                "timeout=2)\nexcept OSError:\n  print('went on')"});
  EXPECT_EQ(o.status, 0) << o.err;
  EXPECT_EQ(o.out, "went on\n");
  EXPECT_NE(
      o.err.find("chock: note: the call tried to reach the network (1 packet found no route): a call has "
                 "no network but its own loopback"),
      std::string::npos)
      << o.err;
  EXPECT_NE(o.err.find("; the program went on, and exited 0\n"), std::string::npos) << o.err;
}

TEST(Network, ANameTriedInNoneIsSaidInALineOfChocks) {
  if (::access("/usr/bin/curl", X_OK) != 0) GTEST_SKIP() << "/usr/bin/curl is not installed";
  if (!resolver_off_loopback())
    GTEST_SKIP() << "/etc/resolv.conf names a resolver on loopback: a lookup from the call meets its own "
                    "loopback, not a missing route";
  const Output o = sandbox({}, {"curl", "-sS", "https://example.com"});
  EXPECT_NE(o.status, 0);
  EXPECT_NE(o.err.find("Could not resolve host"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find(kNoNetworkLine), std::string::npos) << o.err;
}

// The neighbours: nothing tried, or only the call's own loopback: no line.
TEST(Network, NoLineWhenTheCallStayedOnItsOwnLoopback) {
  for (const char* script : {"true", "curl -s http://127.0.0.1:9/ ; exit 0"}) {
    const Output o = sandbox({"--result", "/dev/stdout"}, {"sh", "-c", script});
    EXPECT_EQ(o.status, 0) << script << ": " << o.err;
    EXPECT_EQ(o.err.find(kNoNetworkLine), std::string::npos) << script << ": " << o.err;
    EXPECT_NE(o.out.find("\"network_unreachable\":0"), std::string::npos) << script << ": " << o.out;
  }
}

// Node without sandbox.jit dies of V8's fatal error (SIGTRAP); Chock says
// why, from the keeper's count of the refusals. With it, no such line.
TEST(WriteExecute, AJitRefusedIsSaidInALineOfChocks) {
  if (::access("/usr/bin/node", X_OK) != 0)
    GTEST_SKIP() << "/usr/bin/node is not installed (scripts/install-deps installs it)";
  constexpr const char* kLine = "chock: the sandbox refused ";
  const Output strict = sandbox({"--result", "/dev/stdout"}, {"node", "-e", "console.log(1)"});
  EXPECT_NE(strict.status, 0);
  EXPECT_NE(strict.err.find(kLine), std::string::npos) << strict.err;
  EXPECT_NE(strict.err.find("writable and executable mapping"), std::string::npos) << strict.err;
  EXPECT_NE(strict.err.find("needs `sandbox.jit = allow` in chock.zon"), std::string::npos) << strict.err;
  EXPECT_EQ(strict.out.find("\"write_execute_refused\":0"), std::string::npos) << strict.out;
  const Output jit = sandbox({"--allow-jit"}, {"node", "-e", "console.log(1)"});
  EXPECT_EQ(jit.status, 0) << jit.err;
  EXPECT_EQ(jit.out, "1\n");
  EXPECT_EQ(jit.err.find(kLine), std::string::npos) << jit.err;
  const Output none = sandbox({"--result", "/dev/stdout"}, {"true"});
  EXPECT_EQ(none.err.find(kLine), std::string::npos) << none.err;
  EXPECT_NE(none.out.find("\"write_execute_refused\":0"), std::string::npos) << none.out;
}

TEST(Network, HostReachesALocalListener) {
  int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(listen(s, 4), 0);
  socklen_t len = sizeof addr;
  getsockname(s, reinterpret_cast<sockaddr*>(&addr), &len);
  std::string port = std::to_string(ntohs(addr.sin_port));
  EXPECT_EQ(trim(probe({"--net", "host"}, {"connect", "127.0.0.1", port}).out), "ok");
  // Inside, 127.0.0.1 is the call's own loopback: the host's listener is not there.
  EXPECT_EQ(trim(probe({"--net", "none"}, {"connect", "127.0.0.1", port}).out), "ECONNREFUSED");
  close(s);
}

TEST(Descriptors, InheritedDescriptorIsClosedInside) {
  int fd = open("/etc/hostname", O_RDONLY);  // no O_CLOEXEC: chock inherits it
  ASSERT_GE(fd, 0);
  ASSERT_NE(dup2(fd, 5), -1);
  close(fd);
  RunOptions o;
  o.keep_fds = {5};
  // The probe, run directly with the same options, does see it: the test can fail.
  Output direct = test::run_process({test::program("probe"), "fd", "5"}, o);
  EXPECT_EQ(trim(direct.out), "open");
  EXPECT_EQ(trim(probe({}, {"fd", "5"}, o).out), "closed");
  close(5);
}

TEST(Descriptors, StdinIsDevNullUnlessAsked) {
  RunOptions o;
  o.stdin_data = "hello from the caller";
  EXPECT_EQ(trim(probe({}, {"stdin"}, o).out), "/dev/null");
  EXPECT_EQ(probe({}, {"cat"}, o).out, "");
  EXPECT_EQ(probe({"--stdin"}, {"cat"}, o).out, "hello from the caller");
}

TEST(ProcessTree, DaemonLeftBehindIsGoneWhenChockReturns) {
  std::string marker = unique_sleep_seconds();
  Output o = sandbox({}, {"sh", "-c", "setsid sleep " + marker + " > /dev/null 2>&1 < /dev/null & exit 0"});
  EXPECT_EQ(o.status, 0) << o.err;
  EXPECT_EQ(count_host_processes("sleep " + marker), 0);
}

TEST(ProcessTree, TimeoutEndsTheWholeTree) {
  std::string marker = unique_sleep_seconds();
  auto start = std::chrono::steady_clock::now();
  Output o =
      sandbox({"--timeout", "1"},
              {"sh", "-c", "setsid sleep " + marker + " > /dev/null 2>&1 < /dev/null & sleep " + marker});
  auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(o.status, 128 + SIGKILL);
  EXPECT_NE(o.err.find("timeout"), std::string::npos) << o.err;
  EXPECT_LT(took, std::chrono::seconds(10));
  EXPECT_EQ(count_host_processes("sleep " + marker), 0);
}

TEST(ProcessTree, CancelBySigtermEndsTheWholeTree) {
  std::string marker = unique_sleep_seconds();
  pid_t pid = start_daemon_and_sleep(marker);
  ASSERT_EQ(count_host_processes("sleep " + marker), 2);
  kill(pid, SIGTERM);
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGKILL);
  EXPECT_EQ(count_host_processes("sleep " + marker), 0);
}

// The caller dies without a word (SIGKILL): no cancel runs, so only the
// death signals down the chain can end the call. For a root caller the
// middle changes uid, which clears its death signal unless it is set again.
TEST(ProcessTree, ChockKilledOutrightTakesTheWholeTreeWithIt) {
  std::string marker = unique_sleep_seconds();
  pid_t pid = start_daemon_and_sleep(marker);
  ASSERT_EQ(count_host_processes("sleep " + marker), 2);
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  // The kernel delivers the death signals as chock exits; give the tree a moment to go.
  for (int i = 0; i < 100 && count_host_processes("sleep " + marker) > 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(count_host_processes("sleep " + marker), 0);
}

TEST(ProcessTree, CtrlCEndsTheWholeTree) {
  std::string marker = unique_sleep_seconds();
  pid_t pid = start_daemon_and_sleep(marker);
  ASSERT_EQ(count_host_processes("sleep " + marker), 2);
  kill(pid, SIGINT);
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status));
  EXPECT_EQ(count_host_processes("sleep " + marker), 0);
}

// wait() returns as soon as the keeper reports, before the keeper's own exit
// takes the namespaces down: the keeper kills and reaps what the program left
// behind first. The daemon holds a lock on a file in a --rw directory, so the
// lock is free the moment it is dead, and not a moment earlier.
TEST(ProcessTree, DaemonLeftBehindIsGoneTheMomentWaitReturns) {
  test::TempDir dir;
  ASSERT_EQ(chmod(dir.path().c_str(), 0777), 0);
  const std::string lock = dir / "lock";
  Config c;
  c.binds.push_back(Bind{dir.path(), dir.path(), Access::read_write});
  // The lock is taken before the program ends: the daemon has it when sh exits.
  c.argv = {"/bin/sh", "-c",
            "(exec 9>" + lock +
                " && flock 9 && exec setsid sleep 1000 >/dev/null 2>&1 </dev/null) & "
                "until ! flock -n " +
                lock + " true; do :; done"};
  auto child = spawn(c);
  ASSERT_TRUE(child) << child.error().message();
  Result r = child->wait();
  ASSERT_EQ(r.exit_status(), 0) << r.to_json();
  int fd = open(lock.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(flock(fd, LOCK_EX | LOCK_NB), 0) << "the daemon still holds the lock: " << std::strerror(errno);
  close(fd);
}

TEST(ProcessTree, OrphanedZombieIsReaped) {
  Output o = probe({}, {"zombie"});
  EXPECT_EQ(trim(o.out), "zombies 0") << o.err;
}

TEST(ExitStatus, ProgramCodesSignalsAndChocksOwn) {
  EXPECT_EQ(probe({}, {"exit", "0"}).status, 0);
  EXPECT_EQ(probe({}, {"exit", "7"}).status, 7);
  Output killed = probe({}, {"raise", "9"});
  EXPECT_EQ(killed.status, 128 + 9);
  EXPECT_NE(killed.err.find("SIGKILL"), std::string::npos) << killed.err;
  Output missing_bind = probe({"--ro", "/nonexistent/chock-test"}, {"exit", "0"});
  EXPECT_EQ(missing_bind.status, 125);
  EXPECT_NE(missing_bind.err.find("--ro /nonexistent/chock-test"), std::string::npos) << missing_bind.err;
  EXPECT_NE(missing_bind.err.find("ENOENT"), std::string::npos) << missing_bind.err;
  Output missing_cmd = sandbox({}, {"chock-no-such-command"});
  EXPECT_EQ(missing_cmd.status, 127);
  EXPECT_NE(missing_cmd.err.find("command not found"), std::string::npos) << missing_cmd.err;
  test::TempDir dir;
  test::write_file(dir / "script", "#!/bin/sh\nexit 0\n", 0644);
  Output not_exec = sandbox({"--ro", dir.path()}, {dir / "script"});
  EXPECT_EQ(not_exec.status, 126);
  EXPECT_NE(not_exec.err.find("EACCES"), std::string::npos) << not_exec.err;
}

TEST(ExitStatus, SetupStepAfterForkIsNamed) {
  Output o = probe({"--cwd", "/nonexistent"}, {"exit", "0"});
  EXPECT_EQ(o.status, 125);
  EXPECT_NE(o.err.find("sandbox setup failed at chdir: ENOENT"), std::string::npos) << o.err;
}

TEST(ExitStatus, UnknownFlagIsOneLineAnd125) {
  Output o = test::chock({"sandbox", "--no-such-flag", "--", "true"});
  EXPECT_EQ(o.status, 125);
  EXPECT_NE(o.err.find("--no-such-flag"), std::string::npos) << o.err;
  EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << o.err;
}

// main() builds only the subcommand argv[1] names (start-up time); without
// one, every subcommand must still be there for the usage page and errors.
TEST(CommandLine, HelpListsEverySubcommandAndEachOneParsesItsOwnFlags) {
  Output help = test::chock({"--help"});
  EXPECT_EQ(help.status, 0) << help.err;
  for (const char* sub : {"sandbox", "run", "apply", "workspace", "policy", "sessions", "doctor"}) {
    EXPECT_NE(help.out.find(std::string("\n  ") + sub + " "), std::string::npos) << sub << "\n" << help.out;
    Output own = test::chock({sub, "--help"});
    EXPECT_EQ(own.status, 0) << sub << ": " << own.err;
    EXPECT_NE(own.out.find(std::string("chock ") + sub), std::string::npos) << sub << "\n" << own.out;
  }
  Output typo = test::chock({"sandbx", "--", "true"});
  EXPECT_NE(typo.status, 0);
  EXPECT_EQ(std::count(typo.err.begin(), typo.err.end(), '\n'), 1) << typo.err;
}

TEST(ResultFile, CarriesExitSignalDurationAndSetupStep) {
  test::TempDir dir;
  std::string file = dir / "result.json";
  probe({"--result", file}, {"exit", "7"});
  auto j = nlohmann::json::parse(test::read_file(file));
  EXPECT_EQ(j["exit_code"], 7);
  EXPECT_TRUE(j["signal"].is_null());
  EXPECT_GT(j["duration_ms"].get<double>(), 0.0);
  probe({"--result", file}, {"raise", "15"});
  j = nlohmann::json::parse(test::read_file(file));
  EXPECT_EQ(j["signal"], 15);
  EXPECT_EQ(j["exit_status"], 128 + 15);
  probe({"--result", file, "--cwd", "/nonexistent"}, {"exit", "0"});
  j = nlohmann::json::parse(test::read_file(file));
  EXPECT_EQ(j["setup_failure"]["step"], "chdir");
  EXPECT_EQ(j["setup_failure"]["errno_name"], "ENOENT");
}

TEST(Symlinks, BindSourceThroughALinkIsRefused) {
  test::TempDir dir;
  ASSERT_EQ(symlink("/etc", (dir / "link").c_str()), 0);
  Output o = probe({"--ro", dir / "link"}, {"exit", "0"});
  EXPECT_EQ(o.status, 125);
  EXPECT_NE(o.err.find("symbolic link"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("/etc"), std::string::npos) << o.err;  // says where it leads
  // A link in the middle of the path is refused the same way.
  Output mid = probe({"--ro", dir / "link/ssl"}, {"exit", "0"});
  EXPECT_EQ(mid.status, 125);
  EXPECT_NE(mid.err.find("symbolic link"), std::string::npos) << mid.err;
}

// A mount target reached through a link planted in an earlier bind never
// leads the mount out: the walk refuses the link (ELOOP).
TEST(Symlinks, MountTargetThroughAPlantedLinkIsRefused) {
  test::TempDir outer;
  test::TempDir victim;
  test::TempDir source;
  chmod(outer.path().c_str(), 0777);
  ASSERT_EQ(symlink(victim.path().c_str(), (outer / "planted").c_str()), 0);
  Config c;
  c.argv = {"/bin/true"};
  c.binds.push_back(Bind{outer.path(), outer.path(), Access::read_write});
  c.binds.push_back(Bind{source.path(), outer / "planted/inner", Access::read_only});
  auto r = run(c);
  ASSERT_TRUE(r) << r.error().message();
  ASSERT_TRUE(r->setup_failure.has_value());
  EXPECT_EQ(r->setup_failure->step, "mount_tree");
  EXPECT_EQ(r->setup_failure->code, ELOOP);
  EXPECT_FALSE(test::exists(victim / "inner"));
}

}  // namespace
}  // namespace chock
