#include "workspace/store.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <thread>

#include <nlohmann/json.hpp>

#include "util/dirs.hpp"
#include "util/fs.hpp"
#include "workspace/session_record.hpp"

namespace chock::workspace {

Expected<std::string> data_dir() {
  return chock_dir(Xdg::data);
}

SessionLock::SessionLock(SessionLock&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
SessionLock& SessionLock::operator=(SessionLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}
SessionLock::~SessionLock() {
  if (fd_ >= 0) ::close(fd_);
}

Expected<void> save(const Session& session) {
  return fs::write_file_if_changed(session.dir + "/session.json", session_record(session).dump(2) + "\n",
                                   0600);
}

Expected<Session> load(const std::string& id) {
  if (auto v = validate_session_id(id); !v) return std::move(v).error();
  auto root = store::workspaces_dir();
  if (!root) return std::move(root).error();
  std::string dir = *root + "/" + id;
  // What to do about a session whose record is gone or damaged: nothing of
  // it is touched, so nothing in it is lost.
  auto damaged = [&](const std::string& what) {
    return Error{"session " + id + ": " + dir + "/session.json " + what +
                     "; Chock will neither run in this session nor remove it, so nothing in it is lost: its "
                     "files and commits are in " +
                     dir + " (copy out what you need, then delete that directory)",
                 "", 0};
  };
  auto text = fs::read_file_nofollow(dir + "/session.json", 1 << 20);
  if (!text) {
    if (text.error().code == ENOENT && fs::is_dir(dir)) return damaged("is missing");
    if (text.error().code == ENOENT)
      return Error{"no session '" + id + "' (chock workspace list shows the sessions)", "", 0,
                   Errc::no_such_session};
    return std::move(text).error();
  }
  auto parsed = parse_session_record(*text, id, dir);
  if (!parsed) return damaged(parsed.error().message());
  return parsed;
}

namespace {

// The lock file says who holds it, for whoever waits: "<pid> <unix seconds>",
// padded to a fixed width and written in place: truncating it first cost
// ext4 a journalled block release, some 0.7 ms of every call.
void say_holder(int fd) {
  char text[40];
  std::memset(text, ' ', sizeof text);
  int n = std::snprintf(text, sizeof text, "%d %lld", static_cast<int>(::getpid()),
                        static_cast<long long>(std::time(nullptr)));
  if (n <= 0 || n >= static_cast<int>(sizeof text)) return;
  text[n] = ' ';
  text[sizeof text - 1] = '\n';
  (void)!::pwrite(fd, text, sizeof text, 0);
}

// " (pid N, since 2026-12-04 10:30:12)", or "" when the file does not say.
std::string holder(int fd) {
  char text[64] = {};
  ssize_t n = ::pread(fd, text, sizeof text - 1, 0);
  long long pid = 0, since = 0;
  if (n <= 0 || std::sscanf(text, "%lld %lld", &pid, &since) != 2 || pid <= 0) return "";
  std::time_t t = static_cast<std::time_t>(since);
  std::tm local{};
  char when[32];
  if (::localtime_r(&t, &local) == nullptr ||
      std::strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &local) == 0)
    return " (pid " + std::to_string(pid) + ")";
  return " (pid " + std::to_string(pid) + ", since " + when + ")";
}

// One of the session's lock files (made where it is not there), open.
Expected<SessionLock> open_lock(const Session& session, const char* name) {
  const std::string path = session.dir + "/" + name;
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return sys_error("open the session's lock", path);
  return SessionLock(fd);
}

// Waits for `how` on `fd`; an Error names `path`.
Expected<void> wait_for_lock(int fd, int how, const std::string& path) {
  while (::flock(fd, how) != 0)
    if (errno != EINTR) return sys_error("lock", path);
  return {};
}

}  // namespace

Expected<SessionLock> lock(const Session& session, bool wait) {
  const std::string path = session.dir + "/lock";
  auto held = open_lock(session, "lock");
  if (!held) return held;
  const int fd = held->fd();
  if (::flock(fd, LOCK_EX | LOCK_NB) == 0) {
    say_holder(fd);
    return held;
  }
  if (errno != EWOULDBLOCK || !wait) {
    if (errno == EWOULDBLOCK)
      return Error{
          "session " + session.id + " is busy (a call, an apply or a removal is running" + holder(fd) + ")",
          "", EWOULDBLOCK};
    return sys_error("lock", path);
  }
  std::fprintf(stderr, "chock: session %s: waiting for its running calls to end\n", session.id.c_str());
  if (auto r = wait_for_lock(fd, LOCK_EX, path); !r) return std::move(r).error();
  say_holder(fd);
  return held;
}

Expected<SessionLock> lock_shared(const Session& session) {
  auto held = open_lock(session, "lock");
  if (!held) return held;
  const int fd = held->fd();
  if (::flock(fd, LOCK_SH | LOCK_NB) == 0) return held;
  if (errno != EWOULDBLOCK) return sys_error("lock", session.dir + "/lock");
  std::fprintf(stderr,
               "chock: waiting for session %s: it is held alone by an apply, an adopt or a removal%s\n",
               session.id.c_str(), holder(fd).c_str());
  if (auto r = wait_for_lock(fd, LOCK_SH, session.dir + "/lock"); !r) return std::move(r).error();
  return held;
}

Expected<SessionLock> lock_record(const Session& session) {
  auto held = open_lock(session, "record.lock");
  if (!held) return held;
  if (auto r = wait_for_lock(held->fd(), LOCK_EX, session.dir + "/record.lock"); !r)
    return std::move(r).error();
  return held;
}

Expected<MountsHold> hold_mounts_for_call(const Session& session, bool shared,
                                          std::chrono::milliseconds within) {
  const std::string path = session.dir + "/mounts.lock";
  auto opened = open_lock(session, "mounts.lock");
  if (!opened) return std::move(opened).error();
  const int fd = opened->fd();
  MountsHold hold{std::move(*opened), shared ? MountsHold::shared : MountsHold::alone};
  const int how = shared ? LOCK_SH : LOCK_EX;
  const auto until = std::chrono::steady_clock::now() + within;
  for (auto step = std::chrono::microseconds(200); ::flock(fd, how | LOCK_NB) != 0;
       step = std::min(step * 2, std::chrono::microseconds(10'000))) {
    if (errno != EWOULDBLOCK && errno != EINTR) return sys_error("lock", path);
    if (std::chrono::steady_clock::now() >= until) return MountsHold{};
    std::this_thread::sleep_for(step);
  }
  return hold;
}

void MountsHold::share() noexcept {
  if (how == alone && lock.fd() >= 0 && ::flock(lock.fd(), LOCK_SH) == 0) how = shared;
}

Expected<std::string> random_session_id() {
  // 8 characters of base-32: 40 bits.
  static constexpr char kAlphabet[] = "abcdefghijkmnpqrstuvwxyz23456789";
  unsigned char bytes[8];
  if (::getrandom(bytes, sizeof bytes, 0) != static_cast<ssize_t>(sizeof bytes))
    return sys_error("getrandom");
  std::string id;
  for (unsigned char b : bytes) id += kAlphabet[b % 32];
  if (id[0] >= '2' && id[0] <= '9') id[0] = static_cast<char>('a' + bytes[0] % 26);
  return id;
}

namespace store {

std::int64_t now() {
  return static_cast<std::int64_t>(std::time(nullptr));
}

Expected<std::string> data_subdir(const std::string& name, mode_t mode, bool make) {
  auto data = data_dir();
  if (!data) return data;
  std::string dir = *data + "/" + name;
  if (!make) return dir;
  // The data directory holds the credential store too: private.
  if (auto r = fs::make_dirs(*data, 0700); !r) return std::move(r).error();
  if (::mkdir(dir.c_str(), mode) != 0 && errno != EEXIST) return sys_error("mkdir", dir);
  return dir;
}

Expected<std::string> workspaces_dir() {
  return data_subdir("workspaces", 0700, true);
}

Expected<Session> make_session_dir(Kind kind, const std::string& project) {
  auto root = workspaces_dir();
  if (!root) return std::move(root).error();
  // mkdir refuses a collision.
  for (int attempt = 0; attempt < 16; ++attempt) {
    auto fresh = workspace::random_session_id();
    if (!fresh) return std::move(fresh).error();
    const std::string& id = *fresh;
    std::string dir = *root + "/" + id;
    if (::mkdir(dir.c_str(), 0755) != 0) {
      if (errno == EEXIST) continue;
      return sys_error("mkdir", dir);
    }
    Session s;
    s.id = id;
    s.kind = kind;
    s.project = project;
    s.dir = dir;
    s.created = now();
    return s;
  }
  return Error{"make a session id: 16 collisions in a row", *root, EEXIST};
}

Expected<std::vector<std::string>> session_ids() {
  auto root = workspaces_dir();
  if (!root) return std::move(root).error();
  DIR* d = ::opendir(root->c_str());
  if (d == nullptr) return sys_error("opendir", *root);
  std::vector<std::string> ids;
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name == "." || name == ".." || !validate_session_id(name)) continue;
    // A directory without its session.json is listed too (as damaged): it may hold work.
    if (fs::is_dir(*root + "/" + name)) ids.push_back(name);
  }
  ::closedir(d);
  std::sort(ids.begin(), ids.end());
  return ids;
}

}  // namespace store
}  // namespace chock::workspace
