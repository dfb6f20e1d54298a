#include "sandbox/overlay_holder.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

#include "sandbox/tree_watch.hpp"
#include "util/dirs.hpp"
#include "util/fd_passing.hpp"
#include "util/hex.hpp"
#include "util/syscalls.hpp"

namespace chock::sandbox {

namespace {

// The requests: 'k', the secret and the key (a clone, if it is the key
// held), 'q' and the secret (let go). A peer that does not send the secret
// the holder was given is not answered: the socket answers only its uid,
// and a program of a call runs as that uid too.
constexpr char kTake = 'k';
constexpr char kQuit = 'q';
constexpr char kHere = 'y';  // the answer with a clone
constexpr char kGone = 'n';  // the answer once the overlay is let go
constexpr std::size_t kMaxKey = 8192;
// Made for each holder, handed to it through a pipe (never its command
// line, which every uid reads), and kept for the session's later calls in
// the session's directory, 0600, which no call sees.
constexpr std::size_t kSecretSize = 32;
constexpr const char* kSecretFile = "overlay.secret";
// Where the holder's program finds its listener, mount, lock and directory.
constexpr int kFirstKept = 1000;
constexpr int kAnswerSeconds = 3;

// "/proc/self/fd/N/overlay.sock": a Unix socket's path is 107 bytes at most,
// a data directory's can be longer.
bool socket_address(int dirfd, sockaddr_un* addr, socklen_t* len) noexcept {
  *addr = {};
  addr->sun_family = AF_UNIX;
  const int n =
      std::snprintf(addr->sun_path, sizeof addr->sun_path, "/proc/self/fd/%d/%s", dirfd, kHolderSocket);
  if (n <= 0 || static_cast<std::size_t>(n) >= sizeof addr->sun_path) return false;
  *len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + static_cast<std::size_t>(n) + 1);
  return true;
}

void answer_timeouts(int fd) noexcept {
  const timeval t{kAnswerSeconds, 0};
  (void)::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &t, sizeof t);
  (void)::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &t, sizeof t);
}

// A connection to the holder in `dirfd`, sent `request`; none where nothing
// listens (a socket left by a holder that died is removed).
UniqueFd ask(int dirfd, const char* request, std::size_t size) noexcept {
  sockaddr_un addr{};
  socklen_t len = 0;
  if (!socket_address(dirfd, &addr, &len)) return {};
  UniqueFd s(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  if (!s) return {};
  answer_timeouts(s.get());
  if (::connect(s.get(), reinterpret_cast<const sockaddr*>(&addr), len) != 0) {
    if (errno == ECONNREFUSED) (void)::unlinkat(dirfd, kHolderSocket, 0);
    return {};
  }
  if (::send(s.get(), request, size, MSG_NOSIGNAL) != static_cast<ssize_t>(size)) return {};
  return s;
}

// The answer's byte, and the descriptors it carries (`fds`, room for
// kMaxPassedFds), their count in `n`.
char read_answer(int s, int* fds, int* n) noexcept {
  *n = 0;
  char byte = 0;
  iovec io{&byte, 1};
  FdsControl control;
  msghdr msg{};
  msg.msg_iov = &io;
  msg.msg_iovlen = 1;
  expect_fds(msg, control);
  if (::recvmsg(s, &msg, MSG_CMSG_CLOEXEC) != 1) return 0;
  *n = received_fds(msg, fds);
  return byte;
}

// The request `kind`, the holder's secret and `tail`; empty where the
// session's directory has no secret (no holder was started).
std::string request_of(int dirfd, char kind, std::string_view tail) {
  const UniqueFd f(::openat(dirfd, kSecretFile, O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!f) return {};
  std::string request(1 + kSecretSize, kind);
  if (::read(f.get(), request.data() + 1, kSecretSize) != static_cast<ssize_t>(kSecretSize)) return {};
  request.append(tail);
  return request;
}

// ---- the holder: `chock-helper hold-overlay`, its descriptors
// handed over at kFirstKept -------------------------------------------------

struct Holder {
  int listener;
  int lock;
  int dir;
  const char* secret;  // kSecretSize bytes
  int first_mount;     // the mounts: first_mount, first_mount + 1, ...
  int mounts;
  const char* key;
  std::size_t key_size;
  int idle_ms;
  bool own_namespaces;  // an unprivileged caller's: clones need a mount namespace of its own
  int watch = -1;       // readable at the lower layer's first change (tree_watch.hpp); -1 none
};

bool write_proc_self(const char* name, const char* text) noexcept {
  const long fd = sys::raw(SYS_openat, AT_FDCWD, sys::arg(name), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const long n = sys::raw(SYS_write, fd, sys::arg(text), static_cast<long>(std::strlen(text)));
  sys::raw(SYS_close, fd);
  return n == static_cast<long>(std::strlen(text));
}

// A user namespace mapping this uid and gid to themselves, and a mount
// namespace it owns, where cloning a mount is allowed.
bool enter_own_namespaces() noexcept {
  const long uid = sys::raw(SYS_getuid), gid = sys::raw(SYS_getgid);
  if (sys::raw(SYS_unshare, CLONE_NEWUSER | CLONE_NEWNS) != 0) return false;
  char map[64];
  std::snprintf(map, sizeof map, "%ld %ld 1", uid, uid);
  if (!write_proc_self("/proc/self/setgroups", "deny") || !write_proc_self("/proc/self/uid_map", map))
    return false;
  std::snprintf(map, sizeof map, "%ld %ld 1", gid, gid);
  return write_proc_self("/proc/self/gid_map", map);
}

[[noreturn]] void let_go(const Holder& h, int answer_to) noexcept {
  sys::raw(SYS_unlinkat, h.dir, sys::arg(kHolderSocket), 0);
  sys::raw(SYS_unlinkat, h.dir, sys::arg(kSecretFile), 0);
  sys::raw(SYS_close, h.listener);
  // The last references: each overlay is taken down (its upper layer
  // synced) before close returns.
  sys::raw(SYS_close_range, h.first_mount, h.first_mount + h.mounts - 1, 0);
  if (answer_to >= 0) sys::raw(SYS_sendto, answer_to, sys::arg(&kGone), 1, MSG_NOSIGNAL, 0, 0);
  sys::raw(SYS_exit_group, 0);
  __builtin_unreachable();
}

// A clone of each mount, in one answer.
bool send_clones(const Holder& h, int to) noexcept {
  int clones[kMaxPassedFds];
  int made = 0;
  for (; made < h.mounts; ++made) {
    const long clone = sys::raw(SYS_open_tree, h.first_mount + made, sys::arg(""),
                                OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
    if (clone < 0) break;
    clones[made] = static_cast<int>(clone);
  }
  bool sent = false;
  if (made == h.mounts) {
    char byte = kHere;
    iovec io{&byte, 1};
    FdsControl control;
    msghdr msg{};
    msg.msg_iov = &io;
    msg.msg_iovlen = 1;
    attach_fds(msg, control, clones, made);
    sent = sys::raw(SYS_sendmsg, to, sys::arg(&msg), MSG_NOSIGNAL) == 1;
  }
  for (int i = 0; i < made; ++i) sys::raw(SYS_close, clones[i]);
  return sent;
}

// One request on `c`. Returns when it is served; let_go for the others.
void serve_one(const Holder& h, int c) noexcept {
  ucred peer{};
  socklen_t peer_size = sizeof peer;
  if (sys::raw(SYS_getsockopt, c, SOL_SOCKET, SO_PEERCRED, sys::arg(&peer), sys::arg(&peer_size)) != 0 ||
      static_cast<long>(peer.uid) != sys::raw(SYS_getuid))
    return;
  const timeval t{kAnswerSeconds, 0};
  sys::raw(SYS_setsockopt, c, SOL_SOCKET, SO_RCVTIMEO, sys::arg(&t), sizeof t);
  static char request[1 + kSecretSize + kMaxKey + 1];
  const long n = sys::raw(SYS_recvfrom, c, sys::arg(request), sizeof request, 0, 0, 0);
  if (n < static_cast<long>(1 + kSecretSize)) return;
  // Every byte compared, whatever the first that differs.
  unsigned char differs = 0;
  for (std::size_t i = 0; i < kSecretSize; ++i)
    differs |= static_cast<unsigned char>(request[1 + i] ^ h.secret[i]);
  if (differs != 0) return;
  const auto size = static_cast<std::size_t>(n) - 1 - kSecretSize;
  const char* key = request + 1 + kSecretSize;
  if (request[0] == kTake && size == h.key_size && std::memcmp(key, h.key, h.key_size) == 0 &&
      send_clones(h, c))
    return;
  // Another key (the session's layers changed), a quit, or no clone to give:
  // the overlay goes before the caller makes its own of the same upper layer.
  let_go(h, c);
}

[[noreturn]] void hold(const Holder& h) noexcept {
  sigset_t mask;
  sigfillset(&mask);
  sigdelset(&mask, SIGTERM);  // an operator's kill still ends it (the overlay goes at its exit)
  sys::raw(SYS_rt_sigprocmask, SIG_SETMASK, sys::arg(&mask), 0, sizeof(std::uint64_t));
  if (h.own_namespaces && !enter_own_namespaces()) let_go(h, -1);
  // Listening again makes this process the one a peer's SO_PEERCRED names
  // (the caller bound and listened, so that no request found nothing there).
  sys::raw(SYS_listen, h.listener, 4);
  for (;;) {
    pollfd p[2] = {{h.listener, POLLIN, 0}, {h.watch, POLLIN, 0}};
    const timespec idle{h.idle_ms / 1000, static_cast<long>(h.idle_ms % 1000) * 1'000'000L};
    const long ready = sys::raw(SYS_ppoll, sys::arg(p), h.watch >= 0 ? 2 : 1, sys::arg(&idle), 0, 0);
    // The lower layer changed: the next call makes an overlay that sees it
    // (one running now keeps its own clone until its end).
    if (ready > 0 && h.watch >= 0 && p[1].revents != 0) let_go(h, -1);
    if (ready == 0) {
      // Idle: let go once no call is between taking the mounts lock and its
      // sandbox being gone (nor the session's directory removed meanwhile).
      struct stat st {};
      const bool removed = sys::raw(SYS_newfstatat, h.dir, sys::arg(""), sys::arg(&st), AT_EMPTY_PATH) != 0 ||
                           st.st_nlink == 0;
      if (removed || sys::raw(SYS_flock, h.lock, LOCK_EX | LOCK_NB) == 0) let_go(h, -1);
      continue;
    }
    if (ready < 0) continue;
    if ((p[0].revents & (POLLERR | POLLHUP | POLLNVAL)) != 0) let_go(h, -1);
    const long c = sys::raw(SYS_accept4, h.listener, 0, 0, SOCK_CLOEXEC);
    if (c < 0) continue;
    serve_one(h, static_cast<int>(c));
    sys::raw(SYS_close, c);
  }
}

// One overlay's part of a key: its layers and work directory.
std::string hold_key(const Overlay& overlay) {
  std::string key = overlay.lower;
  for (const auto& below : overlay.lower_below) key.append(1, '\0').append(below);
  key.append(1, '\0').append(overlay.upper).append(1, '\0').append(overlay.work);
  if (const auto& s = overlay.lower_shift)
    for (const auto id : {s->uid_from, s->gid_from, s->uid_to, s->gid_to})
      key.append(1, '\0').append(std::to_string(id));
  return key;
}

}  // namespace

int overlay_holder_main(int argc, char** argv) {
  if (argc != 6 && argc != 7) return 2;
  char* end = nullptr;
  const long idle = std::strtol(argv[2], &end, 10);
  if (*end != '\0' || idle <= 0 || idle > 3'600'000) return 2;
  const long mounts = std::strtol(argv[4], &end, 10);
  if (*end != '\0' || mounts < 1 || mounts > kMaxPassedFds) return 2;
  const std::string_view hex = argv[5];
  if (hex.size() % 2 != 0 || hex.size() / 2 > kMaxKey ||
      hex.find_first_not_of("0123456789abcdef") != std::string_view::npos)
    return 2;
  static std::string key;  // the holder's one key, for as long as it runs
  key = bytes_of_hex(hex);
  // Only as hold_overlay starts it: its descriptors are there, and what they
  // should be (listener, lock, directory, the secret's pipe, then the mounts).
  const int count = 4 + static_cast<int>(mounts);
  struct stat st[4 + kMaxPassedFds] = {};
  for (int i = 0; i < count; ++i)
    if (::fstat(kFirstKept + i, &st[i]) != 0) return 2;
  if (!S_ISSOCK(st[0].st_mode) || !S_ISREG(st[1].st_mode) || !S_ISDIR(st[2].st_mode) ||
      !S_ISFIFO(st[3].st_mode))
    return 2;
  for (int i = 4; i < count; ++i)
    if (!S_ISDIR(st[i].st_mode)) return 2;
  static char secret[kSecretSize];
  if (::read(kFirstKept + 3, secret, sizeof secret) != static_cast<ssize_t>(sizeof secret)) return 2;
  ::close(kFirstKept + 3);
  Holder h{kFirstKept,
           kFirstKept + 1,
           kFirstKept + 2,
           secret,
           kFirstKept + 4,
           static_cast<int>(mounts),
           key.data(),
           key.size(),
           static_cast<int>(idle),
           std::string_view(argv[3]) == "1"};
  const int watched = kFirstKept + count;
  if (argc == 7) {
    const long long since = std::strtoll(argv[6], &end, 10);
    struct stat lower {};
    if (*end != '\0' || since <= 0 || ::fstat(watched, &lower) != 0 || !S_ISDIR(lower.st_mode)) return 2;
    // A coarse clock can date a change a tick before `since`: a margin, which
    // at worst lets go of an overlay that was fine.
    constexpr long long kClockMargin = 50'000'000;
    TreeWatch watch = watch_tree(watched, since - kClockMargin);
    ::close(watched);
    if (!watch.fd) {
      // Too large now is too large at the next call: the session's calls
      // stop starting a holder to walk it (sandbox_config.cpp reads this).
      if (watch.why == TreeWatch::Not::too_large) {
        const int marker =
            ::openat(h.dir, kUnwatchedMarker, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (marker >= 0) ::close(marker);
      }
      let_go(h, -1);
    }
    h.watch = watch.fd.release();
  }
  hold(h);
}

std::vector<UniqueFd> take_held_overlays(const std::string& dir, std::string_view key,
                                         std::size_t count) noexcept {
  try {
    if (key.size() > kMaxKey || count == 0 || count > kMaxPassedFds) return {};
    const UniqueFd d(::open(dir.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!d) return {};
    const std::string request = request_of(d.get(), kTake, key);
    if (request.empty()) return {};
    const UniqueFd s = ask(d.get(), request.data(), request.size());
    if (!s) return {};
    int fds[kMaxPassedFds];
    int n = 0;
    const char answer = read_answer(s.get(), fds, &n);
    std::vector<UniqueFd> clones;
    clones.reserve(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) clones.emplace_back(fds[i]);
    if (answer != kHere || clones.size() != count) return {};
    return clones;
  } catch (...) {  // memory for the request: none taken, the call makes its own
    return {};
  }
}

void release_held_overlay(const std::string& dir) noexcept {
  const UniqueFd d(::open(dir.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!d) return;
  std::string request;
  try {
    request = request_of(d.get(), kQuit, {});
  } catch (...) {  // memory for the request: the holder lets go when idle
    return;
  }
  if (request.empty()) return;
  const UniqueFd s = ask(d.get(), request.data(), request.size());
  if (!s) return;
  int fds[kMaxPassedFds];
  int n = 0;
  (void)read_answer(s.get(), fds, &n);  // kGone once the overlays have gone (or the wait's end)
  for (int i = 0; i < n; ++i) ::close(fds[i]);
}

std::string hold_key(const std::vector<Overlay>& overlays, const std::string& dir) {
  std::string key;
  for (const auto& o : overlays) {
    if (o.hold_dir != dir) continue;
    const std::string one = hold_key(o);
    key.append(std::to_string(one.size())).append(1, ':').append(one);
  }
  return key;
}

void PendingHolds::plan(const Config& config, MountPlan& plan, std::int64_t since_ns) {
  held_ = config.overlays_held;
  for (auto& op : plan.ops) {
    if (op.kind != MountOp::Kind::overlay || op.hold_index < 0 ||
        static_cast<std::size_t>(op.hold_index) >= config.overlays.size())
      continue;
    const Overlay& o = config.overlays[static_cast<std::size_t>(op.hold_index)];
    auto r = std::find_if(requests_.begin(), requests_.end(),
                          [&o](const Request& q) { return q.dir == o.hold_dir; });
    if (r == requests_.end()) {
      requests_.push_back({{},
                           o.hold_dir,
                           o.hold_lock,
                           hold_key(config.overlays, o.hold_dir),
                           o.hold_idle,
                           {},
                           since_ns,
                           {},
                           false,
                           false});
      r = requests_.end() - 1;
    }
    if (o.hold_watch_lower) r->watch = o.lower;
    r->indexes.push_back(op.hold_index);
    r->clones.push_back(std::move(op.hold_clone));
  }
}

void PendingHolds::offer(int overlay_index, UniqueFd clone) noexcept {
  for (auto& r : requests_)
    for (std::size_t i = 0; i < r.indexes.size(); ++i)
      if (r.indexes[i] == overlay_index && !r.clones[i] && !r.done) {
        r.clones[i] = std::move(clone);
        return;
      }
}

void PendingHolds::start_ready() noexcept {
  for (auto& r : requests_) {
    if (r.done || r.clones.empty() ||
        std::any_of(r.clones.begin(), r.clones.end(), [](const UniqueFd& c) { return !c; }))
      continue;
    r.done = true;
    try {
      UniqueFd lower;
      if (!r.watch.empty()) {
        lower.reset(::open(r.watch.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
        if (!lower) continue;  // a lower layer that cannot be watched is not held over
      }
      // In the order of Config::overlays, as the key and the next call's take have them.
      std::vector<std::size_t> order(r.indexes.size());
      for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
      std::sort(order.begin(), order.end(),
                [&r](std::size_t a, std::size_t b) { return r.indexes[a] < r.indexes[b]; });
      std::vector<UniqueFd> mounts;
      mounts.reserve(order.size());
      for (const std::size_t i : order) mounts.push_back(std::move(r.clones[i]));
      auto held = hold_overlay(r.dir, r.lock, r.key, std::move(mounts), r.idle, lower.get(), r.since_ns);
      r.held = held && *held;
    } catch (...) {  // memory for a message: nothing held, nothing lost
    }
  }
  if (!held_ || requests_.empty() ||
      !std::all_of(requests_.begin(), requests_.end(), [](const Request& q) { return q.held; }))
    return;
  auto said = std::exchange(held_, nullptr);
  try {
    said();
  } catch (...) {  // the caller's: its lock stays as it was
  }
}

Expected<bool> hold_overlay(const std::string& dir, const std::string& lock_path, std::string_view key,
                            std::vector<UniqueFd> mounts, std::chrono::milliseconds idle, int watch,
                            std::int64_t since_ns) {
  if (key.size() > kMaxKey || idle.count() <= 0 || (watch >= 0 && since_ns <= 0) || mounts.empty() ||
      mounts.size() > kMaxPassedFds)
    return false;
  const bool own_namespaces = ::geteuid() != 0;
  if (!own_namespaces) {
    // Where this kernel will not clone a detached mount, a holder has nothing to give.
    const UniqueFd probe(
        sys::open_tree(mounts.front().get(), "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH));
    if (!probe) return false;
  }
  const UniqueFd d(::open(dir.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!d) return sys_error("open the session's directory for its overlay's holder", dir);
  const UniqueFd lock(::open(lock_path.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC));
  if (!lock) return sys_error("open the mounts lock for the overlay's holder", lock_path);
  sockaddr_un addr{};
  socklen_t len = 0;
  if (!socket_address(d.get(), &addr, &len)) return false;
  const UniqueFd listener(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  if (!listener) return sys_error("make the overlay holder's socket");
  (void)::unlinkat(d.get(), kHolderSocket, 0);  // one a holder that died left
  // Bound before the holder runs: the next call's request waits in the queue.
  if (::bind(listener.get(), reinterpret_cast<const sockaddr*>(&addr), len) != 0 ||
      ::listen(listener.get(), 4) != 0)
    return sys_error("listen for the overlay's next call", dir + "/" + kHolderSocket);
  // Its own program (chock-helper, a fresh image holding nothing of this
  // call's, and never the program that embeds the sandbox), twice forked so
  // that no caller (a long-lived chock mcp) has it as a child; its
  // descriptors at kFirstKept on: the listener, the lock, the directory,
  // the secret's pipe, the mounts, the lower layer to watch.
  auto helper = companion("chock-helper");
  if (!helper) {
    (void)::unlinkat(d.get(), kHolderSocket, 0);
    return std::move(helper).error();
  }
  // Called with the mounts lock held alone: no call reads the secret while it changes.
  char secret[kSecretSize];
  int pipe[2];
  if (::getrandom(secret, sizeof secret, 0) != static_cast<ssize_t>(sizeof secret) ||
      ::pipe2(pipe, O_CLOEXEC) != 0) {
    (void)::unlinkat(d.get(), kHolderSocket, 0);
    return sys_error("make the overlay holder's secret", dir);
  }
  const UniqueFd secret_read(pipe[0]);
  {
    const UniqueFd secret_write(pipe[1]);
    (void)::unlinkat(d.get(), kSecretFile, 0);
    const UniqueFd file(
        ::openat(d.get(), kSecretFile, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!file || ::write(file.get(), secret, sizeof secret) != static_cast<ssize_t>(sizeof secret) ||
        ::write(secret_write.get(), secret, sizeof secret) != static_cast<ssize_t>(sizeof secret)) {
      (void)::unlinkat(d.get(), kHolderSocket, 0);
      return sys_error("keep the overlay holder's secret", dir + "/" + kSecretFile);
    }
  }
  std::string idle_text = std::to_string(std::min<std::chrono::milliseconds::rep>(idle.count(), 3'600'000));
  std::string hex = hex_of(key);
  std::string exe = *helper;
  char arg0[] = "chock-helper";
  char mode[] = "hold-overlay";
  char own[] = "1";
  char not_own[] = "0";
  std::string count_text = std::to_string(mounts.size());
  std::string since_text = std::to_string(since_ns);
  char* const argv[] = {arg0,
                        mode,
                        idle_text.data(),
                        own_namespaces ? own : not_own,
                        count_text.data(),
                        hex.data(),
                        watch >= 0 ? since_text.data() : nullptr,
                        nullptr};
  char* const envp[] = {nullptr};
  std::array<int, 5 + kMaxPassedFds> fds{listener.get(), lock.get(), d.get(), secret_read.get()};
  int kept = 4;
  for (const auto& m : mounts) fds[static_cast<std::size_t>(kept++)] = m.get();
  if (watch >= 0) fds[static_cast<std::size_t>(kept++)] = watch;
  const long middle = sys::raw(SYS_clone, SIGCHLD, 0, 0, 0, 0);
  if (middle < 0) {
    (void)::unlinkat(d.get(), kHolderSocket, 0);
    return sys_error("start the overlay's holder");
  }
  if (middle == 0) {
    // System calls only: the caller may have threads.
    sys::raw(SYS_setsid);
    const long holder = sys::raw(SYS_clone, SIGCHLD, 0, 0, 0, 0);
    if (holder != 0) sys::raw(SYS_exit_group, holder < 0 ? 1 : 0);
    for (int i = 0; i < kept; ++i)
      if (fds[static_cast<std::size_t>(i)] >= kFirstKept) sys::raw(SYS_exit_group, 1);
    for (int i = 0; i < kept; ++i)
      if (sys::raw(SYS_dup2, fds[static_cast<std::size_t>(i)], kFirstKept + i) != kFirstKept + i)
        sys::raw(SYS_exit_group, 1);
    sys::raw(SYS_close_range, 0, kFirstKept - 1, 0);
    sys::raw(SYS_close_range, kFirstKept + kept, ~0U, 0);
    if (sys::raw(SYS_openat, AT_FDCWD, sys::arg("/dev/null"), O_RDWR) != 0 || sys::raw(SYS_dup2, 0, 1) != 1 ||
        sys::raw(SYS_dup2, 0, 2) != 2)
      sys::raw(SYS_exit_group, 1);
    sys::raw(SYS_execve, sys::arg(exe.c_str()), sys::arg(argv), sys::arg(envp));
    sys::raw(SYS_exit_group, 1);
  }
  int status = 0;
  while (::waitpid(static_cast<pid_t>(middle), &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    (void)::unlinkat(d.get(), kHolderSocket, 0);
    return false;
  }
  return true;
}

}  // namespace chock::sandbox
