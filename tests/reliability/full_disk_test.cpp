// A full disk: the data directory, the session logs or the project on a
// small file system made for the test (a tmpfs mounted as root, or by
// as-user.sh for the unprivileged run), filled by a file of the test's own
// until a step of Chock's meets ENOSPC: making a workspace, starting a call,
// writing the session log, applying. Each is one clear line, leaves nothing
// half made that a later call trips on, loses no commit, and the log's chain
// verifies; once there is room again, the same command succeeds.
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "reliability_support.hpp"
#include "support.hpp"

namespace chock::test::reliability {
namespace {

using ws::describe;
using ws::session_id;

class FullDisk : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* given = std::getenv("CHOCK_TEST_SMALL_FS");
    if (given != nullptr && *given != '\0') {
      small_ = given;  // one for the run: each test leaves it empty
    } else {
      if (!running_as_root())
        GTEST_SKIP() << "the small tmpfs this test needs is mounted by root (as-user.sh does it for the "
                        "unprivileged run when CHOCK_TEST_SMALL_TMPFS is set)";
      small_ = dir_.path() + "/small";
      ASSERT_EQ(::mkdir(small_.c_str(), 0755), 0);
      ASSERT_EQ(::mount("tmpfs", small_.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "size=64m,nr_inodes=8000"), 0)
          << std::strerror(errno);
      mounted_ = true;
    }
    root_ = small_ + "/t";
    ASSERT_EQ(::mkdir(root_.c_str(), 0755), 0) << root_ << ": " << std::strerror(errno);
  }
  void TearDown() override {
    if (mounted_)
      ::umount2(small_.c_str(), MNT_DETACH);
    else if (!root_.empty())
      remove_tree(root_);
  }
  // A git project with a file of `bytes` random bytes, at `dir`.
  static void make_project(const std::string& dir, std::size_t bytes) {
    ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0);
    ws::git_ok(dir, {"init", "-q", "-b", "main"});
    write_file(dir + "/a.txt", "alpha\n");
    std::string big(bytes, '\0');
    for (std::size_t i = 0; i < bytes; ++i) big[i] = static_cast<char>((i * 2654435761U) >> 13);
    write_file(dir + "/big.bin", big);
    ws::git_ok(dir, {"add", "-A"});
    ws::git_ok(dir, {"commit", "-q", "-m", "initial"});
  }
  // Fills the small file system but `leave` bytes.
  void fill(std::size_t leave) const {
    struct statvfs v {};
    ASSERT_EQ(::statvfs(small_.c_str(), &v), 0);
    const std::uint64_t free = static_cast<std::uint64_t>(v.f_bavail) * v.f_frsize;
    ASSERT_GT(free, leave);
    const int fd = ::open((root_ + "/filler").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    ASSERT_GE(fd, 0);
    std::string block(1 << 16, 'x');
    std::uint64_t left = free - leave;
    while (left > 0) {
      const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(left, block.size()));
      const ssize_t w = ::write(fd, block.data(), n);
      if (w <= 0) break;
      left -= static_cast<std::uint64_t>(w);
    }
    // Full means full: what statvfs did not count, a byte at a time at the end.
    if (leave == 0)
      for (std::size_t n = block.size(); n > 0; n /= 2)
        while (::write(fd, block.data(), n) > 0) {
        }
    ::close(fd);
  }
  void make_room() const { ::unlink((root_ + "/filler").c_str()); }
  RunOptions options(const std::string& project, const std::string& data, const std::string& state) const {
    RunOptions o;
    o.cwd = project;
    o.env = {{"XDG_DATA_HOME", data},
             {"XDG_STATE_HOME", state},
             {"XDG_CONFIG_HOME", dir_.path()},
             {"XDG_CACHE_HOME", dir_.path() + "/cache"}};
    return o;
  }

  TempDir dir_{"chock-full-disk"};
  std::string small_, root_;
  bool mounted_ = false;
};

TEST_F(FullDisk, MakingAWorkspaceFailsInOneLineAndLeavesNoHalfSession) {
  const std::string project = dir_.path() + "/project", data = root_ + "/data", state = root_ + "/state";
  make_project(project, 3 << 20);
  const RunOptions o = options(project, data, state);
  ASSERT_EQ(test::chock({"workspace", "list"}, o).status, 0);  // the data directory exists
  fill(1 << 20);
  Output full = test::chock({"run", "--", "true"}, o);
  EXPECT_EQ(full.status, 125) << describe(full);
  EXPECT_EQ(lines_in(full.err), 1U) << describe(full);
  EXPECT_TRUE(has(full.err, "check out the base")) << describe(full);
  Output list = test::chock({"workspace", "list"}, o);
  EXPECT_EQ(lines_in(list.out), 1U) << "a half-made session is listed: " << list.out;
  // Nor is there a half-made base for a later session to use: only its leftover, for gc.
  Output bases =
      run_process({"sh", "-c", "ls -A " + data + "/chock/bases | grep -v -e '^\\.tmp\\.' -e '\\.lock$'"});
  EXPECT_EQ(bases.out, "") << "a half-made base is in place";
  make_room();
  Output next = test::chock({"run", "--", "cat", "a.txt"}, o);
  EXPECT_EQ(next.status, 0) << describe(next);
  EXPECT_EQ(next.out, "alpha\n");
}

TEST_F(FullDisk, ACallIsRefusedBeforeItStartsAndItsSessionKeepsItsWork) {
  const std::string project = dir_.path() + "/project", data = root_ + "/data", state = root_ + "/state";
  make_project(project, 1 << 10);
  const RunOptions o = options(project, data, state);
  Output made = test::chock({"run", "--keep", "--", "sh", "-c",
                             "git -c user.name=t -c user.email=t@t commit -q --allow-empty -m kept"},
                            o);
  ASSERT_EQ(made.status, 0) << describe(made);
  const std::string id = session_id(made);
  fill(4 << 10);
  Output full = test::chock({"run", "--session", id, "--", "echo", "ran"}, o);
  EXPECT_EQ(full.status, 125) << describe(full);
  EXPECT_EQ(full.out, "");
  EXPECT_EQ(lines_in(full.err), 1U) << describe(full);
  EXPECT_TRUE(has(full.err, "free")) << describe(full);
  make_room();
  Output log = test::chock({"run", "--session", id, "--", "git", "log", "--format=%s"}, o);
  EXPECT_EQ(log.status, 0) << describe(log);
  EXPECT_EQ(log.out, "kept\ninitial\n");
  EXPECT_EQ(test::chock({"sessions", "verify", id}, o).status, 0);
}

// The session logs on a file system of their own that fills up: the next
// call's lines go into the room reserved for them, without a word; calls go
// on until that room is used up and a line cannot be written: Chock says so,
// the call still runs, the cut line is taken back and the chain verifies;
// with room again the next call's lines chain on.
TEST_F(FullDisk, ALogWriteThatFailsLeavesAChainThatVerifies) {
  const std::string project = dir_.path() + "/project", data = dir_.path() + "/data",
                    state = root_ + "/state";
  make_project(project, 1 << 10);
  const RunOptions o = options(project, data, state);
  Output made = test::chock({"run", "--keep", "--", "true"}, o);
  ASSERT_EQ(made.status, 0) << describe(made);
  const std::string id = session_id(made);
  fill(0);
  Output quiet = test::chock({"run", "--session", id, "--", "echo", "ran"}, o);
  EXPECT_EQ(quiet.status, 0) << describe(quiet);
  EXPECT_EQ(quiet.out, "ran\n");
  EXPECT_EQ(quiet.err, "") << "the reserved room should hold this call's lines";
  // Each call adds about a kilobyte; the room is 64 KiB and is not renewed on a full disk.
  bool cut = false;
  for (int i = 0; i < 400 && !cut; ++i) {
    Output call = test::chock({"run", "--session", id, "--", "echo", "ran"}, o);
    ASSERT_EQ(call.status, 0) << describe(call);
    EXPECT_EQ(call.out, "ran\n");
    cut = has(call.err, "session log: write") && has(call.err, "ENOSPC");
  }
  ASSERT_TRUE(cut) << "400 calls on a full disk and every log line was written";
  Output verified = test::chock({"sessions", "verify", id}, o);
  EXPECT_EQ(verified.status, 0) << describe(verified);
  make_room();
  Output next = test::chock({"run", "--session", id, "--", "echo", "again"}, o);
  EXPECT_EQ(next.status, 0) << describe(next);
  Output after = test::chock({"sessions", "verify", id}, o);
  EXPECT_EQ(after.status, 0) << describe(after);
  EXPECT_FALSE(has(after.out, "one line behind")) << describe(after);
}

// The project itself on the full file system: apply cannot write the
// commit or the ref; the branch and the working tree stay as they were,
// the work stays in its session, and the same apply succeeds with room.
TEST_F(FullDisk, AnApplyThatCannotWriteChangesNothingAndAppliesLater) {
  const std::string project = root_ + "/project", data = dir_.path() + "/data",
                    state = dir_.path() + "/state";
  make_project(project, 1 << 10);
  const RunOptions o = options(project, data, state);
  Output made = test::chock({"run", "--keep", "--", "sh", "-c",
                             "echo work > work.txt && git add work.txt && "
                             "git -c user.name=t -c user.email=t@t commit -qm work"},
                            o);
  ASSERT_EQ(made.status, 0) << describe(made);
  const std::string id = session_id(made);
  const std::string before = ws::git_ok(project, {"rev-parse", "main"});
  fill(0);
  Output full = test::chock({"apply", id, "--yes"}, o);
  EXPECT_EQ(full.status, 1) << describe(full);
  EXPECT_EQ(lines_in(full.err), 1U) << describe(full);
  EXPECT_EQ(ws::git_ok(project, {"rev-parse", "main"}), before);
  EXPECT_EQ(ws::git(project, {"status", "--porcelain"}).out, "");
  make_room();
  EXPECT_EQ(ws::git(project, {"fsck", "--no-progress", "--no-dangling"}).status, 0);
  Output applied = test::chock({"apply", id, "--yes"}, o);
  EXPECT_EQ(applied.status, 0) << describe(applied);
  EXPECT_EQ(test::read_file(project + "/work.txt"), "work\n");
}

}  // namespace
}  // namespace chock::test::reliability
