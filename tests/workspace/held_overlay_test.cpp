// A session's overlay, kept mounted between its calls
// (src/sandbox/overlay_holder.hpp): the next call attaches the overlay the
// last one made instead of making its own, and the holder lets it go when
// idle, when the session is removed, when the project below a not-git
// session's changes, and for no caller but its own uid.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "support.hpp"
#include "util/fd.hpp"

namespace chock::test::ws {
namespace {

using namespace std::chrono_literals;

// What happens to the names in each of `roots` while `act` runs: "create
// work", "moved from work", ... (inotify, no recursion).
std::vector<std::string> events_in(const std::vector<std::string>& roots, const std::function<void()>& act) {
  std::vector<std::string> events;
  const UniqueFd watch(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
  for (const auto& root : roots)
    if (!watch || ::inotify_add_watch(watch.get(), root.c_str(),
                                      IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO) < 0) {
      events.emplace_back("inotify: " + root + ": " + std::strerror(errno));
      return events;
    }
  act();
  alignas(inotify_event) char buf[8192];
  for (ssize_t n; (n = ::read(watch.get(), buf, sizeof buf)) > 0;) {
    for (ssize_t at = 0; at < n;) {
      const auto* e = reinterpret_cast<const inotify_event*>(buf + at);
      const std::string what = (e->mask & IN_CREATE)       ? "create "
                               : (e->mask & IN_DELETE)     ? "delete "
                               : (e->mask & IN_MOVED_FROM) ? "moved from "
                                                           : "moved to ";
      events.push_back(what + (e->len > 0 ? std::string(e->name) : std::string()));
      at += static_cast<ssize_t>(sizeof(inotify_event) + e->len);
    }
  }
  return events;
}

// A connection to the holder's socket in `session_dir`, or none.
UniqueFd connect_holder(const std::string& session_dir) {
  const UniqueFd dir(::open(session_dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!dir) return {};
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "/proc/self/fd/%d/overlay.sock", dir.get());
  UniqueFd s(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  if (!s || ::connect(s.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) return {};
  return s;
}

// A pidfd of the process holding the session's overlay, or none. Until the
// holder listens itself, a peer's credentials name the call that started it
// (gone by now): asked again for up to 2 s.
UniqueFd holder_of(const std::string& session_dir) {
  for (int i = 0; i < 200; ++i) {
    const UniqueFd s = connect_holder(session_dir);
    ucred peer{};
    socklen_t size = sizeof peer;
    if (s && ::getsockopt(s.get(), SOL_SOCKET, SO_PEERCRED, &peer, &size) == 0) {
      UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, peer.pid, 0)));
      if (pidfd) return pidfd;
    }
    std::this_thread::sleep_for(10ms);
  }
  return {};
}

bool ended_within(int pidfd, std::chrono::milliseconds wait) {
  pollfd p{pidfd, POLLIN, 0};
  return ::poll(&p, 1, static_cast<int>(wait.count())) == 1;
}

// A kept git session whose first call wrote new.txt, its directory and its
// holder; the test is skipped where this kernel keeps no overlay (it will
// not clone a detached mount).
class HeldOverlay : public ::testing::Test {
 protected:
  virtual void init_project() { f.init_git(); }
  // The first call: new.txt written, b.txt read, c.txt looked for (the
  // overlay then knows of both).
  void SetUp() override {
    init_project();
    id = kept_session(f, "echo one > new.txt && cat b.txt >/dev/null && ! test -e c.txt");
    ASSERT_FALSE(id.empty());
    dir = f.sessions() + "/" + id;
    if (!exists(dir + "/overlay.sock"))
      GTEST_SKIP() << "no overlay held: this kernel will not clone a detached mount";
    holder = holder_of(dir);
    ASSERT_TRUE(holder) << "overlay.sock is there, and no holder answers";
  }
  Fixture f;
  std::string id;
  std::string dir;
  UniqueFd holder;  // a pidfd
};

// The same, its holder letting go after 300 ms without a call.
class HeldBriefly : public HeldOverlay {
 protected:
  void SetUp() override {
    f.set_env("CHOCK_OVERLAY_HOLD_MS", "300");
    HeldOverlay::SetUp();
  }
};

// A session of a project that is not git: its overlay's lower layer is the
// project itself, which the holder watches.
class HeldOverProject : public HeldOverlay {
 protected:
  void init_project() override {
    f.init_plain();
    // Older than the first call by more than the holder's margin for a
    // coarse clock: else it sees the project as changed since, and holds none.
    std::this_thread::sleep_for(100ms);
  }
};

void next_call_attaches_the_held_overlay(const Fixture& f, const std::string& id, const std::string& dir) {
  Output call;
  // A git session's admin dir is an overlay kept with it, by the same holder.
  std::vector<std::string> work_roots{dir + "/work"};
  if (exists(dir + "/git/admin-work")) work_roots.push_back(dir + "/git/admin-work");
  const auto events = events_in(work_roots, [&] {
    call = f.run({"--session", id},
                 "cat new.txt && echo two >> new.txt && "
                 "awk -v p=\"$PWD\" '$5 == p && / - overlay /' /proc/self/mountinfo | wc -l");
  });
  ASSERT_EQ(call.status, 0) << describe(call);
  EXPECT_EQ(call.out, "one\n1\n") << describe(call);
  // No overlay was made: overlayfs makes `work` in the work root at each mount.
  EXPECT_TRUE(events.empty()) << ::testing::PrintToString(events);
  Output next = f.run({"--session", id}, "cat new.txt");
  EXPECT_EQ(next.out, "one\ntwo\n") << describe(next);
  EXPECT_TRUE(exists(dir + "/upper/new.txt"));
}

TEST_F(HeldOverlay, ASessionsNextCallAttachesTheOverlayTheLastCallMade) {
  next_call_attaches_the_held_overlay(f, id, dir);
}

TEST_F(HeldOverProject, ASessionsNextCallAttachesTheOverlayTheLastCallMade) {
  next_call_attaches_the_held_overlay(f, id, dir);
}

// Beneath a mounted overlay a file read could still show, a file looked for
// still be missing: the holder lets go at the project's first change, and
// the next call mounts an overlay of the project as it is.
TEST_F(HeldOverProject, AChangeToTheProjectLetsItGoAndTheNextCallSeesTheProjectAsItIs) {
  write_file(f.file("a.txt"), "changed\n");
  ASSERT_EQ(::unlink(f.file("b.txt").c_str()), 0);
  write_file(f.file("c.txt"), "new\n");
  EXPECT_TRUE(ended_within(holder.get(), 2s)) << "the holder outlived a change to the project";
  Output call =
      f.run({"--session", id}, "cat a.txt; cat b.txt 2>/dev/null && echo b-is-there; cat c.txt new.txt");
  ASSERT_EQ(call.status, 0) << describe(call);
  EXPECT_EQ(call.out, "changed\nnew\none\n") << describe(call);
}

TEST_F(HeldBriefly, TheHolderLetsGoWhenIdleAndTheNextCallMakesItsOwn) {
  EXPECT_TRUE(ended_within(holder.get(), 10s)) << "the holder was still there 10 s after the last call";
  EXPECT_FALSE(exists(dir + "/overlay.sock"));
  Output call;
  const auto events = events_in({dir + "/work"}, [&] { call = f.run({"--session", id}, "cat new.txt"); });
  ASSERT_EQ(call.status, 0) << describe(call);
  EXPECT_EQ(call.out, "one\n") << describe(call);
  EXPECT_NE(std::find(events.begin(), events.end(), "create work"), events.end())
      << "the call made no overlay of its own: " << ::testing::PrintToString(events);
}

// With keeping turned off, a call lets go of an overlay kept before rather
// than mount its own beside it (two overlays over one upper layer, and the
// set-aside of a work directory the kept one still works in).
TEST_F(HeldOverlay, ACallThatKeepsNoneLetsAKeptOneGoFirst) {
  f.set_env("CHOCK_OVERLAY_HOLD_MS", "0");
  Output call;
  const auto events = events_in({dir + "/work"}, [&] {
    call = f.run({"--session", id}, "cat new.txt && echo two >> new.txt");
  });
  ASSERT_EQ(call.status, 0) << describe(call);
  EXPECT_EQ(call.out, "one\n") << describe(call);
  EXPECT_TRUE(ended_within(holder.get(), 0ms)) << "the holder outlived a call that keeps none";
  EXPECT_NE(std::find(events.begin(), events.end(), "create work"), events.end())
      << ::testing::PrintToString(events);
  EXPECT_FALSE(exists(dir + "/overlay.sock")) << "a call that keeps none started a holder";
  Output next = f.run({"--session", id}, "cat new.txt");
  EXPECT_EQ(next.out, "one\ntwo\n") << describe(next);
}

// The overlay moves into the trash with the session; the sweeper the removal
// starts lets it go (a sync the person does not wait for), then deletes.
TEST_F(HeldOverlay, RemovingTheSessionLetsItsOverlayGoBeforeItsLayersAreDeleted) {
  Output removed = f.chock({"workspace", "remove", id, "--force"});
  ASSERT_EQ(removed.status, 0) << describe(removed);
  EXPECT_TRUE(ended_within(holder.get(), 2s)) << "the holder outlived its session's removal";
}

// The notice of a file denied in a later call is written into the session's
// layer from outside: beneath a mounted overlay it could go unseen, the file
// as the last call left it still shown.
TEST_F(HeldOverlay, AFileDeniedInALaterCallIsCoveredThoughTheLastCallReadIt) {
  {
    std::ofstream secret(f.file("secret.txt"));  // the project's own, never tracked
    secret << "the project's\n";
  }
  Output wrote = f.run({"--session", id}, "echo the call\\'s > secret.txt && cat secret.txt");
  ASSERT_EQ(wrote.status, 0) << describe(wrote);
  ASSERT_EQ(wrote.out, "the call's\n") << describe(wrote);
  Output denied = f.run({"--session", id, "--deny", "secret.txt"}, "cat secret.txt");
  ASSERT_EQ(denied.status, 0) << describe(denied);
  EXPECT_NE(denied.out.find("denied by the project"), std::string::npos) << describe(denied);
  EXPECT_EQ(denied.out.find("the call's"), std::string::npos) << describe(denied);
}

// A directory carried from a later call on gets its mount point in the
// session's layer, made from outside: the overlay the last call looked in
// must not be the one this call sees it through.
TEST_F(HeldOverlay, ADirectoryCarriedInALaterCallIsThereThoughTheLastCallLookedForIt) {
  ASSERT_EQ(::mkdir(f.file("deps").c_str(), 0755), 0);  // the project's, ignored
  {
    std::ofstream ignore(f.file(".gitignore"));
    ignore << "deps/\n";
  }
  {
    std::ofstream dep(f.file("deps/d.txt"));
    dep << "a dependency\n";
  }
  Output looked = f.run({"--session", id}, "test -e deps/d.txt || echo none");
  ASSERT_EQ(looked.out, "none\n") << describe(looked);
  Output carried = f.run({"--session", id, "--carry", "deps"}, "cat deps/d.txt");
  EXPECT_EQ(carried.status, 0) << describe(carried);
  EXPECT_EQ(carried.out, "a dependency\n") << describe(carried);
}

// More directories than the holder watches (20,000): the first call's holder
// says so in the session's directory and lets go; the later calls make
// their own overlay, and start no holder to walk the project again.
TEST(HeldOverALargeProject, ALaterCallStartsNoHolderForAProjectTooLargeToWatch) {
  Fixture f;
  f.init_plain();
  for (int i = 0; i <= 20000; ++i) ASSERT_EQ(::mkdir(f.file("d" + std::to_string(i)).c_str(), 0755), 0);
  std::this_thread::sleep_for(100ms);
  const std::string id = kept_session(f);
  ASSERT_FALSE(id.empty());
  const std::string dir = f.sessions() + "/" + id;
  for (int i = 0; i < 300 && !exists(dir + "/overlay.unwatched"); ++i) std::this_thread::sleep_for(20ms);
  ASSERT_TRUE(exists(dir + "/overlay.unwatched")) << "the holder did not say the project was too large";
  for (int i = 0; i < 100 && exists(dir + "/overlay.sock"); ++i) std::this_thread::sleep_for(20ms);
  EXPECT_FALSE(exists(dir + "/overlay.sock"));
  Output call = f.run({"--session", id}, "ls -d d20000 && echo one > new.txt");
  ASSERT_EQ(call.status, 0) << describe(call);
  EXPECT_EQ(call.out, "d20000\n");
  EXPECT_FALSE(exists(dir + "/overlay.sock")) << "a later call started a holder to walk it again";
  EXPECT_TRUE(exists(dir + "/upper/new.txt"));
}

TEST(OverlayHoldSetting, AValueThatIsNotMillisecondsIsRefusedAndNamed) {
  Fixture f;
  f.init_plain();
  for (const char* bad : {"20s", "-1", " 5", "3600001", "99999999999999999999"}) {
    f.set_env("CHOCK_OVERLAY_HOLD_MS", bad);
    Output o = f.run({"--keep"}, "echo ran");
    EXPECT_EQ(o.status, 125) << bad << ": " << describe(o);
    EXPECT_EQ(o.out, "") << bad;
    EXPECT_NE(
        o.err.find(std::string("CHOCK_OVERLAY_HOLD_MS=") + bad + " in chock's environment: not milliseconds"),
        std::string::npos)
        << describe(o);
  }
  f.set_env("CHOCK_OVERLAY_HOLD_MS", "3600000");
  Output o = f.run({}, "echo ran");
  EXPECT_EQ(o.out, "ran\n") << describe(o);
}

TEST_F(HeldOverlay, TheHolderAnswersNoOtherUser) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root: the request comes from another uid";
  // Reachable by another uid only by a test's doing: the directories are 0700.
  for (std::string at = dir; at.size() > 1; at = at.substr(0, at.rfind('/'))) {
    struct stat st {};
    ASSERT_EQ(::stat(at.c_str(), &st), 0) << at;
    ASSERT_EQ(::chmod(at.c_str(), st.st_mode | 0011), 0) << at;
  }
  ASSERT_EQ(::chmod((dir + "/overlay.sock").c_str(), 0777), 0);
  // uid 61000 asks it to let go, and for a clone under any key.
  const std::string ask =
      "import os,socket,sys\n"
      "d=os.open(sys.argv[1], os.O_PATH|os.O_DIRECTORY)\n"
      "for req in (b'q', b'kx'):\n"
      "  s=socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)\n"
      "  s.connect('/proc/self/fd/%d/overlay.sock' % d)\n"
      "  try:\n"
      "    s.send(req); msg,anc,_,_=s.recvmsg(1, socket.CMSG_SPACE(4))\n"
      "    print('refused' if msg == b'' and not anc else 'answered %r %d' % (msg, len(anc)))\n"
      "  except (BrokenPipeError, ConnectionResetError):\n"
      "    print('refused')\n";
  Output other = run_process(
      {"setpriv", "--reuid=61000", "--regid=61000", "--clear-groups", "/usr/bin/python3", "-c", ask, dir});
  ASSERT_EQ(other.status, 0) << describe(other);
  EXPECT_EQ(other.out, "refused\nrefused\n") << "the holder answered uid 61000: " << describe(other);
  EXPECT_FALSE(ended_within(holder.get(), 0ms)) << "uid 61000 made the holder let go";
  Output call = f.run({"--session", id}, "cat new.txt");
  EXPECT_EQ(call.out, "one\n") << describe(call);
}

// A peer of the holder's own uid (as a call's programs are) that can reach
// its socket gets nothing without the secret the holder was given: not with
// the key its command line shows, nor with a made-up secret; the session's
// calls still attach the overlay.
TEST_F(HeldOverlay, TheHolderGivesNothingToAPeerOfItsUidWithoutTheSecret) {
  // What every uid can read of the holder: its command line, the key in hex.
  std::string cmdline;
  ucred peer{};
  socklen_t size = sizeof peer;
  {
    const UniqueFd s = connect_holder(dir);
    ASSERT_TRUE(s);
    ASSERT_EQ(::getsockopt(s.get(), SOL_SOCKET, SO_PEERCRED, &peer, &size), 0);
  }
  cmdline = read_file("/proc/" + std::to_string(peer.pid) + "/cmdline");
  std::vector<std::string> args;
  for (std::size_t at = 0; at < cmdline.size();) {
    const std::size_t end = cmdline.find('\0', at);
    args.push_back(cmdline.substr(at, end - at));
    at = end == std::string::npos ? cmdline.size() : end + 1;
  }
  ASSERT_GE(args.size(), 6U) << cmdline;
  std::string key;
  for (std::size_t i = 0; i + 1 < args[5].size(); i += 2)
    key.push_back(static_cast<char>(std::stoi(args[5].substr(i, 2), nullptr, 16)));
  for (const std::string& request :
       {"k" + key, "k" + std::string(32, '\0') + key, std::string("q"), "q" + std::string(32, 'x')}) {
    const UniqueFd s = connect_holder(dir);
    ASSERT_TRUE(s);
    const timeval t{3, 0};
    ASSERT_EQ(::setsockopt(s.get(), SOL_SOCKET, SO_RCVTIMEO, &t, sizeof t), 0);
    ASSERT_EQ(::send(s.get(), request.data(), request.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(request.size()));
    char byte = 0;
    iovec io{&byte, 1};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 4)];
    msghdr msg{};
    msg.msg_iov = &io;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    const ssize_t n = ::recvmsg(s.get(), &msg, MSG_CMSG_CLOEXEC);
    EXPECT_LE(n, 0) << "the holder answered a request without its secret (" << request.size() << " bytes)";
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); n > 0 && c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
      ADD_FAILURE() << "the holder gave descriptors to a peer without its secret";
      const std::size_t fds = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (std::size_t i = 0; i < fds; ++i) ::close(reinterpret_cast<int*>(CMSG_DATA(c))[i]);
    }
  }
  EXPECT_FALSE(ended_within(holder.get(), 0ms)) << "a peer without the secret made the holder let go";
  next_call_attaches_the_held_overlay(f, id, dir);
}

}  // namespace
}  // namespace chock::test::ws
