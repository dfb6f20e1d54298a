// The mount tree of a call: planned before the fork (every path checked,
// every string built), then built in the program process after unshare, and
// entered with pivot_root.
#pragma once

#include <linux/openat2.h>
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "chock/config.hpp"
#include "chock/error.hpp"
#include "sandbox/steps.hpp"
#include "util/fd.hpp"

namespace chock::sandbox {

// The 20 /proc entries covered by an empty file.
extern const char* const kMaskedProcEntries[20];

// The text that stands in for a denied file.
extern const char kDenyNotice[];

struct MountOp {
  enum class Kind : std::uint8_t {
    bind,         // a host file or directory at `target`
    symlink,      // `target` -> `source` (the toolchain's usrmerge links, /dev/fd)
    tmpfs,        // a fresh tmpfs
    proc,         // a fresh procfs, entries masked, then read-only
    devpts,       // a new devpts instance
    seal,         // set `attrs` on the mount at `target` (and below it when `recursive`)
    cover,        // the deny notice over the file at `target`
    overlay,      // overlayfs: lower `source`, `upper`, `work`, read-write at `target`
    etc_overlay,  // a filtered call's /etc: Chock's resolver files over the host's (etc_overlay.hpp)
    etc_tree,     // the same where the host mounts in /etc: a tmpfs of Chock's with the host's entries
    file,         // a file of Chock's own holding `bytes`, written into the new root
  };
  Kind kind = Kind::bind;
  Step step = Step::mount_tree;  // reported when this operation fails
  std::string source;            // bind: host path; symlink: link text
  std::string target;            // inside, relative to the new root: "usr", "home/u/p"
  std::string label;             // how a message names it: "--ro /srv/data"
  bool file = false;             // the mount point is a regular file
  bool ours = false;             // `target` lies in a file system Chock made (the new root, /dev),
                                 // so it is made and reached by name; a caller's path is walked link-free
  bool recursive = false;        // seal: the whole subtree
  Access access = Access::read_only;  // for the Landlock rule this mount implies
  bool landlock = false;              // whether this mount gets a Landlock rule of its own
  std::uint64_t attrs = 0;            // MOUNT_ATTR_* for a new filesystem or a bind
  std::string fs_options;             // tmpfs, devpts: mount(2)'s data, "mode=1777,size=8388608"
  std::string upper;                  // overlay
  std::string work;                   // overlay
  std::string_view bytes;             // file
  UniqueFd detached;                  // a source cloned before the fork (root callers), or a held overlay
  UniqueFd hold_clone;                // overlay: a clone of `detached` for a holder (root callers)
  int hold_index = -1;                // overlay: its index in Config::overlays, where it is to be held
  int source_fd = -1;                 // scratch: the source's clone, made after unshare
};

struct MountPlan {
  std::vector<MountOp> ops;  // parents before children
  bool has_covers = false;
};

// Checks every source (absolute, exists, no symbolic-link component) and
// builds the operations. A root caller's sources are cloned here, as root,
// because the program will not be able to reach a root-only directory.
Expected<MountPlan> plan_mounts(const Config& config, bool clone_sources_now);

// In the program process, after unshare: builds the tree on a fresh tmpfs,
// pivots into it and detaches the old root. An overlay made here that is to
// be held goes to the caller as a clone on `channel`. Async-signal-safe.
bool build_mount_tree(MountPlan& plan, int channel, StepFailure* failure) noexcept;

// Openings that never follow a link, magic or not.
inline constexpr std::uint64_t kResolveSafe = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;

// A detached overlayfs mount of `op` (lower `source`, `upper`, `work`), or
// -1 with errno. With `top_lower_fd` >= 0 that mount is the top lower layer,
// in place of the first path of `source`. System calls only.
int make_overlay(const MountOp& op, int top_lower_fd) noexcept;

// `name` made new in `dir` (never through a link) with `mode`, holding
// `bytes`; false with errno. System calls only: after the fork.
bool write_new_file(int dir, const char* name, std::string_view bytes, mode_t mode) noexcept;

// The overlay made now by this process (a root caller), exactly as a call's
// mount tree gets it, and detached: whether it mounts here, and why not.
Expected<UniqueFd> mount_overlay_now(const Overlay& overlay);

// "/a//b/" -> "/a/b"; empty when the path is not absolute or has "." or ".." components.
std::string normalize_absolute(const std::string& path);

}  // namespace chock::sandbox
