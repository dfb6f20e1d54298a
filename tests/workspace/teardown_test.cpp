// A call's sandbox is taken down after the call has returned: its overlay's
// teardown syncs what the call wrote to the upper layer, which the caller need
// not wait for. The session's next call must not mount that upper layer while
// the old overlay still holds it, so the session's mounts lock is held until
// the last call's sandbox is gone, and every call takes it before it makes its
// own.
#include <dirent.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/file.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <thread>

#include "support.hpp"
#include "util/fd.hpp"

namespace chock::test::ws {
namespace {

using namespace std::chrono_literals;

// The mountinfo lines, of every process whose mountinfo this test may read,
// that name `dir` (an overlay's upperdir= option does).
std::string mounts_naming(const std::string& dir) {
  std::string found;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return "cannot read /proc";
  while (dirent* e = ::readdir(proc)) {
    if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
    std::ifstream in(std::string("/proc/") + e->d_name + "/mountinfo");
    for (std::string line; std::getline(in, line);)
      if (line.find(dir) != std::string::npos) found += std::string(e->d_name) + ": " + line + "\n";
  }
  ::closedir(proc);
  return found;
}

// Takes the flock on `fd` once whoever holds it lets go, within 65 s (the
// waiter's own bound is 60 s).
bool take_lock(int fd) {
  const auto until = std::chrono::steady_clock::now() + 65s;
  while (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK || std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

TEST(SessionTeardown, ACallReturnsBeforeItsOverlayIsTakenDownAndHoldsTheMountsLockUntilThen) {
  Fixture f;
  f.init_git();
  struct statfs fs {};
  ASSERT_EQ(::statfs(f.data().c_str(), &fs), 0);
  if (fs.f_type == TMPFS_MAGIC || fs.f_type == RAMFS_MAGIC)
    GTEST_SKIP() << "the data directory is on a tmpfs: an overlay there syncs nothing when taken down, too "
                    "quick a teardown to be seen";
  // An overlay made for each call, and so taken down after each (a kept one, held_overlay_test.cpp).
  f.set_env("CHOCK_OVERLAY_HOLD_MS", "0");
  const std::string id = kept_session(f);
  ASSERT_FALSE(id.empty());
  // 64 MiB the overlay's teardown syncs: some tenths of a second on a disk.
  // Unless the disk wrote them back during the call (other tests writing
  // beside this one): then the teardown is quick, so up to three calls are
  // made; a call that waited for its own teardown would never be seen holding.
  const std::string dir = f.sessions() + "/" + id;
  UniqueFd lock(::open((dir + "/mounts.lock").c_str(), O_RDWR | O_CLOEXEC));
  ASSERT_TRUE(lock) << dir << "/mounts.lock: " << std::strerror(errno);
  bool held = false;
  for (int attempt = 0; attempt < 3 && !held; ++attempt) {
    Output big = f.run({"--session", id}, "head -c 67108864 /dev/zero > big");
    ASSERT_EQ(big.status, 0) << describe(big);
    held = ::flock(lock.get(), LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
    if (!held) ::flock(lock.get(), LOCK_UN);
  }
  ASSERT_TRUE(held)
      << "the mounts lock was free when each of three calls returned: a call waited for its own "
         "teardown";
  // Let go once the sandbox is gone.
  ASSERT_TRUE(take_lock(lock.get())) << "the mounts lock was still held 65 s after the call";
  EXPECT_EQ(mounts_naming(dir + "/upper"), "") << "the lock was let go while the overlay was still there";
  lock.reset();
  Output next = f.run({"--session", id}, "wc -c < big");
  EXPECT_EQ(next.status, 0) << describe(next);
  EXPECT_EQ(next.out, "67108864\n") << describe(next);
}

TEST(SessionTeardown, TheNextCallDoesNotMountTheUpperLayerWhileTheLastCallsOverlayIsStillThere) {
  Fixture f;
  f.init_git();
  const std::string id = kept_session(f);
  ASSERT_FALSE(id.empty());
  const std::string dir = f.sessions() + "/" + id;
  // Held here, as the last call's waiter holds it while its overlay is taken down.
  UniqueFd lock(::open((dir + "/mounts.lock").c_str(), O_RDWR | O_CLOEXEC));
  ASSERT_TRUE(lock) << dir << "/mounts.lock: " << std::strerror(errno);
  ASSERT_TRUE(take_lock(lock.get())) << std::strerror(errno);
  std::atomic<bool> done{false};
  Output next;
  std::thread call([&] {
    next = f.run({"--session", id}, "echo ran > ran");
    done = true;
  });
  std::this_thread::sleep_for(500ms);
  EXPECT_FALSE(done.load()) << "the call ran while the last call's overlay was (said to be) still there";
  EXPECT_FALSE(exists(dir + "/upper/ran"));
  lock.reset();
  call.join();
  EXPECT_EQ(next.status, 0) << describe(next);
  EXPECT_TRUE(exists(dir + "/upper/ran")) << describe(next);
}

}  // namespace
}  // namespace chock::test::ws
