// Why the managed cgroup is unsupported, driven through cgroup::Sources: the
// test writes its own mountinfo and /proc/self/cgroup, and the "cgroup2
// mount" they name is a temporary directory holding the few control files
// the walk reads. The machine's own cgroup mounts are never written; one
// test only asks them (statfs, stat) whether they are the caller's hierarchy.
#include <dirent.h>
#include <gtest/gtest.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "process.hpp"
#include "sandbox/cgroup.hpp"

namespace {

using chock::CgroupState;
using chock::Limits;
using chock::cgroup::Managed;
using chock::cgroup::Sources;
using chock::test::TempDir;
using chock::test::write_file;

// A fake machine: the two files Sources names, and cg/ standing in for
// the cgroup2 mount point.
struct FakeMachine {
  TempDir dir{"chock-cgroup-reasons"};
  Sources sources{dir / "mountinfo", dir / "self_cgroup", {}};
  std::string point = dir / "cg";

  FakeMachine() { ::mkdir(point.c_str(), 0755); }

  // A mountinfo with the usual neighbours and, when `cgroup2`, a cgroup2
  // line mounting cgroup `root` at `escaped_point` (as the kernel escapes it).
  void mountinfo(bool cgroup2, const std::string& root = "/", std::string escaped_point = {}) const {
    if (escaped_point.empty()) escaped_point = point;
    std::string text =
        "22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw\n"
        "23 22 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:2 - proc proc rw\n"
        "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
        "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
        "39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n";
    if (cgroup2) text += "41 31 0:38 " + root + " " + escaped_point + " rw,relatime - cgroup2 cgroup2 rw\n";
    write_file(sources.mountinfo, text);
  }
  void self_cgroup(const std::string& text) const { write_file(sources.self_cgroup, text); }
  // A directory of the fake hierarchy (relative to the mount point), with
  // the given cgroup.subtree_control.
  void cgroup_dir(const std::string& rel, const std::string& subtree_control) const {
    std::string path = point + rel;
    ::mkdir(path.c_str(), 0755);
    write_file(path + "/cgroup.subtree_control", subtree_control);
  }
};

std::vector<std::string> chock_children(const std::string& dir) {
  std::vector<std::string> out;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d))
      if (std::string(e->d_name).rfind("chock-", 0) == 0) out.emplace_back(e->d_name);
    ::closedir(d);
  }
  return out;
}

void expect_unsupported(const Managed& m, const std::string& reason) {
  EXPECT_EQ(m.state(), CgroupState::unsupported);
  EXPECT_EQ(m.reason(), reason);
  EXPECT_EQ(m.dir_fd(), -1);  // nothing to clone into
}

TEST(CgroupReasons, MountinfoWithoutCgroup2IsNoCgroup2Mount) {
  FakeMachine f;
  f.mountinfo(false);  // only the v1 hierarchies
  f.self_cgroup("4:memory:/x\n0::/\n");
  expect_unsupported(Managed::create(Limits{}, f.sources), "no cgroup2 mount");
}

// The usual places are tried first, but only a cgroup2 mount that holds the
// caller's own cgroup is taken: a directory of another file system, or a real
// cgroup2 mount without it (a container's subtree), leaves it to mountinfo.
TEST(CgroupReasons, AUsualPlaceThatIsNotTheCallersHierarchyFallsBackToMountinfo) {
  FakeMachine f;
  f.mountinfo(false);
  f.self_cgroup("0::/chock-test-no-such-cgroup/leaf\n");
  f.sources.usual_points = {f.point};  // a plain directory
  struct statfs fs {};
  for (const char* real : {"/sys/fs/cgroup", "/sys/fs/cgroup/unified"}) {
    if (::statfs(real, &fs) == 0 && fs.f_type == CGROUP2_SUPER_MAGIC)
      f.sources.usual_points.emplace_back(real);
  }
  expect_unsupported(Managed::create(Limits{}, f.sources), "no cgroup2 mount");
  if (f.sources.usual_points.size() == 1)
    GTEST_SKIP() << "no cgroup2 mount on this machine: only the plain directory was tried";
}

TEST(CgroupReasons, UnreadableMountinfoIsNoCgroup2Mount) {
  FakeMachine f;
  f.self_cgroup("0::/\n");  // mountinfo never written
  expect_unsupported(Managed::create(Limits{}, f.sources), "no cgroup2 mount");
}

TEST(CgroupReasons, NoZeroLineIsNotInTheUnifiedHierarchy) {
  FakeMachine f;
  f.mountinfo(true);
  f.self_cgroup("8:pids:/\n4:memory:/session\n1:name=systemd:/\n");
  expect_unsupported(Managed::create(Limits{}, f.sources),
                     "not in the unified hierarchy: " + f.sources.self_cgroup + " has no 0:: line");
}

TEST(CgroupReasons, OwnCgroupOutsideTheMountIsNotInTheUnifiedHierarchy) {
  FakeMachine f;
  f.mountinfo(true, "/delegated");  // the mount shows only /delegated and below
  f.self_cgroup("0::/elsewhere/leaf\n");
  expect_unsupported(
      Managed::create(Limits{}, f.sources),
      "not in the unified hierarchy: cgroup /elsewhere/leaf is outside the cgroup2 mount at " + f.point);
}

TEST(CgroupReasons, ControllersWithoutMemoryAndPidsIsTheCgroupV1Reason) {
  FakeMachine f;
  f.mountinfo(true);
  f.self_cgroup("4:memory:/x\n8:pids:/\n0::/\n");
  write_file(f.point + "/cgroup.controllers", "hugetlb\n");
  f.cgroup_dir("", "\n");
  expect_unsupported(Managed::create(Limits{}, f.sources),
                     "no delegated ancestor: the cgroup2 hierarchy at " + f.point +
                         " has no memory and pids controllers (held by cgroup v1)");
}

TEST(CgroupReasons, OnlyOneOfMemoryAndPidsIsStillTheCgroupV1Reason) {
  FakeMachine f;
  f.mountinfo(true);
  f.self_cgroup("0::/\n");
  write_file(f.point + "/cgroup.controllers", "cpu io memory\n");
  f.cgroup_dir("", "cpu io memory\n");
  expect_unsupported(Managed::create(Limits{}, f.sources),
                     "no delegated ancestor: the cgroup2 hierarchy at " + f.point +
                         " has no memory and pids controllers (held by cgroup v1)");
}

TEST(CgroupReasons, ControllersPresentButNeverEnabledIsNoDelegatedAncestor) {
  FakeMachine f;
  f.mountinfo(true);
  f.self_cgroup("0::/user/session\n");
  write_file(f.point + "/cgroup.controllers", "cpu memory pids\n");
  f.cgroup_dir("", "cpu\n");
  f.cgroup_dir("/user", "memory\n");  // pids missing: not delegated
  f.cgroup_dir("/user/session", "");
  expect_unsupported(Managed::create(Limits{}, f.sources),
                     "no delegated ancestor: no cgroup from " + f.point + "/user/session up to " + f.point +
                         " enables memory and pids in cgroup.subtree_control");
}

// The walk stops at the nearest ancestor that delegates both; the reason
// names that one (here it has no cgroup.procs, so the placement is refused).
TEST(CgroupReasons, NearestDelegatedAncestorWithoutProcsIsCreateRefused) {
  FakeMachine f;
  f.mountinfo(true);
  f.self_cgroup("0::/user/session\n");
  write_file(f.point + "/cgroup.controllers", "memory pids\n");
  f.cgroup_dir("", "memory pids\n");
  f.cgroup_dir("/user", "pids memory\n");
  f.cgroup_dir("/user/session", "");
  expect_unsupported(Managed::create(Limits{}, f.sources), "create refused: cannot place processes below " +
                                                               f.point + "/user (cgroup.procs): ENOENT");
  EXPECT_TRUE(chock_children(f.point + "/user").empty());
}

// A directory that takes the mkdir but has no limit files: the first write
// is refused, and the half-made child is removed again.
TEST(CgroupReasons, LimitFileMissingIsWriteRefusedAndTheChildIsRemoved) {
  FakeMachine f;
  f.mountinfo(true);
  f.self_cgroup("0::/leaf\n");
  f.cgroup_dir("", "memory pids\n");
  f.cgroup_dir("/leaf", "");
  write_file(f.point + "/cgroup.procs", "");
  Managed m = Managed::create(Limits{}, f.sources);
  EXPECT_EQ(m.state(), CgroupState::unsupported);
  const std::string prefix = "write refused: " + f.point + "/chock-" + std::to_string(::getpid()) + "-";
  EXPECT_EQ(m.reason().rfind(prefix, 0), 0u) << m.reason();
  const std::string suffix = "/memory.max: ENOENT";
  ASSERT_GE(m.reason().size(), suffix.size());
  EXPECT_EQ(m.reason().substr(m.reason().size() - suffix.size()), suffix) << m.reason();
  EXPECT_EQ(m.dir_fd(), -1);
  EXPECT_TRUE(chock_children(f.point).empty()) << "left behind: " << chock_children(f.point).front();
}

// mountinfo writes a space in a path as \040; the reason names the real path.
TEST(CgroupReasons, EscapedMountPointIsNamedUnescaped) {
  FakeMachine f;
  std::string spaced = f.dir / "cg root";
  ::mkdir(spaced.c_str(), 0755);
  f.point = spaced;
  f.mountinfo(true, "/", f.dir / "cg\\040root");
  f.self_cgroup("0::/\n");
  write_file(spaced + "/cgroup.controllers", "cpu\n");
  f.cgroup_dir("", "\n");
  expect_unsupported(Managed::create(Limits{}, f.sources),
                     "no delegated ancestor: the cgroup2 hierarchy at " + spaced +
                         " has no memory and pids controllers (held by cgroup v1)");
}

}  // namespace
