// The sandbox core, continued: overlays, and promises of the mount tree,
// the session and the identity, each proven by an attack.
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
#include "support.hpp"

namespace chock {
namespace {

using test::Output;
using test::RunOptions;
using test::core::probe;
using test::core::sandbox;
using test::core::trim;

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
  // What restrict_inherited_capabilities sets; KEEP_CAPS itself is never set (exec clears it anyway).
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

// A caller that ignores a signal (SIG_IGN survives execve) or blocks one
// (chock blocks SIGINT, SIGTERM and SIGHUP while it waits) hands neither to
// the program: it starts with every signal at its default and none blocked.
TEST(Identity, SignalsTheCallerIgnoresOrBlocksReachTheProgramAtTheirDefault) {
  const std::string status_line = test::chock_binary() + " sandbox --ro " + test::stage_dir() + " -- " +
                                  test::program("probe") + " text /proc/self/status";
  Output o = test::run_process({"sh", "-c", "trap '' USR1 PIPE TERM; exec " + status_line});
  ASSERT_EQ(o.status, 0) << o.err;
  EXPECT_NE(o.out.find("SigIgn:\t0000000000000000\n"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("SigBlk:\t0000000000000000\n"), std::string::npos) << o.out;
  // The trap took: outside, the same shell ignores them.
  Output outside = test::run_process({"sh", "-c", "trap '' USR1 PIPE TERM; exec cat /proc/self/status"});
  EXPECT_EQ(outside.out.find("SigIgn:\t0000000000000000\n"), std::string::npos) << outside.out;
}

}  // namespace
}  // namespace chock
