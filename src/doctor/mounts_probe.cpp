// The file systems a call's tree is made of that need more than a bind:
// rootless overlayfs (`userxattr`, the workspace of a project that is not a
// git repository) and a tmpfs with a size cap (/tmp). Each is made for real
// in a user and mount namespace of a child, as the uid a call runs as, with
// the same mount API the mount tree uses (fsopen, fsconfig, fsmount).
#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <memory>

#include "doctor/probes.hpp"
#include "sandbox/mount_tree.hpp"
#include "util/syscalls.hpp"

namespace chock::doctor {
namespace {

constexpr const char* kOverlayRow = "rootless overlayfs";
constexpr const char* kTmpfsRow = "capped tmpfs";
constexpr const char* kIdmapRow = "idmapped project";
constexpr long long kTmpfsCap = 1 << 20;
constexpr long long kTmpfsFill = 2 << 20;

// Drops to the call's uid and enters a user and mount namespace.
bool enter(const sandbox::Identity& identity, const Reporter& out) noexcept {
  sandbox::StepFailure f;
  if (!sandbox::drop_to_identity(identity, true, &f))
    return out.fail("drop to the uid a call runs as", f.error);
  if (!sandbox::enter_namespaces(identity, true, &f)) {
    const char* step =
        f.step == sandbox::Step::unshare ? "unshare(CLONE_NEWUSER|CLONE_NEWNS)" : sandbox::step_name(f.step);
    return out.fail(step, f.error);
  }
  return true;
}

bool set_string(int fs, const char* key, const char* value, const char* step, const Reporter& out) noexcept {
  if (sys::fsconfig(fs, FSCONFIG_SET_STRING, key, value, 0) != 0) return out.fail(step, errno);
  return true;
}

struct OverlayProbe {
  sandbox::Identity identity;
  std::string lower, upper, work;
  std::string lower_file;  // lower/seen: made before the mount, read through it
  std::string upper_file;  // upper/written: where the write through the mount must land
};

bool make_dirs(const OverlayProbe& p, const Reporter& out) noexcept {
  for (const std::string* dir : {&p.lower, &p.upper, &p.work})
    if (::mkdir(dir->c_str(), 0755) != 0) return out.fail("mkdir the overlay's layers", errno);
  const int fd = ::open(p.lower_file.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
  if (fd < 0) return out.fail("write a file in the lower layer", errno);
  ::close(fd);
  return true;
}

void overlay_body(const OverlayProbe& p, const Reporter& out) noexcept {
  if (!enter(p.identity, out) || !make_dirs(p, out)) return;
  const int fs = sys::fsopen("overlay", FSOPEN_CLOEXEC);
  if (fs < 0) {
    out.fail("fsopen(overlay)", errno);
    return;
  }
  if (!set_string(fs, "lowerdir", p.lower.c_str(), "fsconfig(lowerdir)", out) ||
      !set_string(fs, "upperdir", p.upper.c_str(), "fsconfig(upperdir)", out) ||
      !set_string(fs, "workdir", p.work.c_str(), "fsconfig(workdir)", out))
    return;
  if (sys::fsconfig(fs, FSCONFIG_SET_FLAG, "userxattr", nullptr, 0) != 0) {
    out.fail("fsconfig(userxattr)", errno);
    return;
  }
  if (sys::fsconfig(fs, FSCONFIG_CMD_CREATE, nullptr, nullptr, 0) != 0) {
    out.fail("fsconfig(FSCONFIG_CMD_CREATE) for overlay", errno);
    return;
  }
  const int mnt = sys::fsmount(fs, FSMOUNT_CLOEXEC, 0);
  if (mnt < 0) {
    out.fail("fsmount(overlay)", errno);
    return;
  }
  out.ok("mount overlay with userxattr");
  // The detached mount is used through its descriptor: no mount point needed.
  int fd = ::openat(mnt, "seen", O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    out.fail("read the lower layer through the overlay", errno);
    return;
  }
  ::close(fd);
  fd = ::openat(mnt, "written", O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
  if (fd < 0 || ::write(fd, "x", 1) != 1) {
    out.fail("write through the overlay", errno);
    return;
  }
  ::close(fd);
  struct stat st {};
  if (::stat(p.upper_file.c_str(), &st) != 0) {
    out.fail("find the write in the upper layer", errno);
    return;
  }
  out.ok("write through the overlay", st.st_size);
}

void tmpfs_body(const sandbox::Identity& identity, const Reporter& out) noexcept {
  if (!enter(identity, out)) return;
  const int fs = sys::fsopen("tmpfs", FSOPEN_CLOEXEC);
  if (fs < 0) {
    out.fail("fsopen(tmpfs)", errno);
    return;
  }
  if (!set_string(fs, "size", "1m", "fsconfig(size=1m)", out) ||
      !set_string(fs, "mode", "0700", "fsconfig(mode=0700)", out))
    return;
  if (sys::fsconfig(fs, FSCONFIG_CMD_CREATE, nullptr, nullptr, 0) != 0) {
    out.fail("fsconfig(FSCONFIG_CMD_CREATE) for tmpfs", errno);
    return;
  }
  const int mnt = sys::fsmount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
  if (mnt < 0) {
    out.fail("fsmount(tmpfs)", errno);
    return;
  }
  out.ok("mount tmpfs with size=1m");
  const int fd = ::openat(mnt, "fill", O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
  if (fd < 0) {
    out.fail("create a file on the tmpfs", errno);
    return;
  }
  static const char chunk[64 * 1024] = {};
  long long total = 0;
  int error = 0;
  while (total < kTmpfsFill) {
    const ssize_t n = ::write(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      error = errno;
      break;
    }
    total += n;
  }
  ::close(fd);
  if (error == 0) {
    out.fail("write 2 MiB into the 1 MiB tmpfs (expected ENOSPC)", 0, total);
  } else if (error != ENOSPC) {
    out.fail("write 2 MiB into the 1 MiB tmpfs (expected ENOSPC)", error, total);
  } else if (total > kTmpfsCap) {
    out.fail("more than 1 MiB went into the 1 MiB tmpfs", ENOSPC, total);
  } else {
    out.ok("write 2 MiB into the 1 MiB tmpfs", total);
  }
}

// The name of an entry of `dir` that `owner` owns, among its first few; empty if none.
std::string entry_owned_by(const std::string& dir, uid_t owner) {
  std::unique_ptr<DIR, int (*)(DIR*)> d(::opendir(dir.c_str()), ::closedir);
  if (!d) return {};
  for (int seen = 0; seen < 64; ++seen) {
    const dirent* e = ::readdir(d.get());
    if (e == nullptr) break;
    std::string name = e->d_name;
    struct stat st {};
    if (name != "." && name != ".." &&
        ::fstatat(::dirfd(d.get()), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_uid == owner)
      return name;
  }
  return {};
}

std::string as_whom(const Context& context) {
  return "as uid " + std::to_string(context.identity.uid);
}

}  // namespace

Row overlay_row(const Context& context, bool blocks, const std::string& why_blocks) {
  auto base = context.scratch.subdir("overlay");
  if (!base) return make_row(kOverlayRow, Level::off, blocks, base.error().message() + why_blocks);
  OverlayProbe p{context.identity, *base + "/lower",      *base + "/upper",
                 *base + "/work",  *base + "/lower/seen", *base + "/upper/written"};
  p.identity.unshare_flags = CLONE_NEWUSER | CLONE_NEWNS;
  ChildResult r = run_child([&p](const Reporter& out) noexcept { overlay_body(p, out); });
  if (!r.passed())
    return make_row(kOverlayRow, blocks ? Level::off : Level::degraded, blocks,
                    r.describe() + " (layers on " + *base + ")" + why_blocks);
  return make_row(kOverlayRow, Level::ok, blocks,
                  "mounted with userxattr in a user namespace " + as_whom(context) +
                      "; a write through it lands in the upper layer" + why_blocks);
}

Row idmap_row(const Context& context, const std::string& project, const std::string& why) {
  if (!context.root_caller)
    return make_row(
        kIdmapRow, Level::ok, false,
        "not needed: an unprivileged caller's calls run as itself, so its overlay writes over its "
        "own files");
  struct stat st {};
  if (::stat(project.c_str(), &st) != 0)
    return make_row(kIdmapRow, Level::degraded, false, sys_error("stat", project).message() + why);
  const uid_t to = context.identity.uid;
  if (st.st_uid == to && st.st_gid == context.identity.gid)
    return make_row(kIdmapRow, Level::ok, false,
                    "not needed: " + project + " already belongs to uid " + std::to_string(to) + why);
  auto base = context.scratch.subdir("idmap");
  if (!base) return make_row(kIdmapRow, Level::degraded, false, base.error().message() + why);
  for (const char* d : {"/upper", "/work"})
    if (::mkdir((*base + d).c_str(), 0755) != 0)
      return make_row(kIdmapRow, Level::degraded, false, sys_error("mkdir", *base + d).message() + why);
  const OwnerShift shift{st.st_uid, st.st_gid, to, context.identity.gid};
  auto mounted =
      sandbox::mount_overlay_now(Overlay{project, *base + "/upper", *base + "/work", project, {}, shift});
  const std::string copied = "a root caller's project is copied for each session: ";
  if (!mounted) return make_row(kIdmapRow, Level::degraded, false, copied + mounted.error().message() + why);
  // The overlay's root is the upper layer's; an entry of the project shows the mapping.
  if (const std::string name = entry_owned_by(project, st.st_uid); !name.empty()) {
    struct stat seen {};
    if (::fstatat(mounted->get(), name.c_str(), &seen, AT_SYMLINK_NOFOLLOW) != 0)
      return make_row(kIdmapRow, Level::degraded, false,
                      copied + sys_error("stat through the overlay", name).message() + why);
    if (seen.st_uid != to)
      return make_row(kIdmapRow, Level::degraded, false,
                      copied + "through the idmapped mount " + name + " showed as uid " +
                          std::to_string(seen.st_uid) + "'s, not " + std::to_string(to) + "'s" + why);
  }
  return make_row(
      kIdmapRow, Level::ok, false,
      "a root caller's project is the overlay's lower layer itself, not a copy: an idmapped mount "
      "shows " +
          project + "'s owner (uid " + std::to_string(st.st_uid) + ") as uid " + std::to_string(to) + why);
}

Row tmpfs_row(const Context& context) {
  sandbox::Identity identity = context.identity;
  identity.unshare_flags = CLONE_NEWUSER | CLONE_NEWNS;
  ChildResult r = run_child([&identity](const Reporter& out) noexcept { tmpfs_body(identity, out); });
  if (!r.passed()) {
    std::string reason = r.describe();
    if (const Note* f = r.failure(); f != nullptr && f->value > 0)
      reason += " after " + std::to_string(f->value) + " bytes";
    return make_row(kTmpfsRow, Level::off, true, reason);
  }
  return make_row(kTmpfsRow, Level::ok, true,
                  "a tmpfs mounted with size=1m " + as_whom(context) +
                      " refused a 2 MiB write with ENOSPC at " + std::to_string(r.last()->value) + " bytes");
}

}  // namespace chock::doctor
