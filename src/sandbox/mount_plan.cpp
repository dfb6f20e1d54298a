// The plan of a call's mount tree, made before the fork: every source
// checked (absolute, there, no link on the way), every string built, and a
// root caller's sources cloned while it can still reach them.
#include <fcntl.h>
#include <limits.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "sandbox/etc_overlay.hpp"
#include "sandbox/idmap.hpp"
#include "sandbox/mount_tree.hpp"
#include "util/store_path.hpp"
#include "util/syscalls.hpp"

namespace chock::sandbox {

namespace {

constexpr const char* kToolchain[] = {"/usr", "/bin", "/lib", "/lib64", "/sbin", "/etc"};
constexpr const char* kDeviceNodes[] = {"null", "zero", "full", "random", "urandom", "tty"};

MountOp make_op(MountOp::Kind kind, std::string target, std::string label) {
  MountOp op;
  op.kind = kind;
  op.target = std::move(target);
  op.label = std::move(label);
  return op;
}

MountOp tmpfs_op(const std::string& target, const char* mode, std::uint64_t size, std::uint64_t attrs,
                 Step step) {
  MountOp op = make_op(MountOp::Kind::tmpfs, target, "/" + target);
  op.step = step;
  op.ours = true;
  op.fs_options = std::string("mode=") + mode + ",size=" + std::to_string(size);
  op.attrs = attrs;
  op.access = Access::read_write;
  return op;
}

// Opens a source path so that no component may be a symbolic link; says
// where the link is when one is found, so the caller can name the real path.
Expected<UniqueFd> open_source(const std::string& path, const std::string& label) {
  UniqueFd fd(sys::openat2(AT_FDCWD, path.c_str(), O_PATH | O_CLOEXEC, 0, kResolveSafe));
  if (fd) return fd;
  int err = errno;
  if (err == ELOOP || err == EXDEV) {
    char real[PATH_MAX];
    std::string hint;
    if (realpath(path.c_str(), real) != nullptr) hint = std::string(" (it resolves to ") + real + ")";
    return Error{label + ": a component of the path is a symbolic link" + hint +
                     "; name the real path, a link is never followed out of the sandbox",
                 "", ELOOP, Errc::bad_config};
  }
  return Error{label, "", err, Errc::bad_config};
}

Expected<void> add_bind(MountPlan& plan, const Bind& bind, bool clone_now) {
  const char* flag = bind.access == Access::read_write  ? "--rw"
                     : bind.access == Access::read_only ? "--ro"
                                                        : "--ro-file";
  std::string source = normalize_absolute(bind.source);
  if (source.empty()) {
    return Error{
        std::string(flag) + " " + bind.source + ": needs an absolute path without . or .. components", "", 0,
        Errc::bad_config};
  }
  std::string target = bind.target.empty() ? source : normalize_absolute(bind.target);
  if (target.empty() || target == "/") {
    return Error{std::string(flag) + " " + bind.source + ": the path inside must be absolute and not /", "",
                 0, Errc::bad_config};
  }
  MountOp op = make_op(MountOp::Kind::bind, target.substr(1), std::string(flag) + " " + bind.source);
  op.source = source;
  auto fd = open_source(source, op.label);
  if (!fd) return std::move(fd).error();
  struct stat st {};
  if (fstat(fd->get(), &st) != 0) return sys_error(op.label);
  op.file = !S_ISDIR(st.st_mode);
  if (bind.access == Access::read_only_file && !S_ISREG(st.st_mode)) {
    return Error{op.label + ": --ro-file takes a regular file" +
                     (S_ISDIR(st.st_mode) ? " (this is a directory: use --ro)" : ""),
                 "", 0, Errc::bad_config};
  }
  op.access = bind.access == Access::read_only && op.file ? Access::read_only_file : bind.access;
  op.landlock = true;
  op.attrs =
      MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | (bind.access != Access::read_write ? MOUNT_ATTR_RDONLY : 0);
  if (clone_now) {
    op.detached.reset(
        sys::open_tree(fd->get(), "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | AT_RECURSIVE));
    if (!op.detached) return sys_error(op.label + ": clone the mount");
    if (sys::mount_setattr(op.detached.get(), "", AT_EMPTY_PATH | AT_RECURSIVE, op.attrs, 0) != 0)
      return sys_error(op.label + ": set mount attributes");
  }
  plan.ops.push_back(std::move(op));
  return {};
}

// The overlay's paths are checked like bind sources; the file system is made
// (and its paths resolved) by whoever can reach them: the root caller here,
// an unprivileged caller's program after unshare.
Expected<void> add_overlay(MountPlan& plan, const Overlay& overlay, int index, bool clone_now) {
  const std::string label = "overlay at " + overlay.target;
  MountOp op = make_op(MountOp::Kind::overlay, {}, label);
  std::string target = normalize_absolute(overlay.target);
  if (target.empty() || target == "/")
    return Error{label + ": the path inside must be absolute and not /", "", 0, Errc::bad_config};
  op.target = target.substr(1);
  std::string* fields[] = {&op.source, &op.upper, &op.work};
  const std::string* given[] = {&overlay.lower, &overlay.upper, &overlay.work};
  UniqueFd lower;
  for (int i = 0; i < 3; ++i) {
    *fields[i] = normalize_absolute(*given[i]);
    // The option strings separate layers with ':' and options with ','.
    if (fields[i]->empty() || fields[i]->find_first_of(":,\\") != std::string::npos)
      return Error{label + ": " + *given[i] + ": needs an absolute path without : , or \\", "", 0,
                   Errc::bad_config};
    auto fd = open_source(*fields[i], label + " (" + *fields[i] + ")");
    if (!fd) return std::move(fd).error();
    if (i == 0) lower = std::move(*fd);
  }
  if (overlay.lower_shift && !clone_now)
    return Error{label + ": an idmapped lower layer is made by a root caller", "", 0, Errc::bad_config};
  for (const auto& below : overlay.lower_below) {
    const std::string layer = normalize_absolute(below);
    if (layer.empty() || layer.find_first_of(":,\\") != std::string::npos)
      return Error{
          std::string(label).append(": ").append(below).append(": needs an absolute path without : , or \\"),
          "", 0, Errc::bad_config};
    auto fd = open_source(layer, std::string(label).append(" (").append(layer).append(")"));
    if (!fd) return std::move(fd).error();
    op.source += ":" + layer;  // lowerdir lists the layers top first
  }
  op.access = Access::read_write;
  op.landlock = true;
  op.attrs = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
  if (overlay.held >= 0) {
    // Made by an earlier call and kept since (overlay_holder.hpp): attached as it is.
    op.detached.reset(::fcntl(overlay.held, F_DUPFD_CLOEXEC, 0));
    if (!op.detached) return sys_error(label + ": take the overlay held since the last call");
    plan.ops.push_back(std::move(op));
    return {};
  }
  if (!overlay.hold_dir.empty() && overlay.hold_idle.count() > 0) op.hold_index = index;
  if (clone_now) {
    UniqueFd shifted;
    if (overlay.lower_shift) {
      auto clone = shifted_clone(lower.get(), op.source, *overlay.lower_shift);
      if (!clone) return Error{label + ": " + clone.error().message(), "", clone.error().code};
      shifted = std::move(*clone);
    }
    op.detached.reset(make_overlay(op, shifted.get()));
    if (!op.detached)
      return sys_error(label + ": mount overlayfs (lower " + op.source + (shifted ? ", idmapped" : "") + ")");
    // While it is still detached (a kernel that will not clone one holds none).
    if (op.hold_index >= 0)
      op.hold_clone.reset(
          sys::open_tree(op.detached.get(), "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH));
  }
  plan.ops.push_back(std::move(op));
  return {};
}

// A host device node, read-write, at `target` in /dev. Its attributes come
// from the recursive seal of /dev that follows the nodes.
Expected<void> add_host_node(MountPlan& plan, const std::string& path, std::string target, bool clone_now) {
  MountOp op = make_op(MountOp::Kind::bind, std::move(target), path);
  op.source = path;
  op.file = true;
  op.ours = true;
  if (clone_now) {
    auto fd = open_source(path, path);
    if (!fd) return std::move(fd).error();
    op.detached.reset(sys::open_tree(fd->get(), "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH));
    if (!op.detached) return sys_error("clone the mount of", path);
  }
  plan.ops.push_back(std::move(op));
  return {};
}

MountOp seal_op(const char* target, std::uint64_t attrs, bool recursive, Step step) {
  MountOp op = make_op(MountOp::Kind::seal, target, std::string("/") + target);
  op.step = step;
  op.attrs = attrs;
  op.recursive = recursive;
  return op;
}

// The store paths of a closure, each at its own path. A store path that is
// itself a link is made as a link after the rest, which made /nix/store.
Expected<void> add_store_paths(MountPlan& plan, const std::vector<std::string>& paths, bool clone_now) {
  std::vector<MountOp> links;
  for (const auto& path : paths) {
    if (!is_store_path(path))
      return Error{"toolchain " + path + ": not a path of the Nix store (/nix/store/NAME)", "", 0,
                   Errc::bad_config};
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) return sys_error("toolchain", path);
    if (S_ISLNK(st.st_mode)) {
      char text[PATH_MAX];
      ssize_t n = ::readlink(path.c_str(), text, sizeof text - 1);
      if (n <= 0) return sys_error("read the toolchain link", path);
      MountOp op = make_op(MountOp::Kind::symlink, path.substr(1), "toolchain " + path);
      op.ours = true;
      op.source.assign(text, static_cast<size_t>(n));
      links.push_back(std::move(op));
      continue;
    }
    auto added = add_bind(plan, Bind{path, path, Access::read_only}, clone_now);
    if (!added) return added;
    plan.ops.back().label = "toolchain " + path;
  }
  if (!links.empty() && links.size() == paths.size())
    return Error{"toolchain: every store path of the closure is a link; there is nothing to bind", "", 0,
                 Errc::bad_config};
  for (auto& op : links) plan.ops.push_back(std::move(op));
  return {};
}

Expected<void> add_toolchain(MountPlan& plan, const Config& config, bool clone_now) {
  for (const char* dir : kToolchain) {
    // A Nix toolchain keeps only the host's /etc (users, certificates, resolver).
    if (config.store_paths && std::string_view(dir) != "/etc") continue;
    struct stat st {};
    if (lstat(dir, &st) != 0) continue;  // those that exist
    if (S_ISLNK(st.st_mode)) {
      // usrmerge: /bin -> usr/bin. The link is recreated, not followed.
      char text[PATH_MAX];
      ssize_t n = readlink(dir, text, sizeof text - 1);
      if (n <= 0) return sys_error("read the toolchain link", dir);
      MountOp op = make_op(MountOp::Kind::symlink, dir + 1, std::string("toolchain ") + dir);
      op.ours = true;
      op.source.assign(text, static_cast<size_t>(n));
      plan.ops.push_back(std::move(op));
      continue;
    }
    if (!S_ISDIR(st.st_mode)) continue;
    auto added = add_bind(plan, Bind{dir, dir, Access::read_only}, clone_now);
    if (!added) return added;
    plan.ops.back().label = std::string("toolchain ") + dir;
    plan.ops.back().ours = true;
  }
  if (config.store_paths) return add_store_paths(plan, *config.store_paths, clone_now);
  return {};
}

// A device passed through: a character node below /dev, not one of the
// nodes, links or mounts Chock makes there itself.
Expected<void> add_device(MountPlan& plan, const std::string& given, bool clone_now) {
  const std::string path = normalize_absolute(given);
  const std::string label = "device " + given;
  if (!path.starts_with("/dev/") || path.starts_with("/dev/pts/") || path.starts_with("/dev/shm/") ||
      path == "/dev/pts" || path == "/dev/shm" || path == "/dev/fd" || path == "/dev/ptmx" ||
      path.starts_with("/dev/std"))
    return Error{label + ": a device is a node below /dev, not one of Chock's own (pts, shm, fd, std*)", "",
                 0, Errc::bad_config};
  for (const char* own : kDeviceNodes)
    if (path == std::string("/dev/") + own) return {};  // every call has it already
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return sys_error(label);
  if (S_ISBLK(st.st_mode))
    return Error{label + " is a block device: a disk is never passed through (only character devices are)",
                 "", 0, Errc::bad_config};
  if (!S_ISCHR(st.st_mode))
    return Error{label + " is not a character device node" +
                     (S_ISLNK(st.st_mode) ? " (it is a link: name its target)" : ""),
                 "", 0, Errc::bad_config};
  auto added = add_host_node(plan, path, path.substr(1), clone_now);
  if (!added) return added;
  plan.ops.back().step = Step::dev;
  plan.ops.back().label = label;
  // Walked a name at a time, its directories made (/dev/bus/usb/001/004).
  plan.ops.back().ours = false;
  return {};
}

Expected<void> add_dev(MountPlan& plan, std::uint64_t shm_size, const std::vector<std::string>& devices,
                       bool clone_now) {
  MountOp dev = tmpfs_op("dev", "0755", 1 << 20, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, Step::dev);
  dev.access = Access::read_only;
  plan.ops.push_back(std::move(dev));
  for (const char* node : kDeviceNodes) {
    std::string path = std::string("/dev/") + node;
    struct stat st {};
    if (stat(path.c_str(), &st) != 0 || !S_ISCHR(st.st_mode)) continue;
    auto added = add_host_node(plan, path, path.substr(1), clone_now);
    if (!added) return added;
    plan.ops.back().step = Step::dev;
  }
  for (const auto& device : devices)
    if (auto added = add_device(plan, device, clone_now); !added) return added;
  // The nodes' attributes, in one call: they are the only mounts below /dev yet.
  plan.ops.push_back(seal_op("dev", MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, true, Step::dev));
  MountOp pts = make_op(MountOp::Kind::devpts, "dev/pts", "/dev/pts");
  pts.step = Step::dev;
  pts.ours = true;
  pts.fs_options = "ptmxmode=0666,mode=0620";
  pts.attrs = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC;
  plan.ops.push_back(std::move(pts));
  struct Link {
    const char* target;
    const char* text;
  };
  for (Link l :
       {Link{"dev/ptmx", "pts/ptmx"}, Link{"dev/fd", "/proc/self/fd"}, Link{"dev/stdin", "/proc/self/fd/0"},
        Link{"dev/stdout", "/proc/self/fd/1"}, Link{"dev/stderr", "/proc/self/fd/2"}}) {
    MountOp op = make_op(MountOp::Kind::symlink, l.target, std::string("/") + l.target);
    op.step = Step::dev;
    op.ours = true;
    op.source = l.text;
    plan.ops.push_back(std::move(op));
  }
  plan.ops.push_back(tmpfs_op("dev/shm", "1777", shm_size, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, Step::dev));
  plan.ops.back().landlock = true;
  plan.ops.push_back(seal_op("dev", MOUNT_ATTR_RDONLY, false, Step::dev));
  return {};
}

}  // namespace

Expected<UniqueFd> mount_overlay_now(const Overlay& overlay) {
  MountPlan plan;
  if (auto added = add_overlay(plan, overlay, -1, true); !added) return std::move(added).error();
  return std::move(plan.ops.back().detached);
}

std::string normalize_absolute(const std::string& path) {
  if (path.empty() || path[0] != '/') return {};
  std::string out;
  size_t i = 0;
  while (i < path.size()) {
    while (i < path.size() && path[i] == '/') ++i;
    size_t j = path.find('/', i);
    if (j == std::string::npos) j = path.size();
    std::string part = path.substr(i, j - i);
    if (part == "." || part == "..") return {};
    if (!part.empty()) out += "/" + part;
    i = j;
  }
  return out.empty() ? "/" : out;
}

Expected<MountPlan> plan_mounts(const Config& config, bool clone_now) {
  MountPlan plan;
  // First, so each lands in the new root's own tmpfs: nothing is mounted yet
  // that a path of theirs could reach through (a mount made later over a
  // parent only hides them).
  for (const FileInside& f : config.files_inside) {
    std::string target = normalize_absolute(f.target);
    if (target.empty() || target == "/")
      return Error{"a file inside (" + f.target + "): needs an absolute path", "", 0, Errc::bad_config};
    MountOp op = make_op(MountOp::Kind::file, target.substr(1), target);
    op.bytes = f.bytes;
    op.ours = true;
    op.file = true;
    op.access = Access::read_only_file;
    op.landlock = true;
    plan.ops.push_back(std::move(op));
  }
  if (config.toolchain) {
    auto t = add_toolchain(plan, config, clone_now);
    if (!t) return std::move(t).error();
    // Over the toolchain's /etc, before anything of the caller's lands below it.
    if (config.network == Network::filtered) plan.ops.push_back(plan_etc_overlay());
  }
  MountOp proc = make_op(MountOp::Kind::proc, "proc", "/proc");
  proc.step = Step::proc;
  proc.ours = true;
  proc.attrs = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC;
  proc.landlock = true;
  plan.ops.push_back(std::move(proc));
  auto d = add_dev(plan, config.tmp_size_bytes, config.devices, clone_now);
  if (!d) return std::move(d).error();
  plan.ops.push_back(
      tmpfs_op("tmp", "1777", config.tmp_size_bytes, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, Step::tmp));
  plan.ops.back().landlock = true;
  // /var/tmp, which tools and test suites use: a capped tmpfs of its own, the
  // size of /tmp's.
  plan.ops.push_back(
      tmpfs_op("var/tmp", "1777", config.tmp_size_bytes, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, Step::tmp));
  plan.ops.back().landlock = true;
  for (const Bind& b : config.binds) {
    auto added = add_bind(plan, b, clone_now);
    if (!added) return std::move(added).error();
  }
  for (std::size_t i = 0; i < config.overlays.size(); ++i) {
    auto added = add_overlay(plan, config.overlays[i], static_cast<int>(i), clone_now);
    if (!added) return std::move(added).error();
  }
  for (const Bind& b : config.binds_over_overlays) {
    auto added = add_bind(plan, b, clone_now);
    if (!added) return std::move(added).error();
  }
  for (const std::string& c : config.covers) {
    std::string target = normalize_absolute(c);
    if (target.empty() || target == "/")
      return Error{"cover " + c + ": needs an absolute path", "", 0, Errc::bad_config};
    MountOp op = make_op(MountOp::Kind::cover, target.substr(1), "deny " + c);
    op.step = Step::cover;
    op.file = true;
    plan.ops.push_back(std::move(op));
    plan.has_covers = true;
  }
  // A file inside that a mount would hide has no place in the call (and its
  // Landlock rule none to name): refused, whatever lies over it.
  for (const MountOp& file : plan.ops) {
    if (file.kind != MountOp::Kind::file) continue;
    for (const MountOp& op : plan.ops) {
      if (op.kind == MountOp::Kind::file || op.kind == MountOp::Kind::symlink ||
          op.kind == MountOp::Kind::seal || op.kind == MountOp::Kind::cover)
        continue;
      if (file.target == op.target || file.target.starts_with(op.target + "/"))
        return Error{"a file inside (/" + file.target + "): " + op.label + " is mounted over it", "", 0,
                     Errc::bad_config};
    }
  }
  return plan;
}

}  // namespace chock::sandbox
