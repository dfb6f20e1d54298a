// What a call leaves in its workspace's files, treated as hostile by the
// host side: mode bits adopt must not carry, names that would forge lines,
// special files that would hang or feed host-side git, and links that would
// lead a host-side write, unlink or copy out of the workspace.
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>

#include "support.hpp"

namespace chock::test::ws {
namespace {

struct stat stat_of(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return st;
}

TEST(HostileFiles, AdoptNeverCreatesSetuidSetgidOrSticky) {
  Fixture f;
  f.init_plain();
  Output o = f.run({},
                   "cp /usr/bin/id idcopy && chmod 6755 idcopy && printf x > plain && chmod 4644 plain && "
                   "mkdir d && printf y > d/f && chmod 1777 d && chmod 2600 d/f && "
                   "stat -c %a idcopy plain d d/f");
  ASSERT_EQ(o.status, 0) << describe(o);
  // The call really made them: 6755 and 4644 inside (the defence is on the way out).
  ASSERT_NE(o.out.find("6755\n4644\n1777\n2600\n"), std::string::npos) << describe(o);
  std::string id = session_id(o);
  Output adopted = f.chock({"workspace", "adopt", id});
  ASSERT_EQ(adopted.status, 0) << describe(adopted);
  std::string dir = f.project() + "/.chock-adopted/" + id;
  EXPECT_EQ(stat_of(dir + "/idcopy").st_mode & 07777, 0755U);
  EXPECT_EQ(stat_of(dir + "/plain").st_mode & 07777, 0644U);
  EXPECT_EQ(stat_of(dir + "/d").st_mode & 07777, 0755U);
  EXPECT_EQ(stat_of(dir + "/d/f").st_mode & 07777, 0644U);
  for (const char* p : {"/idcopy", "/plain", "/d", "/d/f"})
    EXPECT_EQ(stat_of(dir + p).st_uid, ::getuid()) << p;
  if (!running_as_root()) return;
  EXPECT_NE(adopted.err.find("the adopted files belong to root, as the project directory"), std::string::npos)
      << describe(adopted);
  // Run as another user, the adopted program is that user, not its owner.
  Output as_other =
      run_process({"setpriv", "--reuid=61001", "--regid=61001", "--clear-groups", dir + "/idcopy", "-u"});
  EXPECT_EQ(as_other.out, "61001\n") << describe(as_other);
}

TEST(HostileFiles, AdoptListAndOutputEscapeNamesThatWouldForgeLines) {
  Fixture f;
  f.init_plain();
  Output o = f.run(
      {}, "printf x > \"$(printf 'x\\ndeleted\\tetc-passwd')\" && printf y > \"$(printf 'e\\033[2Kz\\\\')\"");
  ASSERT_EQ(o.status, 0) << describe(o);
  std::string id = session_id(o);
  Output adopted = f.chock({"workspace", "adopt", id});
  ASSERT_EQ(adopted.status, 0) << describe(adopted);
  std::string list = read_file(f.project() + "/.chock-adopted/" + id + ".txt");
  for (const std::string& text : {adopted.out, list}) {
    EXPECT_EQ(text.find("\ndeleted"), std::string::npos) << text;
    EXPECT_EQ(text.find('\x1b'), std::string::npos) << text;
    EXPECT_NE(text.find("added\tx\\ndeleted\\tetc-passwd\n"), std::string::npos) << text;
    EXPECT_NE(text.find("added\te\\x1b[2Kz\\\\\n"), std::string::npos) << text;
  }
  EXPECT_EQ(list.rfind("# chock workspace adopt " + id + ": ", 0), 0U) << list;
  // The bytes of the name are kept in the copy itself.
  EXPECT_TRUE(exists(f.project() + "/.chock-adopted/" + id + "/x\ndeleted\tetc-passwd"));
}

// A git session with one unapplied commit.
std::string session_with_a_commit(const Fixture& f, const std::string& extra = "true") {
  Output o = f.run({}, "echo more >> a.txt && git commit -qam work && " + extra);
  EXPECT_EQ(o.status, 0) << describe(o);
  return session_id(o);
}

RunOptions with_deadline() {
  RunOptions o;
  o.timeout = std::chrono::seconds(30);
  return o;
}

void expect_no_command_hangs(const Fixture& f, const std::string& good, const std::string& broken,
                             const std::string& kind) {
  SCOPED_TRACE(kind);
  auto chock_in_time = [&](const std::vector<std::string>& args) {
    RunOptions o = with_deadline();
    o.cwd = f.project();
    o.env = {{"XDG_DATA_HOME", f.data()}, {"XDG_STATE_HOME", f.state()}, {"XDG_CONFIG_HOME", f.config()}};
    Output out = test::chock(args, o);
    EXPECT_FALSE(out.timed_out) << "chock " << args.at(0) << " hung";
    return out;
  };
  Output listed = chock_in_time({"workspace", "list"});
  EXPECT_EQ(listed.status, 0) << describe(listed);
  auto at = listed.out.find("\n" + good + " ");
  ASSERT_NE(at, std::string::npos) << describe(listed);
  std::string good_line = listed.out.substr(at + 1, listed.out.find('\n', at + 1) - at - 1);
  EXPECT_NE(good_line.find(" 1 commits "), std::string::npos) << good_line;
  EXPECT_NE(listed.out.find("problem: the session's objects hold " + kind), std::string::npos)
      << describe(listed);
  EXPECT_EQ(listed.out.find('\x1b'), std::string::npos) << describe(listed);
  Output applied = chock_in_time({"apply", broken, "--yes"});
  EXPECT_NE(applied.status, 0) << describe(applied);
  EXPECT_NE(applied.err.find(kind), std::string::npos) << describe(applied);
  Output removed = chock_in_time({"workspace", "remove", broken, "--force"});
  EXPECT_NE(removed.status, 0) << describe(removed);
  EXPECT_NE(removed.err.find("delete that entry yourself"), std::string::npos) << describe(removed);
  EXPECT_TRUE(exists(f.sessions() + "/" + broken + "/session.json"));
  Output cleared = chock_in_time({"workspace", "clear", "--force"});
  EXPECT_EQ(cleared.status, 1) << describe(cleared);
  EXPECT_NE(cleared.err.find("removed session " + good), std::string::npos) << describe(cleared);
  EXPECT_TRUE(exists(f.sessions() + "/" + broken + "/session.json"));
}

// Where the session's newest commit is stored, as a loose object: the file
// host-side git opens first. It is removed, for a special file to take its place.
std::string free_head_object(const Fixture& f, const std::string& id) {
  std::string head = read_file(f.sessions() + "/" + id + "/git/admin/HEAD").substr(0, 40);
  std::string path =
      f.sessions() + "/" + id + "/git/common/objects/" + head.substr(0, 2) + "/" + head.substr(2);
  EXPECT_EQ(::unlink(path.c_str()), 0) << path;
  return path;
}

TEST(HostileFiles, AFifoInASessionsObjectsHangsNoCommand) {
  Fixture f;
  f.init_git();
  std::string good = session_with_a_commit(f);
  // The call puts a FIFO where its commit was, and one named to paint the list.
  std::string broken = session_with_a_commit(
      f,
      "h=$(git rev-parse HEAD) && d=/run/chock/git/common/objects/$(echo $h | cut -c1-2) && "
      "rm -f $d/$(echo $h | cut -c3-) && mkfifo $d/$(echo $h | cut -c3-) && "
      "mkfifo \"$d/$(printf '\\033]0;pwned\\007')\"");
  expect_no_command_hangs(f, good, broken, "a FIFO");
}

TEST(HostileFiles, ASocketInASessionsObjectsHangsNoCommand) {
  Fixture f;
  f.init_git();
  std::string good = session_with_a_commit(f);
  std::string broken = session_with_a_commit(f);
  std::string path = free_head_object(f, broken);
  // Bound at a short path (sun_path is 108 bytes), then moved into place.
  TempDir short_dir("s");
  std::string bound = short_dir / "s";
  int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  bound.copy(addr.sun_path, bound.size());
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0) << bound;
  ASSERT_EQ(::rename(bound.c_str(), path.c_str()), 0) << path;
  expect_no_command_hangs(f, good, broken, "a socket");
  ::close(fd);
}

TEST(HostileFiles, ADeviceNodeInASessionsObjectsFeedsNoCommand) {
  if (!running_as_root())
    GTEST_SKIP() << "making a device node needs CAP_MKNOD, which only a root caller has";
  Fixture f;
  f.init_git();
  std::string good = session_with_a_commit(f);
  std::string broken = session_with_a_commit(f);
  // /dev/zero's numbers where the commit was: a reader never reaches its end.
  ASSERT_EQ(::mknod(free_head_object(f, broken).c_str(), S_IFCHR | 0644, makedev(1, 5)), 0);
  expect_no_command_hangs(f, good, broken, "a device node");
}

TEST(HostileFiles, AllowDirtyNeverDeletesOrWritesThroughACommittedLink) {
  Fixture f;
  TempDir outside("chock-outside");
  write_file(outside / "x", "outside x\n");
  write_file(outside / "target", "outside target\n");
  f.init_git();
  ASSERT_EQ(::symlink(outside.path().c_str(), f.file("docs").c_str()), 0);
  ASSERT_EQ(::symlink((outside / "target").c_str(), f.file("leaf").c_str()), 0);
  ASSERT_EQ(::symlink(outside.path().c_str(), f.file("lib").c_str()), 0);
  f.commit_all("links");
  // Uncommitted: docs/x added to the index while docs is an empty directory
  // (D docs is then skipped as a directory, and AD docs/x is a deletion below
  // the tree's docs, still the committed link); leaf is now a regular file;
  // lib is now a directory with a new file.
  git_ok(f.project(), {"rm", "-q", "--cached", "docs"});
  ASSERT_EQ(::unlink(f.file("docs").c_str()), 0);
  ASSERT_EQ(::mkdir(f.file("docs").c_str(), 0755), 0);
  std::string blob = git(f.project(), {"hash-object", "-w", "--stdin"}, "new\n").out.substr(0, 40);
  git_ok(f.project(), {"update-index", "--add", "--cacheinfo", "100644," + blob + ",docs/x"});
  ASSERT_EQ(::unlink(f.file("leaf").c_str()), 0);
  write_file(f.file("leaf"), "project leaf\n");
  ASSERT_EQ(::unlink(f.file("lib").c_str()), 0);
  ::mkdir(f.file("lib").c_str(), 0755);
  write_file(f.file("lib/y"), "project y\n");
  Output o = f.run({"--allow-dirty"}, "cat leaf; ls -l docs lib 2>&1; true");
  EXPECT_EQ(o.status, 0) << describe(o);
  ASSERT_TRUE(exists(outside / "x")) << "--allow-dirty deleted a file outside the project\n" << describe(o);
  EXPECT_EQ(read_file(outside / "x"), "outside x\n");
  EXPECT_EQ(read_file(outside / "target"), "outside target\n");
  EXPECT_FALSE(exists(outside / "y"));
  EXPECT_NE(
      o.err.find("--allow-dirty skipped docs/x: delete from the workspace: open directory: docs: ELOOP"),
      std::string::npos)
      << describe(o);
  EXPECT_NE(o.out.find("project leaf\n"), std::string::npos) << describe(o);
}

TEST(HostileFiles, AdoptNeverWritesThroughALink) {
  Fixture f;
  TempDir outside("chock-outside");
  write_file(outside / "target", "outside target\n");
  f.init_plain();
  Output o = f.run({}, "ln -s " + outside.path() + "/target evil && ln -s " + outside.path() +
                           " evildir && printf call > a.txt");
  ASSERT_EQ(o.status, 0) << describe(o);
  std::string id = session_id(o);
  // A .chock-adopted that leads elsewhere is refused, and nothing is written there.
  ASSERT_EQ(::symlink(outside.path().c_str(), f.file(".chock-adopted").c_str()), 0);
  Output refused = f.chock({"workspace", "adopt", id});
  EXPECT_NE(refused.status, 0) << describe(refused);
  EXPECT_FALSE(exists(outside / id));
  ASSERT_EQ(::unlink(f.file(".chock-adopted").c_str()), 0);
  Output adopted = f.chock({"workspace", "adopt", id});
  ASSERT_EQ(adopted.status, 0) << describe(adopted);
  std::string dir = f.project() + "/.chock-adopted/" + id;
  EXPECT_TRUE(S_ISLNK(stat_of(dir + "/evil").st_mode));
  EXPECT_TRUE(S_ISLNK(stat_of(dir + "/evildir").st_mode));
  EXPECT_EQ(read_file(dir + "/a.txt"), "call");
  EXPECT_EQ(read_file(outside / "target"), "outside target\n");
}

TEST(HostileFiles, ALinkTheCallPutInItsGitDirsLeadsNoHostSideWriteAway) {
  Fixture f;
  TempDir outside("chock-outside");
  write_file(outside / "kept", "outside\n");
  f.init_git();
  Output o =
      f.run({"--keep"}, "rm -rf /run/chock/git/common/refs && ln -s " + outside.path() +
                            " /run/chock/git/common/refs && rm /run/chock/git/common/info && mkdir "
                            "/run/chock/git/common/info && ln -s " +
                            outside.path() +
                            " /run/chock/git/common/info/exclude && rm /run/chock/git/common/packed-refs && "
                            "ln -s " +
                            outside.path() + "/kept /run/chock/git/common/packed-refs");
  ASSERT_EQ(o.status, 0) << describe(o);
  Output next = f.run({"--session", session_id(o)}, "git log -1 --format=%s && git branch --list main");
  EXPECT_EQ(next.status, 0) << describe(next);
  EXPECT_NE(next.out.find("initial\n  main\n"), std::string::npos) << describe(next);
  EXPECT_EQ(read_file(outside / "kept"), "outside\n");
  EXPECT_EQ(snapshot(outside.path()).size(), 1U);
}

// The session's own refs are read by Chock on the host: a FIFO there would
// block a reader, a link would lead it away. Neither does.
TEST(HostileFiles, AFifoOrALinkAmongTheSessionsRefsIsNotReadOrFollowed) {
  Fixture f;
  TempDir outside("chock-outside");
  write_file(outside / "ref", "0123456789012345678901234567890123456789\n");
  f.init_git();
  Output o =
      f.run({"--keep"}, "mkfifo /run/chock/git/common/refs/heads/fifo && ln -s " + outside.path() +
                            "/ref /run/chock/git/common/refs/heads/link && git commit -q --allow-empty -m w");
  ASSERT_EQ(o.status, 0) << describe(o);
  // (git inside would block on the FIFO itself: the call's own doing, and only its own.)
  Output next = f.run({"--session", session_id(o)}, "true");
  EXPECT_EQ(next.status, 0) << describe(next);
  Output apply = f.chock({"apply", session_id(o), "--yes"});
  EXPECT_EQ(apply.status, 0) << describe(apply);
  EXPECT_EQ(apply.err.find("link"), std::string::npos)
      << "a linked ref was read as the session's: " << apply.err;
  EXPECT_EQ(git_ok(f.project(), {"log", "-1", "--format=%s"}), "w");
}

}  // namespace
}  // namespace chock::test::ws
