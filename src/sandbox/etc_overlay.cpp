#include "sandbox/etc_overlay.hpp"

#include <fcntl.h>
#include <linux/mount.h>
#include <unistd.h>

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

MountOp plan_etc_overlay() {
  MountOp op;
  op.kind = MountOp::Kind::etc_overlay;
  op.target = "etc";
  op.label = "/etc (the filtered call's resolver files over the host's)";
  op.ours = true;
  op.attrs = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
  op.source = std::string("# Written by Chock: the filtered call's own resolver.\nnameserver ") +
              net::kStubAddressText + "\noptions edns0 timeout:2 attempts:2\n";
  return op;
}

int make_etc_overlay(const MountOp& op) noexcept {
  int fs = sys::fsopen("tmpfs", FSOPEN_CLOEXEC);
  if (fs < 0) return -1;
  bool ok = sys::fsconfig(fs, FSCONFIG_SET_STRING, "mode", "0755", 0) == 0 &&
            sys::fsconfig(fs, FSCONFIG_SET_STRING, "size", "65536", 0) == 0 &&
            sys::fsconfig(fs, FSCONFIG_CMD_CREATE, nullptr, nullptr, 0) == 0;
  int layer = ok ? sys::fsmount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV) : -1;
  int err = errno;
  close(fs);
  errno = err;
  if (layer < 0) return -1;
  ok = write_new_file(layer, "resolv.conf", op.source, 0644) &&
       write_new_file(layer, "hosts", kHosts, 0644) &&
       write_new_file(layer, "nsswitch.conf", kNsswitch, 0644);
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

}  // namespace chock::sandbox
