#include "workspace/refs_stamp.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <ctime>

#include "util/fd.hpp"
#include "util/syscalls.hpp"

namespace chock::workspace::refs_stamp {

namespace {

constexpr int kMaxDepth = 16;
constexpr std::size_t kMaxEntries = 100000;

long long ns_of(const struct timespec& t) {
  return static_cast<long long>(t.tv_sec) * 1'000'000'000LL + t.tv_nsec;
}

struct Walk {
  std::string text;
  long long newest = 0;
  std::size_t entries = 0;
  bool vouched = true;

  void add(const std::string& rel, const struct stat& st) {
    char line[160];
    std::snprintf(line, sizeof line, " %o %llu %lld %lld\n", static_cast<unsigned>(st.st_mode),
                  static_cast<unsigned long long>(st.st_ino), static_cast<long long>(st.st_size),
                  ns_of(st.st_ctim));
    text += rel;
    text += line;
    newest = std::max(newest, std::max(ns_of(st.st_ctim), ns_of(st.st_mtim)));
  }
};

// A loose ref whose bytes start "ref:" points elsewhere: its value moves with a file not stamped.
bool is_symbolic(int dir_fd, const char* name) {
  UniqueFd fd(::openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  char head[4] = {};
  return !fd || ::read(fd.get(), head, sizeof head) != static_cast<ssize_t>(sizeof head) ||
         std::string_view(head, 4) == "ref:";
}

void walk(int dir_fd, const std::string& rel, int depth, Walk& w) {
  DIR* dir = ::fdopendir(dir_fd);
  if (dir == nullptr) {
    ::close(dir_fd);
    w.vouched = false;
    return;
  }
  while (w.vouched) {
    dirent* e = ::readdir(dir);
    if (e == nullptr) break;
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    struct stat st {};
    if (++w.entries > kMaxEntries || depth > kMaxDepth ||
        ::fstatat(::dirfd(dir), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
      w.vouched = false;
      break;
    }
    std::string path = rel;
    path += '/';
    path += name;
    w.add(path, st);
    if (S_ISDIR(st.st_mode)) {
      const int sub = ::openat(::dirfd(dir), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (sub < 0) {
        w.vouched = false;
        break;
      }
      walk(sub, path, depth + 1, w);
    } else if (!S_ISREG(st.st_mode) || is_symbolic(::dirfd(dir), e->d_name)) {
      w.vouched = false;  // git reads what a link names; a symbolic ref is read elsewhere
    }
  }
  ::closedir(dir);
}

}  // namespace

std::string take(const std::string& common_dir) {
  struct timespec now {};
  ::clock_gettime(CLOCK_REALTIME, &now);
  UniqueFd common(::open(common_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!common) return {};
  Walk w;
  struct stat st {};
  if (::fstatat(common.get(), "reftable", &st, AT_SYMLINK_NOFOLLOW) == 0) return {};
  if (::fstatat(common.get(), "packed-refs", &st, AT_SYMLINK_NOFOLLOW) == 0) {
    if (!S_ISREG(st.st_mode)) return {};
    w.add("packed-refs", st);
  } else {
    w.text += "packed-refs -\n";
  }
  for (const char* d : {"refs", "refs/heads", "refs/tags"}) {
    if (::fstatat(common.get(), d, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode)) return {};
    w.add(d, st);
  }
  for (const char* d : {"refs/heads", "refs/tags"}) {
    const int fd = ::openat(common.get(), d, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return {};
    walk(fd, d, 1, w);
    if (!w.vouched) return {};
  }
  if (w.newest + kRacyNs > ns_of(now)) return {};
  return w.text;
}

std::string take_paths(const std::string& root, const std::vector<std::string>& rels) {
  struct timespec now {};
  ::clock_gettime(CLOCK_REALTIME, &now);
  Walk w;
  w.text = root + "\n";
  UniqueFd dir(::open(root.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  struct stat st {};
  if (!dir || ::fstat(dir.get(), &st) != 0) return {};
  w.add(".", st);
  // Beneath the root only, no link followed on the way: a call that made a
  // directory here a link sees that link stamped, never what it names. Each
  // directory on the way is opened once; each entry is one fstatat in it.
  constexpr std::uint64_t kResolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  std::string open_name;
  UniqueFd sub;
  int sub_errno = 0;
  for (const auto& rel : rels) {
    const auto slash = rel.rfind('/');
    int at = dir.get();
    if (slash != std::string::npos) {
      if (rel.compare(0, slash, open_name) != 0 || open_name.size() != slash) {
        open_name = rel.substr(0, slash);
        sub.reset(sys::openat2(dir.get(), open_name.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0,
                               kResolve));
        sub_errno = sub ? 0 : errno;
      }
      at = sub.get();
    }
    const char* name = slash == std::string::npos ? rel.c_str() : rel.c_str() + slash + 1;
    if (at >= 0 && ::fstatat(at, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
      w.add(rel, st);
    } else {
      w.text += rel + " - " + std::to_string(at >= 0 ? errno : sub_errno) + "\n";
    }
  }
  if (w.newest + kRacyNs > ns_of(now)) return {};
  return w.text;
}

}  // namespace chock::workspace::refs_stamp
