// The host side's file operations on workspace content, each given a
// symbolic link where a parent directory or the entry itself should be: none
// reaches outside the tree it was aimed at.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <thread>
#include <vector>

#include "process.hpp"
#include "util/fd.hpp"
#include "util/fs.hpp"

namespace chock::fs {
namespace {

struct Trees {
  test::TempDir dir{"chock-fs"};
  std::string from = dir / "from";
  std::string to = dir / "to";
  std::string outside = dir / "outside";
  UniqueFd from_fd, to_fd;
  Trees() {
    for (const auto& d : {from, to, outside}) ::mkdir(d.c_str(), 0755);
    test::write_file(outside + "/x", "outside\n", 0600);
    from_fd.reset(::open(from.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    to_fd.reset(::open(to.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  }
  [[nodiscard]] std::string outside_bytes() const { return test::read_file(outside + "/x"); }
};

mode_t mode_of(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 ? st.st_mode : 0;
}

// Two writers of one file at once (found by the reliability suite when two
// calls installed git's preload in the data directory: "rename:
// ...pcre2-nojit-....so: ENOENT"): each renames a whole file of its own,
// and none fails.
TEST(WriteFileAtomic, WritersAtOnceEachRenameAWholeFile) {
  test::TempDir dir{"chock-fs-atomic"};
  const std::string path = dir.path() + "/shared";
  std::atomic<int> failures{0};
  std::vector<std::thread> writers;
  for (int t = 0; t < 8; ++t)
    writers.emplace_back([&, t] {
      const std::string content(4096, static_cast<char>('a' + t));
      for (int i = 0; i < 100; ++i)
        if (!write_file_atomic(path, content)) ++failures;
    });
  for (auto& w : writers) w.join();
  EXPECT_EQ(failures.load(), 0);
  const std::string left = test::read_file(path);
  ASSERT_EQ(left.size(), 4096U);
  EXPECT_EQ(left.find_first_not_of(left[0]), std::string::npos) << "a file mixed from two writers";
  int entries = 0;
  for (DIR* d = ::opendir(dir.path().c_str()); d != nullptr;) {
    dirent* e = ::readdir(d);
    if (e == nullptr) {
      ::closedir(d);
      break;
    }
    if (e->d_name[0] != '.') ++entries;
  }
  EXPECT_EQ(entries, 1) << "temporary files were left";
}

// A session file rewritten at every call only when it changed: the same
// bytes and mode leave the file (its inode) alone; other bytes, or the same
// bytes with another mode (a file a call or a person chmodded), replace it.
TEST(WriteFileIfChanged, OnlyOtherBytesOrAnotherModeRewriteTheFile) {
  test::TempDir dir{"chock-fs-changed"};
  const std::string path = dir / "session.json";
  ASSERT_TRUE(write_file_if_changed(path, "one\n", 0600));
  struct stat first {};
  ASSERT_EQ(::stat(path.c_str(), &first), 0);
  ASSERT_TRUE(write_file_if_changed(path, "one\n", 0600));
  struct stat same {};
  ASSERT_EQ(::stat(path.c_str(), &same), 0);
  EXPECT_EQ(same.st_ino, first.st_ino) << "unchanged bytes were written again";
  ASSERT_EQ(::chmod(path.c_str(), 0644), 0);
  ASSERT_TRUE(write_file_if_changed(path, "one\n", 0600));
  struct stat moded {};
  ASSERT_EQ(::stat(path.c_str(), &moded), 0);
  EXPECT_EQ(moded.st_mode & 07777, 0600U) << "a file of the right bytes kept a wrong mode";
  ASSERT_TRUE(write_file_if_changed(path, "two\n", 0600));
  EXPECT_EQ(test::read_file(path), "two\n");
  // A link where the file should be is replaced, never followed.
  const std::string target = dir / "target";
  test::write_file(target, "two\n", 0600);
  ASSERT_EQ(::unlink(path.c_str()), 0);
  ASSERT_EQ(::symlink(target.c_str(), path.c_str()), 0);
  ASSERT_TRUE(write_file_if_changed(path, "two\n", 0600));
  EXPECT_TRUE(S_ISREG(mode_of(path))) << "the link was left in place";
}

// A file that running calls may have bound (the git-grep preload) is added
// where missing and never renamed over: a detached mount of a file that was
// renamed over cannot be attached (move_mount: ENOENT), which made a call
// that was starting fail ("sandbox setup failed at mount_tree: ENOENT").
TEST(WriteFileNew, ASecondWriterFindsTheFirstsFileAndLeavesIt) {
  test::TempDir dir{"chock-fs-new"};
  const std::string path = dir.path() + "/preload.so";
  ASSERT_TRUE(write_file_new(path, "first"));
  struct stat before {};
  ASSERT_EQ(::stat(path.c_str(), &before), 0);
  auto second = write_file_new(path, "second");
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().code, EEXIST);
  struct stat after {};
  ASSERT_EQ(::stat(path.c_str(), &after), 0);
  EXPECT_EQ(after.st_ino, before.st_ino) << "the file was replaced";
  EXPECT_EQ(test::read_file(path), "first");
}

TEST(UnlinkBeneath, ASymlinkedParentIsRefusedAndNothingOutsideGoes) {
  Trees t;
  ASSERT_EQ(::symlink(t.outside.c_str(), (t.to + "/docs").c_str()), 0);
  auto r = unlink_beneath(t.to_fd.get(), "docs/x");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ELOOP) << r.error().message();
  EXPECT_EQ(t.outside_bytes(), "outside\n");
}

TEST(UnlinkBeneath, ASymlinkLeafIsRemovedItselfNotItsTarget) {
  Trees t;
  ASSERT_EQ(::symlink((t.outside + "/x").c_str(), (t.to + "/leaf").c_str()), 0);
  ASSERT_TRUE(unlink_beneath(t.to_fd.get(), "leaf"));
  EXPECT_FALSE(test::exists(t.to + "/leaf"));
  EXPECT_EQ(t.outside_bytes(), "outside\n");
}

TEST(CopyBeneath, ASymlinkedParentOnEitherSideIsRefused) {
  Trees t;
  ASSERT_EQ(::symlink(t.outside.c_str(), (t.to + "/docs").c_str()), 0);
  ::mkdir((t.from + "/docs").c_str(), 0755);
  test::write_file(t.from + "/docs/x", "from the call\n");
  auto into = copy_beneath(t.from_fd.get(), t.to_fd.get(), "docs/x", {});
  ASSERT_FALSE(into);
  EXPECT_EQ(into.error().code, ELOOP) << into.error().message();
  EXPECT_EQ(t.outside_bytes(), "outside\n");

  ASSERT_EQ(::symlink(t.outside.c_str(), (t.from + "/out").c_str()), 0);
  auto out_of = copy_beneath(t.from_fd.get(), t.to_fd.get(), "out/x", {});
  ASSERT_FALSE(out_of);
  EXPECT_EQ(out_of.error().code, ELOOP) << out_of.error().message();
  EXPECT_FALSE(test::exists(t.to + "/out"));
}

TEST(CopyBeneath, ASymlinkLeafIsCopiedAsALinkAndALinkAtTheDestinationIsReplaced) {
  Trees t;
  ASSERT_EQ(::symlink((t.outside + "/x").c_str(), (t.from + "/leaf").c_str()), 0);
  ASSERT_EQ(::symlink((t.outside + "/x").c_str(), (t.to + "/file").c_str()), 0);
  test::write_file(t.from + "/file", "from the call\n");
  ASSERT_TRUE(copy_beneath(t.from_fd.get(), t.to_fd.get(), "leaf", {}));
  ASSERT_TRUE(copy_beneath(t.from_fd.get(), t.to_fd.get(), "file", {}));
  EXPECT_TRUE(S_ISLNK(mode_of(t.to + "/leaf")));
  EXPECT_TRUE(S_ISREG(mode_of(t.to + "/file")));
  EXPECT_EQ(test::read_file(t.to + "/file"), "from the call\n");
  EXPECT_EQ(t.outside_bytes(), "outside\n");
  EXPECT_EQ(mode_of(t.outside + "/x") & 07777, 0600U);
}

TEST(CopyBeneath, SpecialFilesAreRefusedWithoutBlocking) {
  Trees t;
  ASSERT_EQ(::mkfifo((t.from + "/fifo").c_str(), 0644), 0);
  auto r = copy_beneath(t.from_fd.get(), t.to_fd.get(), "fifo", {});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, EINVAL);
  EXPECT_FALSE(test::exists(t.to + "/fifo"));
}

TEST(CopyBeneath, SetuidSetgidAndStickyNeverCrossAndModesAreNormalised) {
  Trees t;
  test::write_file(t.from + "/tool", "#!/bin/sh\n", 0755);
  test::write_file(t.from + "/data", "x", 0600);
  ASSERT_EQ(::chmod((t.from + "/tool").c_str(), 06755), 0);
  ASSERT_EQ(::chmod((t.from + "/data").c_str(), 05644), 0);
  CopyPolicy adopt{true, nullptr};
  ASSERT_TRUE(copy_beneath(t.from_fd.get(), t.to_fd.get(), "tool", adopt));
  ASSERT_TRUE(copy_beneath(t.from_fd.get(), t.to_fd.get(), "data", adopt));
  EXPECT_EQ(mode_of(t.to + "/tool") & 07777, 0755U);
  EXPECT_EQ(mode_of(t.to + "/data") & 07777, 0644U);
  ASSERT_TRUE(copy_beneath(t.from_fd.get(), t.to_fd.get(), "tool", {}));
  EXPECT_EQ(mode_of(t.to + "/tool") & 07777, 0755U);
}

// The data directory is often on another file system than the project
// (a tmpfs, another disk): copy_file_range answers EXDEV between file
// systems of different kinds, and the copy goes on by reading and writing.
TEST(CopyBeneath, AFileIsCopiedAcrossFileSystemsOfDifferentKinds) {
  struct statfs tmp {
  }, shm{};
  const std::string tmpdir = ::getenv("TMPDIR") != nullptr ? ::getenv("TMPDIR") : "/tmp";
  if (::statfs(tmpdir.c_str(), &tmp) != 0 || ::statfs("/dev/shm", &shm) != 0 || tmp.f_type == shm.f_type)
    GTEST_SKIP() << tmpdir << " and /dev/shm are not two file systems of different kinds here";
  test::TempDir from_dir{"chock-fs-from"};
  UniqueFd shm_dir(::open("/dev/shm", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_TRUE(shm_dir);
  char name[] = "/dev/shm/chock-fs-to-XXXXXX";
  ASSERT_NE(::mkdtemp(name), nullptr);
  UniqueFd to_fd(::open(name, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  std::string big(300000, 'x');
  test::write_file(from_dir / "data", big);
  UniqueFd from_fd(::open(from_dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  auto copied = copy_beneath(from_fd.get(), to_fd.get(), "data", {});
  EXPECT_TRUE(copied) << (copied ? "" : copied.error().message());
  EXPECT_EQ(test::read_file(std::string(name) + "/data"), big);
  ::unlink((std::string(name) + "/data").c_str());
  ::rmdir(name);
}

TEST(OpenDirBeneath, CreatesNothingThroughALink) {
  Trees t;
  ASSERT_EQ(::symlink(t.outside.c_str(), (t.to + "/docs").c_str()), 0);
  auto r = open_dir_beneath(t.to_fd.get(), "docs/new/deeper", true);
  ASSERT_FALSE(r);
  EXPECT_FALSE(test::exists(t.outside + "/new"));
  auto up = open_dir_beneath(t.to_fd.get(), "../outside", true);
  ASSERT_FALSE(up);
  EXPECT_EQ(up.error().code, EXDEV) << up.error().message();
}

TEST(RemoveTree, NeitherUnlinksNorChmodsThroughALink) {
  Trees t;
  ASSERT_EQ(::chmod(t.outside.c_str(), 0500), 0);
  ::mkdir((t.to + "/sub").c_str(), 0500);
  ASSERT_EQ(::symlink(t.outside.c_str(), (t.to + "/sub/dir-link").c_str()), 0);
  ASSERT_EQ(::symlink((t.outside + "/x").c_str(), (t.to + "/file-link").c_str()), 0);
  ASSERT_TRUE(remove_tree(t.to));
  EXPECT_FALSE(test::exists(t.to));
  EXPECT_EQ(mode_of(t.outside) & 07777, 0500U);
  ::chmod(t.outside.c_str(), 0755);
  EXPECT_EQ(t.outside_bytes(), "outside\n");
}

// What a call may leave in its layer (`mkdir -p a/b/c; chmod 0 a/b/c a/b a`):
// directories nested at mode 0, a file below them. Their owner (not root,
// which reads them anyway) removes them, as a session's removal does.
TEST(RemoveTree, TakesApartDirectoriesNestedAtModeZeroAsTheirOwner) {
  test::TempDir dir{"chock-fs"};
  const std::string top = dir / "upper";
  ASSERT_EQ(::mkdir(top.c_str(), 0700), 0);
  std::string deepest = top;
  for (const char* name : {"a", "b", "c"}) {
    deepest += std::string("/") + name;
    ASSERT_EQ(::mkdir(deepest.c_str(), 0700), 0);
  }
  test::write_file(deepest + "/left", "bytes\n", 0);
  const bool root = test::running_as_root();
  if (root) {
    ASSERT_TRUE(chown_tree(dir.path(), 65534, 65534));
  }
  for (std::string d = deepest; d != top; d = d.substr(0, d.rfind('/'))) ASSERT_EQ(::chmod(d.c_str(), 0), 0);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (root && (::setresgid(65534, 65534, 65534) != 0 || ::setresuid(65534, 65534, 65534) != 0)) ::_exit(2);
    ::_exit(remove_tree(top) ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
  EXPECT_FALSE(test::exists(top));
}

TEST(ChownTree, ChangesTheLinkNotItsTarget) {
  if (!test::running_as_root()) GTEST_SKIP() << "chown to another uid needs root";
  Trees t;
  ASSERT_EQ(::symlink(t.outside.c_str(), (t.to + "/dir-link").c_str()), 0);
  ASSERT_EQ(::symlink((t.outside + "/x").c_str(), (t.to + "/file-link").c_str()), 0);
  ASSERT_TRUE(chown_tree(t.to, 65534, 65534));
  struct stat st {};
  ASSERT_EQ(::lstat((t.to + "/file-link").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 65534U);
  ASSERT_EQ(::stat((t.outside + "/x").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 0U);
  ASSERT_EQ(::stat(t.outside.c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 0U);
}

}  // namespace
}  // namespace chock::fs
