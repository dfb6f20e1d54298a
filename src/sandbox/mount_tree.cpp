#include "sandbox/mount_tree.hpp"

#include <fcntl.h>
#include <limits.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "sandbox/etc_overlay.hpp"
#include "util/syscalls.hpp"

namespace chock::sandbox {

const char* const kMaskedProcEntries[20] = {
    "cmdline",  "version",     "kallsyms",    "config.gz",  "kcore",         "modules",    "iomem",
    "ioports",  "mtrr",        "sched_debug", "timer_list", "latency_stats", "interrupts", "schedstat",
    "slabinfo", "vmallocinfo", "keys",        "key-users",  "sysrq-trigger", "kmsg"};

const char kDenyNotice[] = "chock: this file is denied by the project. Its bytes are not in this sandbox.\n";

namespace {

// The lower layers ("a:b:c", top first) one by one ("lowerdir+", Linux 6.8):
// fsconfig takes at most 255 bytes a value, less than a few layers' paths.
// Before 6.8 (EINVAL for the key), the list whole. System calls only.
bool set_lower_layers(int fs, const char* list) noexcept {
  char layer[PATH_MAX];
  bool first = true;
  for (const char* p = list;;) {
    const char* colon = std::strchr(p, ':');
    const std::size_t n = colon != nullptr ? static_cast<std::size_t>(colon - p) : std::strlen(p);
    if (n >= sizeof layer) {
      errno = ENAMETOOLONG;
      return false;
    }
    std::memcpy(layer, p, n);
    layer[n] = '\0';
    if (sys::fsconfig(fs, FSCONFIG_SET_STRING, "lowerdir+", layer, 0) != 0) {
      if (first && errno == EINVAL) return sys::fsconfig(fs, FSCONFIG_SET_STRING, "lowerdir", list, 0) == 0;
      return false;
    }
    first = false;
    if (colon == nullptr) return true;
    p = colon + 1;
  }
}

}  // namespace

// A detached overlayfs mount, or -1 with errno. System calls only.
int make_overlay(const MountOp& op, int top_lower_fd) noexcept {
  int fs = sys::fsopen("overlay", FSOPEN_CLOEXEC);
  if (fs < 0) return -1;
  // A top layer given by descriptor (an idmapped clone, reachable by no path)
  // stands for the first of the list; the layers below go by name.
  const char* names = op.source.c_str();
  bool layers = true;
  if (top_lower_fd >= 0) {
    layers = sys::fsconfig(fs, FSCONFIG_SET_FD, "lowerdir+", nullptr, top_lower_fd) == 0;
    const char* colon = std::strchr(names, ':');
    names = colon != nullptr ? colon + 1 : nullptr;
  }
  bool ok = layers && (names == nullptr || set_lower_layers(fs, names)) &&
            sys::fsconfig(fs, FSCONFIG_SET_STRING, "upperdir", op.upper.c_str(), 0) == 0 &&
            sys::fsconfig(fs, FSCONFIG_SET_STRING, "workdir", op.work.c_str(), 0) == 0 &&
            sys::fsconfig(fs, FSCONFIG_SET_FLAG, "userxattr", nullptr, 0) == 0 &&
            sys::fsconfig(fs, FSCONFIG_CMD_CREATE, nullptr, nullptr, 0) == 0;
  int mnt = ok ? sys::fsmount(fs, FSMOUNT_CLOEXEC, static_cast<unsigned>(op.attrs)) : -1;
  int err = errno;
  close(fs);
  errno = err;
  return mnt;
}

// ---- after the fork: system calls only ---------------------------------------
//
// The new root, /proc and /dev are file systems the program itself made a
// moment ago, so what Chock puts in them is made and reached by name,
// relative to the new root (the working directory until pivot_root), in one
// call each. A caller's path may cross a directory bound from the host, where
// a link could be waiting: it is walked without following any.

namespace {

constexpr const char* kEmptyFile = ".chock-empty";
constexpr const char* kNoticeFile = ".chock-notice";

bool fail(StepFailure* failure, Step step, int detail) noexcept {
  *failure = {step, errno, detail};
  return false;
}

void close_keeping_errno(int fd) noexcept {
  int err = errno;
  close(fd);
  errno = err;
}

unsigned long ms_flags(std::uint64_t attrs) noexcept {
  unsigned long flags = 0;
  if ((attrs & MOUNT_ATTR_RDONLY) != 0) flags |= MS_RDONLY;
  if ((attrs & MOUNT_ATTR_NOSUID) != 0) flags |= MS_NOSUID;
  if ((attrs & MOUNT_ATTR_NODEV) != 0) flags |= MS_NODEV;
  if ((attrs & MOUNT_ATTR_NOEXEC) != 0) flags |= MS_NOEXEC;
  return flags;
}

// One path beneath `dir`, never following a link.
int open_beneath(int dir, const char* name, bool directory) noexcept {
  // No O_NOFOLLOW: with RESOLVE_NO_SYMLINKS a link in the last place is ELOOP too.
  return sys::openat2(dir, name, O_PATH | O_CLOEXEC | (directory ? O_DIRECTORY : 0), 0,
                      kResolveSafe | RESOLVE_BENEATH);
}

// "a/b/c": "a/b" into `parent`, and "c" returned. A path with no slash is
// returned as it is (its parent is the root). nullptr (ENAMETOOLONG) when the
// parent does not fit.
const char* split_parent(const char* rel, char (&parent)[PATH_MAX]) noexcept {
  const char* slash = std::strrchr(rel, '/');
  if (slash == nullptr) return rel;
  auto n = static_cast<size_t>(slash - rel);
  if (n >= sizeof parent) {
    errno = ENAMETOOLONG;
    return nullptr;
  }
  std::memcpy(parent, rel, n);
  parent[n] = '\0';
  return slash + 1;
}

bool make_node(int dir, const char* name, bool file) noexcept {
  int rc = file ? mknodat(dir, name, S_IFREG | 0444, 0) : mkdirat(dir, name, 0755);
  return rc == 0 || errno == EEXIST;
}

// Finds (and with `create`, makes) `rel` beneath the new root a component at
// a time, each opened relative to its parent, and opens it O_PATH: a link met
// on the way (the toolchain's own, or one inside a bind) is an error, never a
// way out.
int walk_target(int root, const char* rel, bool file, bool create) noexcept {
  char buf[PATH_MAX];
  size_t len = std::strlen(rel);
  if (len == 0 || len >= sizeof buf) {
    errno = ENAMETOOLONG;
    return -1;
  }
  std::memcpy(buf, rel, len + 1);
  int dir = open_beneath(root, ".", true);
  if (dir < 0) return -1;
  char* part = buf;
  for (;;) {
    char* slash = std::strchr(part, '/');
    bool last = slash == nullptr;
    if (!last) *slash = '\0';
    int fd = open_beneath(dir, part, !(last && file));
    if (fd < 0 && errno == ENOENT && create) {
      make_node(dir, part, last && file);
      fd = open_beneath(dir, part, !(last && file));
    }
    close_keeping_errno(dir);
    if (fd < 0) return -1;
    if (last) return fd;
    dir = fd;
    part = slash + 1;
  }
}

// The mount point of a caller's path, opened O_PATH and made if missing: one
// link-free lookup when it exists, else its parent's, else the walk.
int caller_target(int root, const char* rel, bool file) noexcept {
  int fd = open_beneath(root, rel, !file);
  if (fd >= 0 || errno != ENOENT) return fd;
  char parent_path[PATH_MAX];
  const char* leaf = split_parent(rel, parent_path);
  if (leaf == nullptr) return -1;
  if (leaf == rel) return walk_target(root, rel, file, true);
  int parent = open_beneath(root, parent_path, true);
  if (parent < 0 && errno == ENOENT) parent = walk_target(root, parent_path, false, true);
  if (parent < 0) return -1;
  make_node(parent, leaf, file);
  fd = open_beneath(parent, leaf, !file);
  close_keeping_errno(parent);
  return fd;
}

bool attach(int source, int root, const MountOp& op) noexcept {
  if (op.ours) {
    return make_node(AT_FDCWD, op.target.c_str(), op.file) &&
           sys::move_mount(source, "", AT_FDCWD, op.target.c_str(), MOVE_MOUNT_F_EMPTY_PATH) == 0;
  }
  int target = caller_target(root, op.target.c_str(), op.file);
  if (target < 0) return false;
  int rc = sys::move_mount(source, "", target, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH);
  close_keeping_errno(target);
  return rc == 0;
}

// tmpfs, devpts, proc: a new file system of ours, in one mount(2).
bool mount_new(const char* type, const MountOp& op) noexcept {
  // Its parents (var/ of var/tmp) are directories of the new root, made here.
  char parent[PATH_MAX];
  const char* target = op.target.c_str();
  for (const char* slash = std::strchr(target, '/'); slash != nullptr; slash = std::strchr(slash + 1, '/')) {
    auto n = static_cast<size_t>(slash - target);
    if (n >= sizeof parent) {
      errno = ENAMETOOLONG;
      return false;
    }
    std::memcpy(parent, target, n);
    parent[n] = '\0';
    if (!make_node(AT_FDCWD, parent, false)) return false;
  }
  return make_node(AT_FDCWD, op.target.c_str(), false) &&
         mount(type, op.target.c_str(), type, ms_flags(op.attrs),
               op.fs_options.empty() ? nullptr : op.fs_options.c_str()) == 0;
}

// A bind of the root's empty (or notice) file over `target`, read-only.
bool cover_with(int root, const char* file, int target_dir, const char* name) noexcept {
  int target = sys::openat2(target_dir, name, O_PATH | O_CLOEXEC, 0, kResolveSafe | RESOLVE_BENEATH);
  if (target < 0) return false;
  int clone = sys::open_tree(root, file, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
  bool ok = clone >= 0 &&
            sys::mount_setattr(clone, "", AT_EMPTY_PATH,
                               MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC,
                               0) == 0 &&
            sys::move_mount(clone, "", target, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) == 0;
  if (clone >= 0) close_keeping_errno(clone);
  close_keeping_errno(target);
  return ok;
}

// A fresh procfs, each masked entry under a bind of the empty file (one
// mount(2) each, by name: the entries are the kernel's own), then all of it
// read-only at once.
bool mount_proc(const MountOp& op) noexcept {
  if (!mount_new("proc", op)) return false;
  char path[64];
  const size_t prefix = op.target.size();
  if (prefix + 2 + 16 > sizeof path) {
    errno = ENAMETOOLONG;
    return false;
  }
  std::memcpy(path, op.target.c_str(), prefix);
  path[prefix] = '/';
  for (const char* entry : kMaskedProcEntries) {
    size_t len = std::strlen(entry);
    std::memcpy(path + prefix + 1, entry, len + 1);
    if (mount(kEmptyFile, path, nullptr, MS_BIND, nullptr) != 0 && errno != ENOENT) return false;
  }
  return sys::mount_setattr(AT_FDCWD, op.target.c_str(), AT_RECURSIVE,
                            MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC,
                            0) == 0;
}

bool write_notice(int root) noexcept {
  int fd = openat(root, kNoticeFile, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0444);
  if (fd < 0) return false;
  ssize_t want = static_cast<ssize_t>(sizeof kDenyNotice - 1);
  bool ok = write(fd, kDenyNotice, sizeof kDenyNotice - 1) == want;
  close(fd);
  return ok;
}

bool cover(const MountOp& op, int root) noexcept {
  char parent[PATH_MAX];
  const char* leaf = split_parent(op.target.c_str(), parent);
  if (leaf == nullptr) return false;
  int dir = root;
  if (leaf != op.target.c_str()) {
    // Walked link-free, and never created: what is not there needs no cover.
    dir = walk_target(root, parent, false, false);
    if (dir < 0) return errno == ENOENT;
  }
  bool ok = cover_with(root, kNoticeFile, dir, leaf);
  if (dir != root) close_keeping_errno(dir);
  return ok || errno == ENOENT;  // nothing there to cover
}

// A file of Chock's own, written where the plan puts it: before any mount,
// so its directories are the new root's and it is a file of that tmpfs, made
// read-only with it.
bool write_file_inside(const MountOp& op, int root) noexcept {
  char parent[PATH_MAX];
  const char* leaf = split_parent(op.target.c_str(), parent);
  if (leaf == nullptr) return false;
  int dir = leaf != op.target.c_str() ? walk_target(root, parent, false, true) : root;
  if (dir < 0) return false;
  const bool ok = write_new_file(dir, leaf, op.bytes, 0444);
  if (dir != root) close_keeping_errno(dir);
  return ok;
}

bool run_op(MountOp& op, int root) noexcept {
  switch (op.kind) {
    case MountOp::Kind::bind:
    case MountOp::Kind::overlay:
    case MountOp::Kind::etc_overlay: {
      bool ok = attach(op.source_fd, root, op);
      close_keeping_errno(op.source_fd);
      op.source_fd = -1;
      return ok;
    }
    case MountOp::Kind::etc_tree: {
      bool ok = make_etc_tree(op, op.source_fd);
      close_keeping_errno(op.source_fd);
      op.source_fd = -1;
      return ok;
    }
    case MountOp::Kind::symlink:  // only Chock's own: the toolchain's and /dev's
      return symlinkat(op.source.c_str(), AT_FDCWD, op.target.c_str()) == 0;
    case MountOp::Kind::tmpfs:
      return mount_new("tmpfs", op);
    case MountOp::Kind::devpts:
      return mount_new("devpts", op);
    case MountOp::Kind::proc:
      return mount_proc(op);
    case MountOp::Kind::seal:
      return sys::mount_setattr(AT_FDCWD, op.target.c_str(), op.recursive ? AT_RECURSIVE : 0, op.attrs, 0) ==
             0;
    case MountOp::Kind::cover:
      return cover(op, root);
    case MountOp::Kind::file:
      return write_file_inside(op, root);
  }
  errno = EINVAL;
  return false;
}

// A clone of the overlay just made, for the caller to hand to a holder
// (overlay_holder.hpp); none where this kernel will not clone a detached mount.
void offer_to_hold(const MountOp& op, int channel) noexcept {
  const int clone = sys::open_tree(op.source_fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
  if (clone < 0) return;
  Record r;
  r.kind = Record::held_overlay;
  r.detail = op.hold_index;
  send_record(channel, r, clone);
  close_keeping_errno(clone);
}

// The new root: a small tmpfs stacked on "/", entered by descriptor.
int new_root() noexcept {
  int fs = sys::fsopen("tmpfs", FSOPEN_CLOEXEC);
  if (fs < 0) return -1;
  bool ok = sys::fsconfig(fs, FSCONFIG_SET_STRING, "mode", "0755", 0) == 0 &&
            sys::fsconfig(fs, FSCONFIG_SET_STRING, "size", "8388608", 0) == 0 &&
            sys::fsconfig(fs, FSCONFIG_CMD_CREATE, nullptr, nullptr, 0) == 0;
  int root = ok ? sys::fsmount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV) : -1;
  close_keeping_errno(fs);
  if (root < 0) return -1;
  if (sys::move_mount(root, "", AT_FDCWD, "/", MOVE_MOUNT_F_EMPTY_PATH) != 0 || fchdir(root) != 0) {
    close_keeping_errno(root);
    return -1;
  }
  return root;
}

}  // namespace

bool write_new_file(int dir, const char* name, std::string_view bytes, mode_t mode) noexcept {
  int fd = openat(dir, name, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0) return false;
  const char* at = bytes.data();
  for (std::size_t left = bytes.size(); left > 0;) {
    ssize_t n = write(fd, at, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = EIO;
      close_keeping_errno(fd);
      return false;
    }
    at += n;
    left -= static_cast<std::size_t>(n);
  }
  return close(fd) == 0;
}

bool build_mount_tree(MountPlan& plan, int channel, StepFailure* failure) noexcept {
  // Nothing we mount may propagate back to the host.
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
    return fail(failure, Step::mount_private, -1);

  // Every source is opened before the new root hides the host's paths.
  for (size_t i = 0; i < plan.ops.size(); ++i) {
    MountOp& op = plan.ops[i];
    if (op.kind == MountOp::Kind::etc_overlay || op.kind == MountOp::Kind::etc_tree) {
      op.source_fd = op.kind == MountOp::Kind::etc_overlay ? make_etc_overlay(op) : open_host_etc();
      if (op.source_fd < 0) return fail(failure, Step::mount_tree, static_cast<int>(i));
      continue;
    }
    if (op.kind != MountOp::Kind::bind && op.kind != MountOp::Kind::overlay) continue;
    if (op.detached) {
      op.source_fd = op.detached.release();
      continue;
    }
    if (op.kind == MountOp::Kind::overlay) {
      op.source_fd = make_overlay(op, -1);
      if (op.source_fd < 0) return fail(failure, Step::mount_tree, static_cast<int>(i));
      if (op.hold_index >= 0) offer_to_hold(op, channel);
      continue;
    }
    int path = sys::openat2(AT_FDCWD, op.source.c_str(), O_PATH | O_CLOEXEC, 0, kResolveSafe);
    if (path < 0) return fail(failure, Step::open_source, static_cast<int>(i));
    unsigned flags = OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | (op.file ? 0 : AT_RECURSIVE);
    op.source_fd = sys::open_tree(path, "", flags);
    close_keeping_errno(path);
    if (op.source_fd < 0) return fail(failure, Step::open_source, static_cast<int>(i));
    if (op.attrs != 0 &&
        sys::mount_setattr(op.source_fd, "", AT_EMPTY_PATH | (op.file ? 0 : AT_RECURSIVE), op.attrs, 0) != 0)
      return fail(failure, Step::open_source, static_cast<int>(i));
  }

  int root = new_root();
  if (root < 0) return fail(failure, Step::new_root, -1);
  if (mknodat(root, kEmptyFile, S_IFREG | 0444, 0) != 0) return fail(failure, Step::new_root, -1);
  if (plan.has_covers && !write_notice(root)) return fail(failure, Step::cover, -1);

  for (size_t i = 0; i < plan.ops.size(); ++i) {
    if (!run_op(plan.ops[i], root)) return fail(failure, plan.ops[i].step, static_cast<int>(i));
  }
  // The binds hold their own references; the names go.
  unlinkat(root, kEmptyFile, 0);
  if (plan.has_covers) unlinkat(root, kNoticeFile, 0);

  if (sys::pivot_root(".", ".") != 0) return fail(failure, Step::pivot_root, -1);
  if (umount2(".", MNT_DETACH) != 0) return fail(failure, Step::pivot_root, -1);
  if (chdir("/") != 0) return fail(failure, Step::pivot_root, -1);
  if (sys::mount_setattr(root, "", AT_EMPTY_PATH, MOUNT_ATTR_RDONLY, 0) != 0)
    return fail(failure, Step::root_readonly, -1);
  close(root);
  return true;
}

}  // namespace chock::sandbox
