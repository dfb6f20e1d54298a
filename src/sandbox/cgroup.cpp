#include "sandbox/cgroup.hpp"

#include "sandbox/rlimits.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <thread>

namespace chock::cgroup {

namespace {

// Whole small file (procfs, cgroupfs), or nullopt with errno set.
std::optional<std::string> read_small(int dirfd, const char* name) {
  UniqueFd fd(::openat(dirfd, name, O_RDONLY | O_CLOEXEC));
  if (!fd) return std::nullopt;
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::nullopt;
    if (n == 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

std::optional<std::string> read_path(const std::string& path) {
  return read_small(AT_FDCWD, path.c_str());
}

// 0, or the errno of a one-shot write (cgroupfs takes a value per write).
int write_small(int dirfd, const char* name, const std::string& value) {
  UniqueFd fd(::openat(dirfd, name, O_WRONLY | O_CLOEXEC));
  if (!fd) return errno;
  ssize_t n = ::write(fd.get(), value.data(), value.size());
  if (n < 0) return errno;
  return n == static_cast<ssize_t>(value.size()) ? 0 : EIO;
}

// mountinfo escapes space, tab, newline and backslash as \ooo.
std::string unescape(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size()) {
      int v = (s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0');
      out.push_back(static_cast<char>(v));
      i += 3;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

std::string unsupported_errno(const std::string& what, int code) {
  return what + ": " + errno_name(code);
}

std::atomic<unsigned> g_counter{0};

// How old an empty cgroup of a dead chock must be before another removes it:
// a live chock's cgroup is empty only from its mkdir to its clone, and from
// the call's end to its rmdir, each well under this.
constexpr int kLeftoverSeconds = 5;

// The pid in "chock-<pid>-<n>", or 0 for any other name.
pid_t leftover_pid(const char* name) {
  const char* p = name;
  if (std::strncmp(p, "chock-", 6) != 0) return 0;
  char* end = nullptr;
  const long pid = std::strtol(p + 6, &end, 10);
  if (end == p + 6 || *end != '-' || pid <= 0) return 0;
  const char* n = end + 1;
  if (*n == '\0' || std::strspn(n, "0123456789") != std::strlen(n)) return 0;
  return static_cast<pid_t>(pid);
}

// A chock killed with SIGKILL during a call cannot remove its cgroup (every
// process in it dies with it): the next call made below the same parent
// removes each chock-<pid>-<n> whose pid is gone and that has been there a
// while. rmdir itself refuses a cgroup that still holds a process.
void remove_leftovers(int parent) {
  const int fd = ::openat(parent, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  DIR* dir = ::fdopendir(fd);
  if (dir == nullptr) {
    ::close(fd);
    return;
  }
  const pid_t self = ::getpid();
  const time_t now = ::time(nullptr);
  while (const dirent* e = ::readdir(dir)) {
    const pid_t pid = leftover_pid(e->d_name);
    if (pid == 0 || pid == self || ::kill(pid, 0) == 0 || errno != ESRCH) continue;
    struct stat st {};
    if (::fstatat(parent, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode) ||
        now - st.st_mtime < kLeftoverSeconds)
      continue;
    (void)::unlinkat(parent, e->d_name, AT_REMOVEDIR);
  }
  ::closedir(dir);
}

// The first of `points` that is a cgroup2 mount and holds the directory of
// cgroup `own`, taken as a mount of the whole hierarchy (root "/"): statfs
// and stat where mountinfo is a file the kernel writes out line by line. A
// mount of a subtree (a container's) seldom holds `own` and falls through.
std::optional<Mount> usual_cgroup2_mount(const std::vector<std::string>& points, const std::string& own) {
  for (const auto& point : points) {
    struct statfs fs {};
    struct stat dir {};
    if (::statfs(point.c_str(), &fs) != 0 || fs.f_type != CGROUP2_SUPER_MAGIC) continue;
    if (::stat((point + own).c_str(), &dir) == 0 && S_ISDIR(dir.st_mode)) return Mount{point, "/"};
  }
  return std::nullopt;
}

bool kernel_has_clone_into_cgroup() {
  utsname u{};
  unsigned major = 0;
  unsigned minor = 0;
  if (::uname(&u) != 0 || std::sscanf(u.release, "%u.%u", &major, &minor) != 2) return true;
  return major > 5 || (major == 5 && minor >= 7);
}

}  // namespace

std::optional<Mount> find_cgroup2_mount(std::string_view mountinfo) {
  while (!mountinfo.empty()) {
    std::size_t eol = mountinfo.find('\n');
    std::string_view line = mountinfo.substr(0, eol);
    mountinfo = eol == std::string_view::npos ? std::string_view{} : mountinfo.substr(eol + 1);
    // id parent maj:min root point options [optional...] - fstype source super
    std::size_t sep = line.find(" - ");
    if (sep == std::string_view::npos) continue;
    std::string_view tail = line.substr(sep + 3);
    if (tail.substr(0, tail.find(' ')) != "cgroup2") continue;
    std::string_view head = line.substr(0, sep);
    std::string_view fields[5];
    std::size_t pos = 0;
    bool ok = true;
    for (auto& f : fields) {
      if (pos > head.size()) {
        ok = false;
        break;
      }
      std::size_t sp = head.find(' ', pos);
      f = head.substr(pos, sp == std::string_view::npos ? std::string_view::npos : sp - pos);
      pos = sp == std::string_view::npos ? head.size() + 1 : sp + 1;
    }
    if (!ok || fields[4].empty()) continue;
    return Mount{unescape(fields[4]), unescape(fields[3])};
  }
  return std::nullopt;
}

std::optional<std::string> unified_path(std::string_view self_cgroup) {
  while (!self_cgroup.empty()) {
    std::size_t eol = self_cgroup.find('\n');
    std::string_view line = self_cgroup.substr(0, eol);
    self_cgroup = eol == std::string_view::npos ? std::string_view{} : self_cgroup.substr(eol + 1);
    if (line.substr(0, 3) == "0::" && line.size() > 3 && line[3] == '/') return std::string(line.substr(3));
  }
  return std::nullopt;
}

bool lists_memory_and_pids(std::string_view controllers) {
  bool memory = false;
  bool pids = false;
  std::size_t pos = 0;
  while (pos < controllers.size()) {
    std::size_t end = controllers.find_first_of(" \n", pos);
    std::string_view word =
        controllers.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos);
    memory = memory || word == "memory";
    pids = pids || word == "pids";
    if (end == std::string_view::npos) break;
    pos = end + 1;
  }
  return memory && pids;
}

std::uint64_t event_count(std::string_view text, std::string_view key) {
  while (!text.empty()) {
    std::size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view{} : text.substr(eol + 1);
    if (line.size() > key.size() && line.substr(0, key.size()) == key && line[key.size()] == ' ')
      return std::strtoull(std::string(line.substr(key.size() + 1)).c_str(), nullptr, 10);
  }
  return 0;
}

Managed::Managed(Managed&& other) noexcept
    : state_(other.state_),
      reason_(std::move(other.reason_)),
      path_(std::move(other.path_)),
      parent_(std::move(other.parent_)),
      name_(std::move(other.name_)),
      dir_(std::move(other.dir_)),
      memory_max_(other.memory_max_),
      pids_max_(other.pids_max_) {
  other.name_.clear();
}

Managed& Managed::operator=(Managed&& other) noexcept {
  if (this != &other) {
    teardown();
    state_ = other.state_;
    reason_ = std::move(other.reason_);
    path_ = std::move(other.path_);
    parent_ = std::move(other.parent_);
    name_ = std::move(other.name_);
    other.name_.clear();
    dir_ = std::move(other.dir_);
    memory_max_ = other.memory_max_;
    pids_max_ = other.pids_max_;
  }
  return *this;
}

Managed::~Managed() {
  teardown();
}

Managed Managed::create(const Limits& limits, const Sources& sources) {
  Managed m;
  m.state_ = CgroupState::unsupported;
  auto self = read_path(sources.self_cgroup);
  auto own = self ? unified_path(*self) : std::nullopt;
  auto mount = own ? usual_cgroup2_mount(sources.usual_points, *own) : std::nullopt;
  if (!mount) {
    auto mountinfo = read_path(sources.mountinfo);
    mount = mountinfo ? find_cgroup2_mount(*mountinfo) : std::nullopt;
  }
  if (!mount) {
    m.reason_ = "no cgroup2 mount";
    return m;
  }
  if (!own) {
    m.reason_ = "not in the unified hierarchy: " + sources.self_cgroup + " has no 0:: line";
    return m;
  }
  const std::string& root = mount->root;
  std::string rel;
  if (root == "/") {
    rel = *own == "/" ? std::string{} : *own;
  } else if (own->compare(0, root.size(), root) == 0 &&
             (own->size() == root.size() || (*own)[root.size()] == '/')) {
    rel = own->substr(root.size());
  } else {
    m.reason_ =
        "not in the unified hierarchy: cgroup " + *own + " is outside the cgroup2 mount at " + mount->point;
    return m;
  }

  // Walk up from the caller's own cgroup to the mount's root.
  std::string found;
  for (std::string dir = rel;; dir = dir.substr(0, dir.rfind('/'))) {
    std::string abs = mount->point + dir;
    auto sc = read_path(abs + "/cgroup.subtree_control");
    if (sc && lists_memory_and_pids(*sc)) {
      found = abs;
      break;
    }
    if (dir.empty()) break;
  }
  if (found.empty()) {
    auto top = read_path(mount->point + "/cgroup.controllers");
    if (top && !lists_memory_and_pids(*top))
      m.reason_ = "no delegated ancestor: the cgroup2 hierarchy at " + mount->point +
                  " has no memory and pids controllers (held by cgroup v1)";
    else
      m.reason_ = "no delegated ancestor: no cgroup from " + mount->point + rel + " up to " + mount->point +
                  " enables memory and pids in cgroup.subtree_control";
    return m;
  }
  // clone3(CLONE_INTO_CGROUP) needs write access to cgroup.procs of the
  // common ancestor of where we are and where the child goes: `found` itself.
  if (::access((found + "/cgroup.procs").c_str(), W_OK) != 0) {
    m.reason_ =
        unsupported_errno("create refused: cannot place processes below " + found + " (cgroup.procs)", errno);
    return m;
  }
  UniqueFd parent(::open(found.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!parent) {
    m.reason_ = unsupported_errno("create refused: open " + found, errno);
    return m;
  }
  remove_leftovers(parent.get());
  std::string name;
  for (int attempt = 0;; ++attempt) {
    name = "chock-" + std::to_string(::getpid()) + "-" + std::to_string(g_counter.fetch_add(1));
    if (::mkdirat(parent.get(), name.c_str(), 0755) == 0) break;
    if (errno != EEXIST || attempt > 16) {
      std::string what = "create refused: mkdir " + found;
      what += "/";
      what += name;
      m.reason_ = unsupported_errno(what, errno);
      return m;
    }
  }
  m.parent_ = std::move(parent);
  m.name_ = name;
  m.path_ = found + "/" + name;
  m.dir_ = UniqueFd(::openat(m.parent_.get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!m.dir_) {
    m.reason_ = unsupported_errno("create refused: open " + m.path_, errno);
    m.teardown();
    return m;
  }
  m.memory_max_ = limits.memory_bytes.value_or(Limits::kDefaultMemoryBytes);
  m.pids_max_ = limits.processes.value_or(Limits::kDefaultProcesses) + rlimits::kOwnTasks;
  struct Write {
    const char* file;
    std::string value;
    bool optional;  // memory.swap.max is absent when the kernel does not account swap
  };
  const Write writes[] = {{"memory.max", std::to_string(m.memory_max_), false},
                          {"memory.swap.max", "0", true},
                          {"pids.max", std::to_string(m.pids_max_), false}};
  for (const auto& w : writes) {
    int err = write_small(m.dir_.get(), w.file, w.value);
    if (err == ENOENT && w.optional) continue;
    if (err != 0) {
      m.reason_ = unsupported_errno("write refused: " + m.path_ + "/" + w.file, err);
      m.teardown();
      m.dir_.reset();
      return m;
    }
  }
  m.state_ = CgroupState::ok;
  m.reason_.clear();
  return m;
}

Events Managed::read_events() const {
  Events e;
  if (!dir_) return e;
  if (auto mem = read_small(dir_.get(), "memory.events")) {
    e.memory_max = event_count(*mem, "max");
    e.oom_kill = event_count(*mem, "oom_kill");
  }
  if (auto pids = read_small(dir_.get(), "pids.events")) e.pids_max = event_count(*pids, "max");
  return e;
}

void Managed::kill() noexcept {
  if (!dir_) return;
  // cgroup.kill (5.14+) takes the whole subtree at once; before it, kill
  // each member until none is left.
  if (write_small(dir_.get(), "cgroup.kill", "1") != 0) {
    for (int round = 0; round < 100; ++round) {
      auto procs = read_small(dir_.get(), "cgroup.procs");
      if (!procs || procs->empty()) break;
      for (std::size_t pos = 0; pos < procs->size();) {
        std::size_t eol = procs->find('\n', pos);
        pid_t pid = static_cast<pid_t>(std::strtol(procs->c_str() + pos, nullptr, 10));
        if (pid > 0) ::kill(pid, SIGKILL);
        if (eol == std::string::npos) break;
        pos = eol + 1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
}

void Managed::teardown() noexcept {
  if (name_.empty() || !parent_) return;
  if (dir_) {
    kill();
    // The killed tasks leave asynchronously; cgroup.events says when the
    // cgroup is empty (a change there wakes poll with POLLPRI).
    UniqueFd events(::openat(dir_.get(), "cgroup.events", O_RDONLY | O_CLOEXEC));
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (events && std::chrono::steady_clock::now() < deadline) {
      char buf[256];
      ssize_t n = ::pread(events.get(), buf, sizeof buf - 1, 0);
      if (n <= 0) break;
      if (event_count(std::string_view(buf, static_cast<std::size_t>(n)), "populated") == 0) break;
      pollfd p{events.get(), POLLPRI, 0};
      ::poll(&p, 1, 100);
    }
  }
  dir_.reset();
  for (int attempt = 0; attempt < 50; ++attempt) {
    if (::unlinkat(parent_.get(), name_.c_str(), AT_REMOVEDIR) == 0 || errno != EBUSY) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  name_.clear();
  parent_.reset();
}

void Managed::placement_failed(int code) {
  teardown();
  state_ = CgroupState::unsupported;
  reason_ = unsupported_errno("create refused: clone3 into " + path_, code);
}

void Managed::fill(LimitsReport& report) const {
  report.cgroup = state_;
  report.cgroup_reason = reason_;
  if (state_ != CgroupState::ok) return;
  report.memory_max = memory_max_;
  report.pids_max = pids_max_;
  Events e = read_events();
  report.memory_oom_kills = e.oom_kill;
  report.memory_max_events = e.memory_max;
  report.pids_max_events = e.pids_max;
}

Expected<void> check_supplied(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    return Error{"supplied cgroup", "descriptor " + std::to_string(fd), errno,
                 Errc::cgroup_placement_refused};
  if (!S_ISDIR(st.st_mode))
    return Error{"supplied cgroup is not a directory", "descriptor " + std::to_string(fd), ENOTDIR,
                 Errc::cgroup_placement_refused};
  struct statfs fs {};
  if (::fstatfs(fd, &fs) != 0)
    return Error{"supplied cgroup", "descriptor " + std::to_string(fd), errno,
                 Errc::cgroup_placement_refused};
  if (fs.f_type != CGROUP2_SUPER_MAGIC)
    return Error{"supplied cgroup is not on a cgroup v2 file system", "descriptor " + std::to_string(fd), 0,
                 Errc::cgroup_placement_refused};
  if (!kernel_has_clone_into_cgroup())
    return Error{
        "supplied cgroup: CLONE_INTO_CGROUP needs Linux 5.7", {}, ENOSYS, Errc::cgroup_placement_unsupported};
  return {};
}

Error placement_error(int code) {
  if (code == ENOSYS)
    return Error{
        "supplied cgroup: clone3 is not available (an old kernel, or a seccomp filter answering ENOSYS)",
        {},
        code,
        Errc::cgroup_placement_unsupported};
  return Error{"supplied cgroup: the kernel refused to create the process in it",
               {},
               code,
               Errc::cgroup_placement_refused};
}

}  // namespace chock::cgroup
