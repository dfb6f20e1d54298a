// A root caller's project that is not git: its calls run as another uid
// (65534), so the overlay's lower layer is the project itself through an
// idmapped mount that shows the project's owner as that uid (no copy), or,
// where the project's file system cannot be idmapped, a copy owned by it.
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "chock/workspace.hpp"
#include "support.hpp"
#include "util/split.hpp"

namespace chock::test::ws {
namespace {

constexpr uid_t kRunUid = workspace::kDefaultRunUid;

std::string inode_of(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return std::to_string(st.st_ino);
}

nlohmann::json record_of(const Fixture& f, const std::string& id) {
  std::ifstream in(f.sessions() + "/" + id + "/session.json");
  return nlohmann::json::parse(in);
}

TEST(RootOverlay, TheProjectIsTheLowerLayerItselfThroughAnIdmappedMountNotACopy) {
  if (!running_as_root())
    GTEST_SKIP() << "a root caller's workspace; an unprivileged caller's needs no idmap";
  Fixture f;
  f.init_plain();
  if (const std::string why = why_no_idmapped_layer(f.project()); !why.empty()) GTEST_SKIP() << why;
  // A file of a third uid: the mapping gives the run uid the project owner's
  // files only; everyone else's stay theirs. (Inside, any uid but the run
  // uid's shows as the overflow uid, so what shows is who may write.)
  write_file(f.file("other.txt"), "another uid's\n");
  ASSERT_EQ(::chown(f.file("other.txt").c_str(), 4321, 4321), 0);
  auto before = snapshot(f.project());

  Output o = f.run({"--keep"},
                   "stat -c %i a.txt sub/c.txt other.txt && echo more >> a.txt && "
                   "mkdir sub/new && echo n > sub/new/f.txt && sh -c 'echo x >> other.txt' 2>&1; "
                   "echo other=$?");
  ASSERT_EQ(o.status, 0) << describe(o);
  const std::string id = session_id(o);
  ASSERT_FALSE(id.empty()) << describe(o);
  EXPECT_EQ(o.err.find("copied"), std::string::npos) << o.err;
  const auto seen = split_nonempty(o.out, '\n');
  ASSERT_EQ(seen.size(), 5U) << o.out;
  // The host's inodes: nothing was copied, and root's files were the run uid's to write.
  EXPECT_EQ(seen[0], inode_of(f.file("a.txt")));
  EXPECT_EQ(seen[1], inode_of(f.file("sub/c.txt")));
  EXPECT_EQ(seen[2], inode_of(f.file("other.txt")));
  EXPECT_NE(seen[3].find("other.txt: Permission denied"), std::string::npos) << o.out;
  EXPECT_EQ(seen[4], "other=2") << "the run uid wrote a file of uid 4321";

  // The writes are in the session's upper layer, the run uid's; the project is as it was.
  EXPECT_EQ(snapshot(f.project()), before) << "a write inside reached the project";
  const std::string session = f.sessions() + "/" + id;
  EXPECT_FALSE(exists(session + "/lower")) << "the project was copied";
  EXPECT_EQ(read_file(session + "/upper/a.txt"), "alpha\nmore\n");
  EXPECT_EQ(read_file(session + "/upper/sub/new/f.txt"), "n\n");
  struct stat up {};
  ASSERT_EQ(::lstat((session + "/upper/a.txt").c_str(), &up), 0);
  EXPECT_EQ(up.st_uid, kRunUid);
  const auto shift = record_of(f, id).at("lower_shift");
  EXPECT_EQ(shift.at("uid_from").get<uid_t>(), 0U) << shift;
  EXPECT_EQ(shift.at("uid_to").get<uid_t>(), kRunUid) << shift;

  // A later call of the session mounts the same way and sees the first's work.
  Output again = f.run({"--session", id}, "cat a.txt sub/new/f.txt && stat -c '%i' b.txt");
  ASSERT_EQ(again.status, 0) << describe(again);
  EXPECT_EQ(again.out, "alpha\nmore\nn\n" + inode_of(f.file("b.txt")) + "\n");
  Output adopt = f.chock({"workspace", "adopt", id});
  ASSERT_EQ(adopt.status, 0) << describe(adopt);
  EXPECT_EQ(adopt.out, "changed\ta.txt\nadded\tsub/new/f.txt\n");
}

// ramfs takes no idmapped mount: the copy stays, and the workspace keeps
// every promise.
TEST(RootOverlay, AProjectOnAFileSystemThatCannotBeIdmappedIsCopiedAndStillWorks) {
  if (!running_as_root()) GTEST_SKIP() << "a root caller's workspace, on a ramfs only root can mount";
  Fixture f;
  ASSERT_EQ(::mount("ramfs", f.project().c_str(), "ramfs", MS_NOSUID | MS_NODEV, "mode=0755"), 0)
      << std::strerror(errno);
  struct Unmount {
    std::string at;
    ~Unmount() { ::umount2(at.c_str(), MNT_DETACH); }
  } unmount{f.project()};
  f.init_plain();
  auto before = snapshot(f.project());

  Output o = f.run({"--keep"}, "stat -c '%i %u' a.txt && echo more >> a.txt && echo new > added.txt");
  ASSERT_EQ(o.status, 0) << describe(o);
  const std::string id = session_id(o);
  ASSERT_FALSE(id.empty()) << describe(o);
  EXPECT_NE(o.err.find("the project is copied for this session: an idmapped mount of it does not work here"),
            std::string::npos)
      << o.err;
  const std::string session = f.sessions() + "/" + id;
  // Inside, a.txt is the copy's, the run uid's.
  EXPECT_EQ(o.out, inode_of(session + "/lower/a.txt") + " " + std::to_string(kRunUid) + "\n");
  EXPECT_NE(inode_of(session + "/lower/a.txt"), inode_of(f.file("a.txt")));
  EXPECT_EQ(snapshot(f.project()), before) << "a write inside reached the project";
  EXPECT_TRUE(record_of(f, id).at("lower_shift").is_null());
  Output adopt = f.chock({"workspace", "adopt", id});
  ASSERT_EQ(adopt.status, 0) << describe(adopt);
  EXPECT_EQ(adopt.out, "changed\ta.txt\nadded\tadded.txt\n");
}

}  // namespace
}  // namespace chock::test::ws
