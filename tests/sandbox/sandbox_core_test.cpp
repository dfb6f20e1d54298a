// The sandbox core (issue 2), proven by attacks: each test tries what a
// defence stops, asserts how it was stopped, and that a neighbour still works.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/magic.h>
#include <linux/securebits.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <dirent.h>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "chock/sandbox.hpp"
#include "process.hpp"

namespace chock {
namespace {

using test::Output;
using test::RunOptions;

std::string trim(const std::string& s) {
  auto end = s.find_last_not_of("\r\n ");
  return end == std::string::npos ? "" : s.substr(0, end + 1);
}

// `chock sandbox --ro <stage> ARGS -- CMD...`: the stage holds the probe.
Output sandbox(std::vector<std::string> args, const std::vector<std::string>& command,
               const RunOptions& o = {}) {
  std::vector<std::string> full{"sandbox", "--ro", test::stage_dir()};
  full.insert(full.end(), args.begin(), args.end());
  full.push_back("--");
  full.insert(full.end(), command.begin(), command.end());
  return test::chock(full, o);
}

Output probe(std::vector<std::string> args, std::vector<std::string> probe_args, const RunOptions& o = {}) {
  std::vector<std::string> cmd{test::program("probe")};
  cmd.insert(cmd.end(), probe_args.begin(), probe_args.end());
  return sandbox(std::move(args), cmd, o);
}

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

TEST(Network, NoneRefusesEveryAddressWithEnetunreach) {
  EXPECT_EQ(trim(probe({}, {"connect", "1.1.1.1", "80"}).out), "ENETUNREACH");
  EXPECT_EQ(trim(probe({"--net", "none"}, {"connect", "127.0.0.1", "80"}).out), "ENETUNREACH");
  EXPECT_EQ(trim(probe({}, {"socketpair"}).out), "ok");
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
  EXPECT_EQ(trim(probe({"--net", "none"}, {"connect", "127.0.0.1", port}).out), "ENETUNREACH");
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

namespace chock {
namespace {

// A non-git workspace: writes land in the upper layer, never in the lower.
TEST(Overlay, WritesLandInTheUpperLayerNotTheLower) {
  test::TempDir dir;
  for (const char* d : {"lower", "upper", "work"}) ASSERT_EQ(mkdir((dir / d).c_str(), 0755), 0);
  test::write_file(dir / "lower/a.txt", "original\n");
  if (test::running_as_root()) {
    // A root caller's call runs as 65534; its layers belong to that uid.
    for (const char* p : {"lower", "lower/a.txt", "upper", "work"})
      ASSERT_EQ(chown((dir / p).c_str(), 65534, 65534), 0);
  }
  Config c;
  c.argv = {"sh", "-c",
            "echo changed > " + dir / "project/a.txt" + " && echo new > " + dir / "project/b.txt" +
                " && cat " + dir / "project/a.txt"};
  c.overlays.push_back(Overlay{dir / "lower", dir / "upper", dir / "work", dir / "project"});
  auto r = run(c);
  ASSERT_TRUE(r) << r.error().message();
  ASSERT_FALSE(r->setup_failure) << r->setup_failure->step << " " << errno_name(r->setup_failure->code) << " "
                                 << r->setup_failure->detail;
  EXPECT_EQ(r->exit_code, 0);
  EXPECT_EQ(test::read_file(dir / "lower/a.txt"), "original\n");
  EXPECT_FALSE(test::exists(dir / "lower/b.txt"));
  EXPECT_EQ(test::read_file(dir / "upper/a.txt"), "changed\n");
  EXPECT_EQ(test::read_file(dir / "upper/b.txt"), "new\n");
}

TEST(Overlay, LayerPathThroughALinkIsRefused) {
  test::TempDir dir;
  for (const char* d : {"lower", "upper", "work"}) ASSERT_EQ(mkdir((dir / d).c_str(), 0755), 0);
  ASSERT_EQ(symlink((dir / "lower").c_str(), (dir / "link").c_str()), 0);
  Config c;
  c.argv = {"/bin/true"};
  c.overlays.push_back(Overlay{dir / "link", dir / "upper", dir / "work", dir / "project"});
  auto r = run(c);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("symbolic link"), std::string::npos) << r.error().message();
}

}  // namespace
}  // namespace chock

// Promises of the mount tree, the session and the identity that had no
// attack of their own.
namespace chock {
namespace {

TEST(MountTree, RoFileBindsOneFileReadOnly) {
  test::TempDir dir;
  test::write_file(dir / "a", "only this\n", 0666);  // writable by anyone: only the mount refuses
  test::write_file(dir / "b", "sibling\n", 0666);
  const std::vector<std::string> ro_file{"--ro-file", dir / "a"};
  EXPECT_EQ(probe(ro_file, {"ls", dir.path()}).out, "f a\n");  // the one file, no sibling
  EXPECT_EQ(trim(probe(ro_file, {"stat", dir / "b"}).out), "ENOENT");
  EXPECT_EQ(probe(ro_file, {"text", dir / "a"}).out, "only this\n");
  EXPECT_EQ(trim(probe(ro_file, {"write", dir / "a"}).out), "EROFS");
  EXPECT_EQ(test::read_file(dir / "a"), "only this\n");
  // The neighbour: the same file under --rw takes the write.
  EXPECT_EQ(trim(probe({"--rw", dir.path()}, {"write", dir / "a"}).out), "ok");
  EXPECT_EQ(test::read_file(dir / "a"), "probe\n");
}

TEST(MountTree, DevHoldsOnlyTheNamedNodes) {
  EXPECT_EQ(probe({}, {"ls", "/dev"}).out,
            "c full\nc null\nc random\nc tty\nc urandom\nc zero\nd pts\nd shm\n"
            "l fd\nl ptmx\nl stderr\nl stdin\nl stdout\n");
  EXPECT_EQ(probe({}, {"ls", "/dev/pts"}).out, "c ptmx\n");  // a devpts of its own: no host terminal
  EXPECT_EQ(trim(probe({}, {"write", "/dev/full"}).out), "ENOSPC");
  EXPECT_EQ(trim(probe({}, {"write", "/dev/null"}).out), "ok");
  EXPECT_EQ(trim(probe({}, {"write", "/dev/shm/x"}).out), "ok");
  // Host devices, by name: each that exists here is absent inside.
  std::vector<std::string> host{"/dev/kvm"};
  if (DIR* d = opendir("/dev")) {
    while (dirent* e = readdir(d)) {
      struct stat st {};
      std::string path = std::string("/dev/") + e->d_name;
      if (stat(path.c_str(), &st) == 0 && S_ISBLK(st.st_mode)) host.push_back(path);
    }
    closedir(d);
  }
  for (const auto& path : host) {
    if (test::exists(path)) {
      EXPECT_EQ(trim(probe({}, {"stat", path}).out), "ENOENT") << path;
    }
  }
}

TEST(MountTree, TmpIsATmpfsWithASizeCap) {
  char want[96];
  std::snprintf(want, sizeof want, "type %#lx bytes %llu", static_cast<unsigned long>(TMPFS_MAGIC),
                static_cast<unsigned long long>(Config{}.tmp_size_bytes));
  EXPECT_EQ(trim(probe({}, {"statfs", "/tmp"}).out), want);
  // A small cap, through the library, so it can be filled: past it, ENOSPC.
  test::TempDir out;
  chmod(out.path().c_str(), 0777);
  Config c;
  c.tmp_size_bytes = 4 << 20;
  c.binds = {Bind{test::stage_dir(), "", Access::read_only}, Bind{out.path(), "", Access::read_write}};
  c.argv = {"sh", "-c", test::program("probe") + " fill /tmp/big 64 > " + out / "said"};
  auto r = run(c);
  ASSERT_TRUE(r) << r.error().message();
  ASSERT_EQ(r->exit_code, 0);
  std::string said = trim(test::read_file(out / "said"));
  ASSERT_EQ(said.rfind("ENOSPC after ", 0), 0u) << said;
  long long written = std::stoll(said.substr(13));
  EXPECT_LE(written, 4LL << 20);
  EXPECT_GE(written, 3LL << 20);
}

TEST(MountTree, ProcIsMountedReadOnlyNosuidNodevNoexec) {
  std::string options = trim(probe({}, {"mountopts", "/proc"}).out);
  std::vector<std::string> have;
  std::stringstream in(options);
  for (std::string o; std::getline(in, o, ',');) have.push_back(o);
  for (const char* want : {"ro", "nosuid", "nodev", "noexec"})
    EXPECT_TRUE(std::find(have.begin(), have.end(), want) != have.end()) << want << " missing: " << options;
}

// Runs argv with a pseudo-terminal as its controlling terminal (a session
// of its own, the terminal acquired); stdout and stderr come back together.
std::string run_on_a_terminal(const std::vector<std::string>& argv) {
  int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  char name[128] = {};
  if (master < 0 || grantpt(master) != 0 || unlockpt(master) != 0 ||
      ptsname_r(master, name, sizeof name) != 0)
    return "no pty";
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) return "no pipe";
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    setsid();
    int tty = open(name, O_RDWR);
    if (tty < 0 || ioctl(tty, TIOCSCTTY, 0) != 0) _exit(126);
    dup2(tty, 0);
    dup2(out[1], 1);
    dup2(out[1], 2);
    execv(args[0], args.data());
    _exit(127);
  }
  close(out[1]);
  std::string text;
  char buf[4096];
  for (ssize_t n; (n = read(out[0], buf, sizeof buf)) > 0;) text.append(buf, static_cast<size_t>(n));
  close(out[0]);
  waitpid(pid, nullptr, 0);
  close(master);
  return text;
}

TEST(Session, ProgramLeadsANewSessionWithoutAControllingTerminal) {
  // The neighbour: outside, the same probe on the same kind of terminal opens it.
  ASSERT_EQ(trim(run_on_a_terminal({test::program("probe"), "open", "/dev/tty"})), "ok");
  EXPECT_EQ(trim(run_on_a_terminal({test::chock_binary(), "sandbox", "--ro", test::stage_dir(), "--",
                                    test::program("probe"), "open", "/dev/tty"})),
            "ENXIO");
  EXPECT_EQ(trim(probe({}, {"session"}).out), "sid 2 pid 2 pgrp 2");
}

std::string own_namespace(const std::string& name) {
  char buf[256] = {};
  return readlink(("/proc/self/ns/" + name).c_str(), buf, sizeof buf - 1) > 0 ? buf : "";
}

TEST(Namespaces, IpcIsNewAndUtsAndCgroupAreTheHosts) {
  for (const char* ns : {"ipc", "user", "mnt", "pid", "net"}) {
    std::string inside = trim(probe({}, {"ns", ns}).out);
    EXPECT_EQ(inside.rfind(std::string(ns) + ":[", 0), 0u) << inside;
    EXPECT_NE(inside, own_namespace(ns)) << ns << " is the host's";
  }
  for (const char* ns : {"uts", "cgroup"}) {
    EXPECT_FALSE(own_namespace(ns).empty());
    EXPECT_EQ(trim(probe({}, {"ns", ns}).out), own_namespace(ns)) << "a new " << ns << " namespace";
  }
}

TEST(Identity, GidMapsToItselfAndSetgroupsIsDenied) {
  // A root caller's program runs as nobody's uid and gid; anyone else as itself.
  const unsigned gid = test::running_as_root() ? 65534 : getegid();
  const unsigned uid = test::running_as_root() ? 65534 : geteuid();
  Output id = probe({}, {"identity"});
  EXPECT_NE(id.out.find(" gid " + std::to_string(gid) + "\n"), std::string::npos) << id.out;
  EXPECT_EQ(trim(probe({}, {"text", "/proc/self/setgroups"}).out), "deny");
  auto map_of = [](const std::string& text) {
    std::istringstream in(text);
    unsigned long inside = 0, outside = 0, count = 0;
    in >> inside >> outside >> count;
    std::string rest;
    in >> rest;  // a second line would be a second mapping
    return std::to_string(inside) + " " + std::to_string(outside) + " " + std::to_string(count) + rest;
  };
  EXPECT_EQ(map_of(probe({}, {"text", "/proc/self/gid_map"}).out),
            std::to_string(gid) + " " + std::to_string(gid) + " 1");
  EXPECT_EQ(map_of(probe({}, {"text", "/proc/self/uid_map"}).out),
            std::to_string(uid) + " " + std::to_string(uid) + " 1");
  if (test::running_as_root()) {
    EXPECT_NE(probe({"--user", "4242"}, {"identity"}).out.find("uid 4242 euid 4242 gid 4242\n"),
              std::string::npos);
  }
}

TEST(Identity, SecurebitsAreLockedAndNoCapabilityIsLeft) {
  // What drop_capabilities sets; KEEP_CAPS itself is never set (exec clears it anyway).
  constexpr unsigned kLocked = SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
                               SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED |
                               SECBIT_NO_CAP_AMBIENT_RAISE | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED;
  char want[16];
  std::snprintf(want, sizeof want, "%#x", kLocked);
  EXPECT_EQ(trim(probe({}, {"securebits"}).out), want);
  Output id = probe({}, {"identity"});
  for (const char* cap : {"CapInh", "CapPrm", "CapEff", "CapAmb"})
    EXPECT_NE(id.out.find(std::string(cap) + ":\t0000000000000000\n"), std::string::npos) << cap << id.out;
}

}  // namespace
}  // namespace chock
