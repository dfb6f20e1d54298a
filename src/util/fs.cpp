#include "util/fs.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <utility>
#include <vector>

#include "util/fd.hpp"
#include "util/io.hpp"
#include "util/passwd.hpp"
#include "util/syscalls.hpp"

namespace chock::fs {

namespace {

// How many nested unreadable directories remove_tree opens up, one a pass.
constexpr int kMaxOpenUpPasses = 16;

// A number for a temporary name of this writer's own: two processes
// writing one file at once each rename a whole file.
std::uint64_t nonce() {
  std::uint64_t n = 0;
  if (::getrandom(&n, sizeof n, 0) != static_cast<ssize_t>(sizeof n))
    n = static_cast<std::uint64_t>(::getpid());
  return n;
}

// A name beside `name` for a copy written aside.
std::string aside_name(const std::string& name) {
  char suffix[24];
  std::snprintf(suffix, sizeof suffix, ".%016llx", static_cast<unsigned long long>(nonce()));
  return ".chock-copy." + name.substr(0, 200) + suffix;
}

// `length` bytes at `offset` of `in` to the same offset of `out`: by
// copy_file_range, else (between two kinds of file system, EXDEV, or one
// that does not do it, EOPNOTSUPP or EINVAL) by pread and pwrite.
Expected<void> copy_range(int in, int out, off_t offset, off_t length, const std::string& to) {
  off_t from = offset, into = offset;
  while (length > 0) {
    const ssize_t n = ::copy_file_range(in, &from, out, &into, static_cast<std::size_t>(length), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EXDEV || errno == EOPNOTSUPP || errno == EINVAL || errno == ENOSYS)) break;
    if (n < 0) return sys_error("copy", to);
    if (n == 0) return {};  // the file shrank under us: what is there is copied
    length -= n;
  }
  char buf[65536];
  while (length > 0) {
    const ssize_t n = ::pread(in, buf, static_cast<std::size_t>(std::min<off_t>(length, sizeof buf)), from);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return sys_error("copy: read for", to);
    if (n == 0) return {};
    for (ssize_t done = 0; done < n;) {
      const ssize_t w = ::pwrite(out, buf + done, static_cast<std::size_t>(n - done), into);
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) return sys_error("copy", to);
      done += w;
      into += w;
    }
    from += n;
    length -= n;
  }
  return {};
}

// The data extents of `in` below `size`, as [start, end) pairs, in order:
// where it has holes (SEEK_DATA, SEEK_HOLE). Where a file system cannot
// say, the rest of the file is one extent.
Expected<std::vector<std::pair<off_t, off_t>>> data_extents(int in, off_t size, const std::string& path) {
  std::vector<std::pair<off_t, off_t>> extents;
  for (off_t at = 0; at < size;) {
    off_t data = ::lseek(in, at, SEEK_DATA);
    if (data < 0 && errno == ENXIO) break;       // a hole to the end
    if (data < 0 && errno == EINVAL) data = at;  // a file system that cannot say: data
    if (data < 0) return sys_error("seek data", path);
    if (data >= size) break;
    off_t hole = ::lseek(in, data, SEEK_HOLE);
    if (hole < 0 && errno == EINVAL) hole = size;
    if (hole < 0) return sys_error("seek hole", path);
    hole = std::min(hole, size);
    extents.emplace_back(data, hole);
    at = hole;
  }
  return extents;
}

// A regular file's bytes with its holes kept: only the data extents are
// written, the size set last. A call's 1 GiB sparse file is its few blocks
// of data on the host too, not a gigabyte of zeros.
Expected<void> copy_bytes(int in, int out, off_t size, const std::string& to) {
  auto extents = data_extents(in, size, to);
  if (!extents) return std::move(extents).error();
  for (const auto& [start, end] : *extents)
    if (auto r = copy_range(in, out, start, end - start, to); !r) return r;
  if (::ftruncate(out, size) != 0) return sys_error("copy: set the size of", to);
  return {};
}

}  // namespace

Expected<std::uint64_t> data_bytes(int fd, const std::string& path) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return sys_error("stat", path);
  auto extents = data_extents(fd, st.st_size, path);
  if (!extents) return std::move(extents).error();
  std::uint64_t bytes = 0;
  for (const auto& [start, end] : *extents) bytes += static_cast<std::uint64_t>(end - start);
  return bytes;
}

mode_t copied_mode(mode_t mode, bool normalize) {
  if (normalize) return (mode & 0111) != 0 ? 0755 : 0644;
  return mode & 0777;
}

Expected<std::string> read_file(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return sys_error("open", path);
  return read_all(fd.get(), path, SIZE_MAX / 2);
}

Expected<std::string> read_file_nofollow(const std::string& path, std::size_t max_bytes) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  if (!fd) return sys_error("open", path);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return sys_error("stat", path);
  if (!S_ISREG(st.st_mode)) return Error{"open: not a regular file", path, EINVAL};
  return read_all(fd.get(), path, max_bytes);
}

Expected<void> write_file(const std::string& path, const std::string& content, mode_t mode) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode));
  if (!fd) return sys_error("create", path);
  return write_all(fd.get(), content, path);
}

namespace {

// Writes a temporary file of this writer's own beside `path` and renames it
// there (`replace`: over what is there; else only where nothing is, EEXIST).
Expected<void> write_and_rename(const std::string& path, const std::string& content, mode_t mode,
                                bool replace, Durable durable = Durable::yes) {
  // Two calls installing the same preload each rename a whole file.
  char suffix[40];
  std::snprintf(suffix, sizeof suffix, ".tmp.%d.%016llx", static_cast<int>(::getpid()),
                static_cast<unsigned long long>(nonce()));
  const std::string tmp = path + suffix;
  {
    UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode));
    if (!fd) return sys_error("create", tmp);
    auto written = write_all(fd.get(), content, tmp);
    if (written && durable == Durable::yes && ::fsync(fd.get()) != 0) written = sys_error("fsync", tmp);
    if (!written) {
      ::unlink(tmp.c_str());
      return written;
    }
  }
  const int rc = replace ? ::rename(tmp.c_str(), path.c_str())
                         : ::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, path.c_str(), RENAME_NOREPLACE);
  if (rc != 0) {
    auto failed = sys_error("rename", path);
    ::unlink(tmp.c_str());
    return failed;
  }
  return {};
}

}  // namespace

Expected<void> write_file_atomic(const std::string& path, const std::string& content, mode_t mode,
                                 Durable durable) {
  return write_and_rename(path, content, mode, true, durable);
}

Expected<void> write_file_if_changed(const std::string& path, const std::string& content, mode_t mode,
                                     Durable durable) {
  {
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
    struct stat st {};
    if (fd && ::fstat(fd.get(), &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 07777) == mode &&
        static_cast<std::uint64_t>(st.st_size) == content.size())
      if (auto now = read_all(fd.get(), path, content.size() + 1); now && *now == content) return {};
  }
  return write_file_atomic(path, content, mode, durable);
}

Expected<void> write_file_new(const std::string& path, const std::string& content, mode_t mode) {
  return write_and_rename(path, content, mode, false);
}

Expected<void> make_dirs(const std::string& path, mode_t mode) {
  if (path.empty() || is_dir(path)) return {};  // most calls: one lstat, no mkdir per component
  std::string sofar;
  std::size_t pos = 0;
  while (pos != std::string::npos) {
    std::size_t next = path.find('/', pos + 1);
    sofar = path.substr(0, next);
    pos = next;
    if (sofar.empty() || sofar == "/") continue;
    if (::mkdir(sofar.c_str(), mode) != 0 && errno != EEXIST) return sys_error("mkdir", sofar);
  }
  if (!is_dir(path)) return Error{"mkdir: not a directory", path, ENOTDIR};
  return {};
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

bool is_dir(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

Expected<void> remove_tree(const std::string& path) {
  if (path.empty() || path == "/") return Error{"remove: refusing", path, EINVAL};
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return errno == ENOENT ? Expected<void>{} : sys_error("stat", path);
  // Overlayfs leaves work/work at mode 0; a sandboxed call may leave
  // directories at any mode, nested. One unreadable until this pass opened
  // it up is walked by the next.
  static thread_local bool unreadable;
  for (int pass = 0; pass < kMaxOpenUpPasses; ++pass) {
    unreadable = false;
    ::nftw(
        path.c_str(),
        [](const char* p, const struct stat* s, int type, FTW*) {
          if (type == FTW_DNR) unreadable = true;
          if ((type == FTW_D || type == FTW_DNR) && (s->st_mode & 0700) != 0700)
            ::chmod(p, (s->st_mode & 07777) | 0700);
          return 0;
        },
        64, FTW_PHYS);
    if (!unreadable) break;
  }
  static thread_local int first_errno;
  static thread_local std::string failed;
  first_errno = 0;
  failed.clear();
  ::nftw(
      path.c_str(),
      [](const char* p, const struct stat*, int type, FTW*) {
        int rc = (type == FTW_DP || type == FTW_D || type == FTW_DNR) ? ::rmdir(p) : ::unlink(p);
        if (rc != 0 && first_errno == 0) {
          first_errno = errno;
          failed = p;
        }
        return 0;
      },
      64, FTW_DEPTH | FTW_PHYS);
  if (first_errno != 0) return Error{"remove", failed, first_errno};
  return {};
}

Expected<void> chown_tree(const std::string& path, uid_t uid, gid_t gid) {
  static thread_local uid_t to_uid;
  static thread_local gid_t to_gid;
  static thread_local int first_errno;
  to_uid = uid;
  to_gid = gid;
  first_errno = 0;
  ::nftw(
      path.c_str(),
      [](const char* p, const struct stat*, int, FTW*) {
        if (::lchown(p, to_uid, to_gid) != 0 && first_errno == 0) first_errno = errno;
        return 0;
      },
      64, FTW_PHYS);
  if (first_errno != 0) return Error{"chown", path, first_errno};
  return {};
}

std::uint64_t disk_usage(const std::string& path) {
  static thread_local std::uint64_t total;
  total = 0;
  ::nftw(
      path.c_str(),
      [](const char*, const struct stat* s, int, FTW*) {
        total += static_cast<std::uint64_t>(s->st_blocks) * 512U;
        return 0;
      },
      64, FTW_PHYS);
  return total;
}

std::uint64_t count_entries(const std::string& path) {
  static thread_local std::uint64_t count;
  count = 0;
  ::nftw(
      path.c_str(),
      [](const char*, const struct stat*, int, FTW*) {
        ++count;
        return 0;
      },
      64, FTW_PHYS);
  return count;
}

Expected<void> copy_entry(const std::string& from, const std::string& to) {
  struct stat st {};
  if (::lstat(from.c_str(), &st) != 0) return sys_error("stat", from);
  ::unlink(to.c_str());
  if (S_ISLNK(st.st_mode)) {
    std::vector<char> buf(static_cast<std::size_t>(st.st_size) + 1);
    ssize_t n = ::readlink(from.c_str(), buf.data(), buf.size());
    if (n < 0) return sys_error("readlink", from);
    std::string target(buf.data(), static_cast<std::size_t>(n));
    if (::symlink(target.c_str(), to.c_str()) != 0) return sys_error("symlink", to);
    return {};
  }
  if (!S_ISREG(st.st_mode)) return Error{"copy: not a regular file or symbolic link", from, EINVAL};
  UniqueFd in(::open(from.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!in) return sys_error("open", from);
  UniqueFd out(::open(to.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!out) return sys_error("create", to);
  if (auto r = copy_bytes(in.get(), out.get(), st.st_size, to); !r) return r;
  ::fchmod(out.get(), copied_mode(st.st_mode, false));
  const timespec times[2] = {st.st_atim, st.st_mtim};
  ::futimens(out.get(), times);
  return {};
}

namespace {

Expected<void> copy_dir(const std::string& from, const std::string& to, const std::string& rel,
                        const CopyHooks& hooks) {
  DIR* d = ::opendir(from.c_str());
  if (d == nullptr) return sys_error("opendir", from);
  std::vector<std::string> names;
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(std::move(name));
  }
  ::closedir(d);
  for (const auto& name : names) {
    std::string src = join(from, name);
    std::string dst = join(to, name);
    std::string sub = rel.empty() ? name : join(rel, name);
    if (hooks.skip) {
      std::string why = hooks.skip(sub);
      if (!why.empty()) {
        if (hooks.on_skip) hooks.on_skip(sub, why);
        continue;
      }
    }
    struct stat st {};
    if (::lstat(src.c_str(), &st) != 0) return sys_error("stat", src);
    if (S_ISDIR(st.st_mode)) {
      if (::mkdir(dst.c_str(), 0700) != 0 && errno != EEXIST) return sys_error("mkdir", dst);
      if (auto r = copy_dir(src, dst, sub, hooks); !r) return r;
      ::chmod(dst.c_str(), copied_mode(st.st_mode, false));
      const timespec times[2] = {st.st_atim, st.st_mtim};
      ::utimensat(AT_FDCWD, dst.c_str(), times, AT_SYMLINK_NOFOLLOW);
    } else if (S_ISREG(st.st_mode) || S_ISLNK(st.st_mode)) {
      if (auto r = copy_entry(src, dst); !r) return r;
    } else if (hooks.on_skip) {
      hooks.on_skip(sub, "not a regular file, directory or symbolic link");
    }
  }
  return {};
}

}  // namespace

Expected<void> copy_tree(const std::string& from, const std::string& to, const CopyHooks& hooks) {
  struct stat st {};
  if (::stat(from.c_str(), &st) != 0) return sys_error("stat", from);
  if (auto r = make_dirs(to, 0700); !r) return r;
  if (auto r = copy_dir(from, to, "", hooks); !r) return r;
  ::chmod(to.c_str(), copied_mode(st.st_mode, false));
  return {};
}

Expected<int> open_dir_beneath(int root_fd, const std::string& rel_dir, bool create, const Owner* owner) {
  constexpr std::uint64_t kResolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  UniqueFd cur(::fcntl(root_fd, F_DUPFD_CLOEXEC, 3));
  if (!cur) return sys_error("dup", rel_dir);
  std::size_t pos = 0;
  while (pos < rel_dir.size()) {
    std::size_t slash = rel_dir.find('/', pos);
    std::string part = rel_dir.substr(pos, slash == std::string::npos ? std::string::npos : slash - pos);
    pos = slash == std::string::npos ? rel_dir.size() : slash + 1;
    if (part.empty()) continue;
    int fd = sys::openat2(cur.get(), part.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0, kResolve);
    if (fd < 0 && errno == ENOENT && create) {
      if (::mkdirat(cur.get(), part.c_str(), 0755) != 0 && errno != EEXIST)
        return sys_error("mkdir", rel_dir);
      fd = sys::openat2(cur.get(), part.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0, kResolve);
      if (fd >= 0 && owner != nullptr && ::fchown(fd, owner->uid, owner->gid) != 0) {
        ::close(fd);
        return sys_error("chown", rel_dir);
      }
    }
    if (fd < 0) return sys_error("open directory", rel_dir);
    cur.reset(fd);
  }
  return cur.release();
}

Expected<void> unlink_beneath(int root_fd, const std::string& rel) {
  auto dir = open_dir_beneath(root_fd, parent_of(rel), false);
  if (!dir) return std::move(dir).error();
  UniqueFd parent(*dir);
  if (::unlinkat(parent.get(), base_of(rel).c_str(), 0) != 0 && errno != ENOENT)
    return sys_error("unlink", rel);
  return {};
}

Expected<void> copy_beneath(int from_root, int to_root, const std::string& rel, const CopyPolicy& policy) {
  auto from_dir = open_dir_beneath(from_root, parent_of(rel), false);
  if (!from_dir) return std::move(from_dir).error();
  UniqueFd from(*from_dir);
  std::string name = base_of(rel);
  struct stat st {};
  if (::fstatat(from.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return sys_error("stat", rel);
  if (!S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode))
    return Error{"copy: not a regular file or symbolic link", rel, EINVAL};
  auto to_dir = open_dir_beneath(to_root, parent_of(rel), true, policy.owner);
  if (!to_dir) return std::move(to_dir).error();
  UniqueFd to(*to_dir);
  if (S_ISLNK(st.st_mode)) {
    if (::unlinkat(to.get(), name.c_str(), 0) != 0 && errno != ENOENT) return sys_error("replace", rel);
    std::vector<char> buf(static_cast<std::size_t>(st.st_size) + 1);
    ssize_t n = ::readlinkat(from.get(), name.c_str(), buf.data(), buf.size());
    if (n < 0) return sys_error("readlink", rel);
    std::string target(buf.data(), static_cast<std::size_t>(n));
    if (::symlinkat(target.c_str(), to.get(), name.c_str()) != 0) return sys_error("symlink", rel);
    if (policy.owner != nullptr &&
        ::fchownat(to.get(), name.c_str(), policy.owner->uid, policy.owner->gid, AT_SYMLINK_NOFOLLOW) != 0)
      return sys_error("chown", rel);
    return {};
  }
  // O_NONBLOCK: what was a file at the stat may be a FIFO by now; fstat decides.
  UniqueFd in(::openat(from.get(), name.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  if (!in) return sys_error("open", rel);
  if (::fstat(in.get(), &st) != 0) return sys_error("stat", rel);
  if (!S_ISREG(st.st_mode)) return Error{"copy: not a regular file", rel, EINVAL};
  const std::string aside = aside_name(name);
  UniqueFd out(::openat(to.get(), aside.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!out) return sys_error("create", join(parent_of(rel), aside));
  auto written = [&]() -> Expected<void> {
    if (auto r = copy_bytes(in.get(), out.get(), st.st_size, rel); !r) return r;
    if (policy.owner != nullptr && ::fchown(out.get(), policy.owner->uid, policy.owner->gid) != 0)
      return sys_error("chown", rel);
    // After the chown, which would clear setuid anyway: the mode is ours, not the source's.
    if (::fchmod(out.get(), copied_mode(st.st_mode, policy.normalize_modes)) != 0)
      return sys_error("chmod", rel);
    const timespec times[2] = {st.st_atim, st.st_mtim};
    ::futimens(out.get(), times);
    if (::renameat(to.get(), aside.c_str(), to.get(), name.c_str()) != 0) return sys_error("replace", rel);
    return {};
  }();
  if (!written) ::unlinkat(to.get(), aside.c_str(), 0);
  return written;
}

std::string join(const std::string& dir, const std::string& name) {
  std::string out;
  out.reserve(dir.size() + 1 + name.size());
  out.append(dir).append(1, '/').append(name);
  return out;
}

std::string parent_of(const std::string& rel) {
  auto slash = rel.rfind('/');
  return slash == std::string::npos ? std::string() : rel.substr(0, slash);
}

std::string base_of(const std::string& rel) {
  auto slash = rel.rfind('/');
  return slash == std::string::npos ? rel : rel.substr(slash + 1);
}

Expected<void> give_to(uid_t owner, const std::string& path) {
  if (::geteuid() != 0 || owner == 0) return {};
  const gid_t gid = group_of(owner);
  struct stat st {};
  // Already theirs: no chown, whose new ctime the file system would journal on every call.
  if (::lstat(path.c_str(), &st) == 0 && st.st_uid == owner && st.st_gid == gid) return {};
  if (::lchown(path.c_str(), owner, gid) != 0) return sys_error("chown", path);
  return {};
}

}  // namespace chock::fs
