// A call cannot fill the disk its workspace is on. The data and state
// directories live on a small tmpfs (size= and nr_inodes=): mounted by the
// test as root, and by as-user.sh for the unprivileged run (CHOCK_TEST_SMALL_FS);
// a call writing a big file and one making many empty files are each stopped
// and named before the file system is full, the session log verifies, and
// the next call runs. Adopting a call's work onto a project there keeps its
// files' holes, is refused before it would take the disk under its floor,
// and never leaves a part of a file.
#include <dirent.h>
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>

#include "support.hpp"

namespace chock::test::ws {
namespace {

class Disk : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* given = std::getenv("CHOCK_TEST_SMALL_FS");
    if (given != nullptr && *given != '\0') {
      // One file system for every test of the run: each starts with it empty.
      small_ = given;
      ASSERT_FALSE(exists(small_ + "/data")) << "a previous test left its files on " << small_;
    } else {
      if (!running_as_root())
        GTEST_SKIP() << "the small tmpfs this test needs is mounted by root (as-user.sh does it for the "
                        "unprivileged run; set CHOCK_TEST_SMALL_FS to a small file system of yours)";
      small_ = dir_.path() + "/small";
      ASSERT_EQ(::mkdir(small_.c_str(), 0755), 0);
      ASSERT_EQ(::mount("tmpfs", small_.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "size=256m,nr_inodes=40000"),
                0)
          << std::strerror(errno);
      mounted_ = true;
    }
    f.init_plain();
  }
  void TearDown() override {
    if (mounted_) {
      ::umount2(small_.c_str(), MNT_DETACH);
    } else if (!small_.empty()) {
      remove_tree(small_ + "/data");
      remove_tree(small_ + "/state");
      remove_tree(small_ + "/project");
    }
  }
  // A project that is not git (an overlay session) on the small file system.
  [[nodiscard]] std::string small_project() const {
    const std::string project = small_ + "/project";
    EXPECT_EQ(::mkdir(project.c_str(), 0755), 0) << project << ": " << std::strerror(errno);
    write_file(project + "/a.txt", "alpha\n");
    return project;
  }
  [[nodiscard]] RunOptions in(const std::string& project) const {
    RunOptions o;
    o.cwd = project;
    o.env = {{"XDG_DATA_HOME", small_ + "/data"},
             {"XDG_STATE_HOME", small_ + "/state"},
             {"XDG_CONFIG_HOME", f.config()}};
    return o;
  }
  Output run(const std::string& script) const {
    RunOptions o;
    o.cwd = f.project();
    o.env = {{"XDG_DATA_HOME", small_ + "/data"},
             {"XDG_STATE_HOME", small_ + "/state"},
             {"XDG_CONFIG_HOME", f.config()}};
    return chock({"run", "--", "sh", "-c", script}, o);
  }
  Output verify(const std::string& id) const {
    RunOptions o;
    o.env = {{"XDG_DATA_HOME", small_ + "/data"}, {"XDG_STATE_HOME", small_ + "/state"}};
    return chock({"sessions", "verify", id}, o);
  }
  struct statvfs now() const {
    struct statvfs v {};
    EXPECT_EQ(::statvfs(small_.c_str(), &v), 0);
    return v;
  }
  // A file at `path` that takes all the small file system's room but `left` bytes.
  void fill_leaving(const std::string& path, std::uint64_t left) const {
    const struct statvfs v = now();
    const std::uint64_t free_bytes = static_cast<std::uint64_t>(v.f_bavail) * v.f_frsize;
    ASSERT_GT(free_bytes, left);
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    ASSERT_GE(fd, 0) << path << ": " << std::strerror(errno);
    const int rc = ::posix_fallocate(fd, 0, static_cast<off_t>(free_bytes - left));
    ::close(fd);
    ASSERT_EQ(rc, 0) << path;
  }
  void expect_next_call_runs() const {
    const Output next = run("echo next");
    EXPECT_EQ(next.status, 0) << describe(next);
    EXPECT_EQ(next.out, "next\n") << describe(next);
  }
  Fixture f;
  TempDir dir_;
  std::string small_;
  bool mounted_ = false;
};

TEST_F(Disk, ABigFileIsStoppedBeforeTheFileSystemIsFull) {
  const Output o = run("dd if=/dev/zero of=big bs=1M count=400 2>/dev/null; echo wrote");
  EXPECT_EQ(o.status, 128 + SIGKILL) << describe(o);
  EXPECT_NE(o.err.find("chock: the program was stopped by the disk limit: the file system of "),
            std::string::npos)
      << describe(o);
  EXPECT_NE(o.err.find(" free, under its floor of 25 MiB (every process of the call was stopped)"),
            std::string::npos)
      << describe(o);
  EXPECT_EQ(o.out.find("wrote"), std::string::npos) << describe(o);
  EXPECT_GT(now().f_bavail, 0U) << "the file system filled";
  const Output v = verify(session_id(o));
  EXPECT_EQ(v.status, 0) << describe(v);
  expect_next_call_runs();
}

// 40,000 inodes, a floor of 4,000: the guard looks at the file system while
// the call runs, so the margin must outlast a look that comes late on a
// loaded machine (with 4,000 inodes and a floor of 400, a shell loop ran
// them out in CI; a real file system's floor is 10,000).
TEST_F(Disk, ManyEmptyFilesAreStoppedBeforeTheInodesRunOut) {
  const Output o = run("i=0; while [ $i -lt 50000 ]; do : > f$i || exit 9; i=$((i+1)); done; echo made");
  EXPECT_EQ(o.status, 128 + SIGKILL) << describe(o);
  EXPECT_NE(o.err.find(" free inodes, under its floor of 4000 (every process of the call was stopped)"),
            std::string::npos)
      << describe(o);
  EXPECT_GT(now().f_favail, 0U) << "the inodes ran out";
  const Output v = verify(session_id(o));
  EXPECT_EQ(v.status, 0) << describe(v);
  expect_next_call_runs();
}

// Under a quarter of the floor free, a call is refused before it starts,
// and told where to make room; with room made, the next call runs.
TEST_F(Disk, ACallIsRefusedWhenTooLittleIsFreeToStart) {
  const std::string filler = small_ + "/data/filler";
  ASSERT_EQ(::mkdir((small_ + "/data").c_str(), 0755), 0);
  // The floor of this 256 MiB file system is 25 MiB; leave 4 MiB, under its quarter.
  fill_leaving(filler, 4ULL << 20);
  if (HasFatalFailure()) return;
  const Output o = run("echo ran");
  EXPECT_EQ(o.status, 125) << describe(o);
  EXPECT_EQ(o.out, "") << describe(o);
  EXPECT_NE(o.err.find(" free, under the 6400 KiB a call needs to start: make room there first "
                       "(chock workspace prune)"),
            std::string::npos)
      << describe(o);
  ASSERT_EQ(::unlink(filler.c_str()), 0);
  expect_next_call_runs();
}

// Short of room only because the trash still holds a removed session (its
// sweeper not done yet): the trash is emptied and the call runs. What is
// not in the trash (the filler above) is never touched.
TEST_F(Disk, ARemovedSessionStillInTheTrashIsSweptBeforeACallIsRefusedForRoom) {
  const std::string trash = small_ + "/data/chock/trash";
  for (const std::string& d : {small_ + "/data", small_ + "/data/chock", trash, trash + "/abcd1234.00000000"})
    ASSERT_EQ(::mkdir(d.c_str(), 0700), 0) << d;
  write_file(trash + "/.sweep.lock", "");
  const std::string left = trash + "/abcd1234.00000000/big";
  fill_leaving(left, 4ULL << 20);
  if (HasFatalFailure()) return;
  const Output o = run("echo ran");
  EXPECT_EQ(o.status, 0) << describe(o);
  EXPECT_EQ(o.out, "ran\n") << describe(o);
  EXPECT_FALSE(exists(left)) << "the trash was not emptied";
  EXPECT_TRUE(exists(trash + "/.sweep.lock"));
}

// The project's own cap: lower than the default, named with its size.
TEST_F(Disk, TheProjectsDiskLimitStopsTheCallPastIt) {
  write_file(f.file("chock.zon"), ".{ .limits = .{ .disk = \"32MiB\" } }\n");
  const Output o = run("dd if=/dev/zero of=big bs=1M count=100 2>/dev/null; echo wrote");
  EXPECT_EQ(o.status, 128 + SIGKILL) << describe(o);
  EXPECT_NE(o.err.find("to the file system of "), std::string::npos) << describe(o);
  EXPECT_NE(o.err.find(", past its disk limit of 32 MiB"), std::string::npos) << describe(o);
  // The neighbour: a call under the cap runs to its end.
  const Output small = run("dd if=/dev/zero of=small bs=1M count=8 2>/dev/null; echo wrote");
  EXPECT_EQ(small.status, 0) << describe(small);
  EXPECT_EQ(small.out, "wrote\n");
}

std::vector<std::string> names_in(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (const dirent* e = ::readdir(d))
      if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0)
        names.emplace_back(e->d_name);
    ::closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

// Three 1 GiB files with one byte of data each: written out in full, 3 GiB
// of zeros on a 256 MiB file system (it filled, and left partial files).
TEST_F(Disk, AdoptKeepsHolesOfSparseFiles) {
  const std::string project = small_project();
  const Output o =
      chock({"run", "--", "sh", "-c",
             "for f in s1 s2 s3; do truncate -s 1G $f && printf x | dd of=$f bs=1 seek=123456789 "
             "conv=notrunc 2>/dev/null || exit 9; done; echo made"},
            in(project));
  ASSERT_EQ(o.status, 0) << describe(o);
  ASSERT_EQ(o.out, "made\n");
  const std::uint64_t free_before = static_cast<std::uint64_t>(now().f_bavail) * now().f_frsize;
  const Output adopt = chock({"workspace", "adopt", session_id(o)}, in(project));
  ASSERT_EQ(adopt.status, 0) << describe(adopt);
  EXPECT_EQ(adopt.out, "added\ts1\nadded\ts2\nadded\ts3\n");
  for (const char* name : {"s1", "s2", "s3"}) {
    const std::string file = project + "/.chock-adopted/" + session_id(o) + "/" + name;
    struct stat st {};
    ASSERT_EQ(::stat(file.c_str(), &st), 0) << file;
    EXPECT_EQ(st.st_size, 1 << 30) << file;
    EXPECT_LE(st.st_blocks * 512, 1 << 20) << file << " was written out in full";
    const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    char at[2] = {'?', '?'};
    EXPECT_EQ(::pread(fd, &at[0], 1, 123456789), 1);
    EXPECT_EQ(::pread(fd, &at[1], 1, 0), 1);
    ::close(fd);
    EXPECT_EQ(at[0], 'x') << file;
    EXPECT_EQ(at[1], '\0') << file;
  }
  const std::uint64_t free_after = static_cast<std::uint64_t>(now().f_bavail) * now().f_frsize;
  EXPECT_LT(free_before - free_after, 8ULL << 20) << "adopt took more than its files' data";
}

// 40 MiB of work, 50 MiB free, a floor of 25 MiB: refused in one line before
// a byte is written, and adopted once there is room.
TEST_F(Disk, AdoptRefusesBeforeItWritesWhatWouldTakeTheDiskUnderItsFloor) {
  const std::string project = small_project();
  const Output o =
      chock({"run", "--", "sh", "-c", "head -c 41943040 /dev/urandom > big && echo made"}, in(project));
  ASSERT_EQ(o.status, 0) << describe(o);
  const std::string filler = small_ + "/data/filler";
  fill_leaving(filler, 50ULL << 20);
  if (HasFatalFailure()) return;
  const Output refused = chock({"workspace", "adopt", session_id(o)}, in(project));
  EXPECT_NE(refused.status, 0) << describe(refused);
  EXPECT_EQ(refused.out, "") << describe(refused);
  EXPECT_EQ(std::count(refused.err.begin(), refused.err.end(), '\n'), 1) << describe(refused);
  // 40 MiB of data, a block for the file and one for the list: "40.0 MiB".
  EXPECT_NE(refused.err.find("chock: adopt would write 40.0 MiB to the file system of " + project + " ("),
            std::string::npos)
      << describe(refused);
  EXPECT_NE(refused.err.find(" free), under its floor of 25 MiB: nothing was written; make room there first"),
            std::string::npos)
      << describe(refused);
  EXPECT_FALSE(exists(project + "/.chock-adopted")) << "adopt wrote before it refused";
  // The neighbour: with room made, the same adopt copies the file whole.
  ASSERT_EQ(::unlink(filler.c_str()), 0);
  const Output adopted = chock({"workspace", "adopt", session_id(o)}, in(project));
  ASSERT_EQ(adopted.status, 0) << describe(adopted);
  EXPECT_EQ(adopted.out, "added\tbig\n");
  struct stat st {};
  ASSERT_EQ(::stat((project + "/.chock-adopted/" + session_id(o) + "/big").c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 41943040);
}

// A copy that fails part way (here: past the file size limit adopt runs
// under, EFBIG) leaves nothing of that file: each is written aside and
// renamed into place whole. The file beside it is adopted.
TEST_F(Disk, AdoptNeverLeavesAPartialFile) {
  const std::string project = small_project();
  const Output o =
      chock({"run", "--", "sh", "-c", "head -c 8388608 /dev/urandom > big && echo s > s.txt"}, in(project));
  ASSERT_EQ(o.status, 0) << describe(o);
  const Output adopt = run_process({"sh", "-c", "trap '' XFSZ; exec prlimit --fsize=1048576 \"$@\"", "sh",
                                    chock_binary(), "workspace", "adopt", session_id(o)},
                                   in(project));
  ASSERT_EQ(adopt.status, 0) << describe(adopt);
  EXPECT_NE(adopt.out.find("added\ts.txt\n"), std::string::npos) << describe(adopt);
  EXPECT_NE(adopt.out.find("skipped\tbig\tcopy: big: EFBIG"), std::string::npos) << describe(adopt);
  EXPECT_EQ(names_in(project + "/.chock-adopted/" + session_id(o)), std::vector<std::string>{"s.txt"})
      << "a part of big was left behind";
}

}  // namespace
}  // namespace chock::test::ws
