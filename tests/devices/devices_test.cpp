// Device passthrough: a device named in .devices and allowed by a rule is
// bound into the call, and nothing else of the host's /dev; the program
// opens it under its own uid and the node's own mode.
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <random>

#include "policy/policy.hpp"
#include "support.hpp"

namespace chock::test::ws {
namespace {

// A character node of a real driver made under /dev for the test (root
// only: mknod needs CAP_MKNOD), removed after.
class TestNode {
 public:
  TestNode(const char* like, mode_t mode) {
    struct stat st {};
    if (::stat(like, &st) != 0 || !S_ISCHR(st.st_mode)) {
      why_ = std::string(like) + " is not on this machine, and its driver is what the test talks to";
      return;
    }
    if (!running_as_root()) {
      why_ = "making a device node needs CAP_MKNOD, which only a root caller has";
      return;
    }
    path_ = "/dev/chock-test-" + std::to_string(std::random_device{}() % 1000000);
    if (::mknod(path_.c_str(), S_IFCHR | mode, st.st_rdev) != 0 || ::chmod(path_.c_str(), mode) != 0) {
      why_ = "mknod " + path_ + ": " + std::strerror(errno);
      path_.clear();
    }
  }
  TestNode(const TestNode&) = delete;
  TestNode& operator=(const TestNode&) = delete;
  ~TestNode() {
    if (!path_.empty()) ::unlink(path_.c_str());
  }
  [[nodiscard]] const std::string& path() const { return path_; }
  [[nodiscard]] const std::string& why_not() const { return why_; }

 private:
  std::string path_, why_;
};

std::string devices_zon(const std::vector<std::string>& named, const std::vector<std::string>& rules) {
  std::string zon = ".{ .devices = .{ ";
  for (const auto& a : named) zon += ".{ .action = \"" + a + "\" }, ";
  zon += "}, .policy = .{ .rules = .{ ";
  for (const auto& r : rules) zon += r + ", ";
  return zon + "} } }\n";
}

std::string allow(const std::string& action) {
  return ".{ .action = \"" + action + "\", .decision = .allow }";
}

void with_probe(Fixture& f) {
  write_file(f.file("device-probe"), read_file(program("device-probe")), 0755);
}

TEST(Devices, AnAllowedNodeIsBoundItsDriverAnswersAndNothingElseOfDevIsThere) {
  TestNode kvm("/dev/kvm", 0666);
  if (kvm.path().empty()) GTEST_SKIP() << kvm.why_not();
  Fixture f;
  f.init_plain();
  with_probe(f);
  const std::string action = policy::device_path(kvm.path());
  write_file(f.file("chock.zon"), devices_zon({action}, {allow(action)}));
  Output o = f.run({"--keep"}, "./device-probe " + kvm.path() + " kvm && ls -A /dev");
  ASSERT_EQ(o.status, 0) << describe(o);
  EXPECT_NE(o.out.find("api 12"), std::string::npos) << describe(o);
  EXPECT_NE(o.err.find("device " + action + " exposed: " + kvm.path()), std::string::npos) << describe(o);
  // The host's other nodes are not there: only Chock's own and this one.
  const std::string name = kvm.path().substr(5);
  for (const char* host : {"kvm", "fuse", "mem", "sda", "vda", "loop0", "net"})
    EXPECT_EQ(o.out.find(std::string("\n") + host + "\n"), std::string::npos) << host << "\n" << o.out;
  EXPECT_NE(o.out.find(name + "\n"), std::string::npos) << o.out;
  EXPECT_TRUE(has_event(log_lines(f, session_id(o)), "device.exposed", kvm.path()));
}

TEST(Devices, WithoutBothBlocksAgreeingTheNodeIsAbsentAndTheCallSaysWhy) {
  // Any character node will do, as it is never opened: /dev/kvm, else /dev/null's neighbour /dev/zero is
  // Chock's own.
  const std::string node = exists("/dev/kvm") ? "/dev/kvm" : exists("/dev/fuse") ? "/dev/fuse" : "";
  if (node.empty()) GTEST_SKIP() << "neither /dev/kvm nor /dev/fuse is on this machine";
  const std::string action = policy::device_path(node);
  struct Case {
    std::vector<std::string> named, rules;
    std::string says;
  };
  const Case cases[] = {
      {{action}, {}, "no rule allows it, and a device is not asked for mid-call"},
      {{action}, {".{ .action = \"" + action + "\", .decision = .ask }"}, "no rule allows it"},
      {{action}, {".{ .action = \"" + action + "\", .decision = .deny }"}, "the policy denies it"},
      {{}, {allow(action)}, "does not name it (both must)"},
  };
  for (const auto& c : cases) {
    Fixture f;
    f.init_plain();
    write_file(f.file("chock.zon"), devices_zon(c.named, c.rules));
    Output o = f.run({}, "test -e " + node + " && echo present || echo absent");
    ASSERT_EQ(o.status, 0) << describe(o);
    EXPECT_NE(o.out.find("absent"), std::string::npos) << describe(o);
    EXPECT_NE(o.err.find("device " + action + " is not exposed"), std::string::npos) << describe(o);
    EXPECT_NE(o.err.find(c.says), std::string::npos) << describe(o);
  }
}

TEST(Devices, ANodeTheCallerCouldNotOpenOutsideStaysClosedInside) {
  // A node only root may open: made by a root caller, the host's /dev/kvm for anyone else.
  TestNode root_only("/dev/kvm", 0600);
  std::string node = root_only.path();
  if (node.empty() && !running_as_root() && exists("/dev/kvm") && ::access("/dev/kvm", R_OK | W_OK) != 0)
    node = "/dev/kvm";
  if (node.empty()) GTEST_SKIP() << "no root-only character node to try: " << root_only.why_not();
  Fixture f;
  f.init_plain();
  with_probe(f);
  const std::string action = policy::device_path(node);
  write_file(f.file("chock.zon"), devices_zon({action}, {allow(action)}));
  Output o = f.run({}, "test -c " + node + " && echo bound; ./device-probe " + node);
  EXPECT_NE(o.out.find("bound"), std::string::npos) << describe(o);
  EXPECT_NE(o.out.find("open EACCES"), std::string::npos) << describe(o);
}

TEST(Devices, ABlockDeviceIsNeverPassedThrough) {
  std::string block;
  for (const auto& e : std::filesystem::directory_iterator("/dev")) {
    struct stat st {};
    if (::lstat(e.path().c_str(), &st) == 0 && S_ISBLK(st.st_mode)) {
      block = e.path();
      break;
    }
  }
  if (block.empty()) GTEST_SKIP() << "no block device under /dev on this machine";
  Fixture f;
  f.init_plain();
  const std::string action = policy::device_path(block);
  write_file(f.file("chock.zon"), devices_zon({action}, {allow(action)}));
  Output o = f.run({}, "test -e " + block + " && echo present || echo absent");
  EXPECT_NE(o.out.find("absent"), std::string::npos) << describe(o);
  EXPECT_NE(o.err.find("is a block device: a disk is never passed through"), std::string::npos)
      << describe(o);
  Output direct = chock({"sandbox", "--device", block, "--", "/bin/true"});
  EXPECT_EQ(direct.status, 125) << describe(direct);
  EXPECT_NE(direct.err.find("is a block device"), std::string::npos) << describe(direct);
}

TEST(Devices, ChockSandboxBindsANodeBelowASubdirectoryAtItsOwnPath) {
  if (!exists("/dev/net/tun")) GTEST_SKIP() << "/dev/net/tun is not on this machine";
  Output o = chock({"sandbox", "--device", "/dev/net/tun", "--", "/bin/sh", "-c",
                    "test -c /dev/net/tun && echo bound; ls /dev/net; test -e /dev/kvm || echo no-kvm"});
  EXPECT_EQ(o.status, 0) << describe(o);
  EXPECT_EQ(o.out, "bound\ntun\nno-kvm\n") << describe(o);
  Output link = chock({"sandbox", "--device", "/dev/stdin", "--", "/bin/true"});
  EXPECT_EQ(link.status, 125) << describe(link);
  Output outside = chock({"sandbox", "--device", "/etc/passwd", "--", "/bin/true"});
  EXPECT_EQ(outside.status, 125) << describe(outside);
  EXPECT_NE(outside.err.find("a device is a node below /dev"), std::string::npos) << describe(outside);
}

TEST(Devices, AMalformedDeviceActionIsAOneLineErrorNamingWhere) {
  Fixture f;
  f.init_plain();
  write_file(f.file("chock.zon"), ".{ .devices = .{ .{ .action = \"device.usb.1D50.6018\" } } }\n");
  Output o = f.run({}, "true");
  EXPECT_EQ(o.status, 125) << describe(o);
  EXPECT_NE(o.err.find("chock.zon:1:"), std::string::npos) << describe(o);
  write_file(f.file("chock.zon"), ".{ .devices = .{ .{ .action = \"device.usb.zz50.6018\" } } }\n");
  o = f.run({}, "true");
  EXPECT_NE(o.err.find("four lower-case hex digits"), std::string::npos) << describe(o);
}

}  // namespace
}  // namespace chock::test::ws
