#include "sandbox/etc_overlay.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>
#include <cstring>
#include <fstream>
#include <sstream>

#include "net/filtered.hpp"
#include "util/syscalls.hpp"

namespace chock::sandbox {

namespace {

// glibc reads hosts from files, then DNS; nothing else (no nscd, no mdns,
// no systemd-resolved), so every lookup reaches the stub or /etc/hosts.
constexpr const char kNsswitch[] =
    "# Written by Chock for a filtered call.\n"
    "passwd: files\ngroup: files\nshadow: files\nhosts: files dns\nnetworks: files\n"
    "protocols: files\nservices: files\nethers: files\nrpc: files\n";
constexpr const char kHosts[] =
    "# Written by Chock for a filtered call.\n127.0.0.1 localhost\n::1 localhost ip6-localhost "
    "ip6-loopback\n";

constexpr const char* kOurs[] = {"resolv.conf", "hosts", "nsswitch.conf"};

// mountinfo escapes a space, tab, newline and backslash as \ooo.
std::string unescaped(const std::string& field) {
  const auto octal = [&](std::size_t k) { return k < field.size() && field[k] >= '0' && field[k] <= '7'; };
  std::string out;
  for (std::size_t i = 0; i < field.size(); ++i) {
    if (field[i] == '\\' && octal(i + 1) && octal(i + 2) && octal(i + 3)) {
      out += static_cast<char>((field[i + 1] - '0') * 64 + (field[i + 2] - '0') * 8 + (field[i + 3] - '0'));
      i += 3;
    } else {
      out += field[i];
    }
  }
  return out;
}

// A new tmpfs of `bytes` bytes, detached, or -1 with errno.
int small_tmpfs(const char* bytes) noexcept {
  int fs = sys::fsopen("tmpfs", FSOPEN_CLOEXEC);
  if (fs < 0) return -1;
  bool ok = sys::fsconfig(fs, FSCONFIG_SET_STRING, "mode", "0755", 0) == 0 &&
            sys::fsconfig(fs, FSCONFIG_SET_STRING, "size", bytes, 0) == 0 &&
            sys::fsconfig(fs, FSCONFIG_CMD_CREATE, nullptr, nullptr, 0) == 0;
  int layer = ok ? sys::fsmount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV) : -1;
  int err = errno;
  close(fs);
  errno = err;
  return layer;
}

bool write_ours(int dir, const MountOp& op) noexcept {
  return write_new_file(dir, "resolv.conf", op.source, 0644) && write_new_file(dir, "hosts", kHosts, 0644) &&
         write_new_file(dir, "nsswitch.conf", kNsswitch, 0644);
}

bool is_ours(const char* name) noexcept {
  for (const char* ours : kOurs)
    if (std::strcmp(name, ours) == 0) return true;
  return false;
}

// One entry of the host's /etc into Chock's: a link made again, anything
// else cloned (a directory with the mounts below it) and bound, read-only.
bool place_entry(int host_etc, int etc, const char* name, unsigned char type, std::uint64_t attrs) noexcept {
  if (type == DT_UNKNOWN) {
    struct stat st {};
    if (fstatat(host_etc, name, &st, AT_SYMLINK_NOFOLLOW) != 0) return false;
    type = S_ISLNK(st.st_mode) ? DT_LNK : S_ISDIR(st.st_mode) ? DT_DIR : DT_REG;
  }
  if (type == DT_LNK) {
    char target[PATH_MAX];
    const ssize_t n = readlinkat(host_etc, name, target, sizeof target - 1);
    if (n < 0) return false;
    target[n] = '\0';
    return symlinkat(target, etc, name) == 0;
  }
  const bool dir = type == DT_DIR;
  const int clone = sys::open_tree(
      host_etc, name, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_SYMLINK_NOFOLLOW | (dir ? AT_RECURSIVE : 0));
  if (clone < 0) return false;
  const bool ok = sys::mount_setattr(clone, "", AT_EMPTY_PATH | (dir ? AT_RECURSIVE : 0), attrs, 0) == 0 &&
                  (dir ? mkdirat(etc, name, 0755) : mknodat(etc, name, S_IFREG | 0444, 0)) == 0 &&
                  sys::move_mount(clone, "", etc, name, MOVE_MOUNT_F_EMPTY_PATH) == 0;
  int err = errno;
  close(clone);
  errno = err;
  return ok;
}

// "/proc/self/fd/<fd>:/etc" into `out`, without formatting functions.
void lower_dirs(int fd, char* out, size_t size) noexcept {
  char digits[12];
  int n = 0;
  do {
    digits[n++] = static_cast<char>('0' + fd % 10);
    fd /= 10;
  } while (fd > 0 && n < 11);
  const char head[] = "/proc/self/fd/";
  const char tail[] = ":/etc";
  size_t at = 0;
  for (size_t i = 0; head[i] != '\0' && at + 1 < size; ++i) out[at++] = head[i];
  while (n > 0 && at + 1 < size) out[at++] = digits[--n];
  for (size_t i = 0; tail[i] != '\0' && at + 1 < size; ++i) out[at++] = tail[i];
  out[at] = '\0';
}

}  // namespace

std::vector<std::string> mounts_below_etc() {
  std::vector<std::string> below;
  std::ifstream info("/proc/self/mountinfo");
  for (std::string line; std::getline(info, line);) {
    std::istringstream fields(line);
    std::string id, parent, device, root, point;
    if (!(fields >> id >> parent >> device >> root >> point)) continue;
    point = unescaped(point);
    if (point.starts_with("/etc/")) below.push_back(point);
  }
  return below;
}

MountOp plan_etc_overlay() {
  MountOp op;
  op.kind = MountOp::Kind::etc_overlay;
  op.target = "etc";
  op.label = "/etc (the filtered call's resolver files over the host's)";
  if (!mounts_below_etc().empty()) {
    op.kind = MountOp::Kind::etc_tree;
    op.label = "/etc (the filtered call's resolver files beside the host's entries: the host mounts in /etc)";
  }
  op.ours = true;
  op.attrs = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
  op.source = std::string("# Written by Chock: the filtered call's own resolver.\nnameserver ") +
              net::kStubAddressText + "\noptions edns0 timeout:2 attempts:2\n";
  return op;
}

int make_etc_overlay(const MountOp& op) noexcept {
  int layer = small_tmpfs("65536");
  if (layer < 0) return -1;
  bool ok = write_ours(layer, op);
  int err = 0;
  int fs = -1;
  int mnt = -1;
  if (ok) {
    char lower[64];
    lower_dirs(layer, lower, sizeof lower);
    fs = sys::fsopen("overlay", FSOPEN_CLOEXEC);
    ok = fs >= 0 && sys::fsconfig(fs, FSCONFIG_SET_STRING, "lowerdir", lower, 0) == 0 &&
         sys::fsconfig(fs, FSCONFIG_CMD_CREATE, nullptr, nullptr, 0) == 0;
    mnt = ok ? sys::fsmount(fs, FSMOUNT_CLOEXEC, static_cast<unsigned>(op.attrs)) : -1;
    err = errno;
    if (fs >= 0) close(fs);
    errno = err;
  }
  err = errno;
  close(layer);  // the overlay holds its own reference
  errno = err;
  return mnt;
}

int open_host_etc() noexcept {
  return open("/etc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

bool make_etc_tree(const MountOp& op, int host_etc) noexcept {
  // Room for the three files and the host's names, each an inode and a dentry.
  int layer = small_tmpfs("1048576");
  if (layer < 0) return false;
  bool ok = write_ours(layer, op) && (mkdirat(AT_FDCWD, op.target.c_str(), 0755) == 0 || errno == EEXIST) &&
            sys::move_mount(layer, "", AT_FDCWD, op.target.c_str(), MOVE_MOUNT_F_EMPTY_PATH) == 0;
  int err = errno;
  close(layer);
  errno = err;
  if (!ok) return false;
  const int etc = open(op.target.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (etc < 0) return false;
  alignas(8) char buf[4096];
  for (long n; ok && (n = syscall(SYS_getdents64, host_etc, buf, sizeof buf)) != 0;) {
    if (n < 0) {
      ok = false;
      break;
    }
    for (long at = 0; ok && at < n;) {
      const auto* d = reinterpret_cast<const dirent64*>(buf + at);
      at += d->d_reclen;
      if (std::strcmp(d->d_name, ".") == 0 || std::strcmp(d->d_name, "..") == 0 || is_ours(d->d_name))
        continue;
      ok = place_entry(host_etc, etc, d->d_name, d->d_type, op.attrs);
    }
  }
  ok = ok && sys::mount_setattr(etc, "", AT_EMPTY_PATH, op.attrs, 0) == 0;
  err = errno;
  close(etc);
  errno = err;
  return ok;
}

}  // namespace chock::sandbox
