// What a sandboxed call is given: its command, its mount tree, its network,
// its limits. Everything here is decided before the call starts.
#pragma once

#include <sys/types.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace chock {

// The three grant sets of the spec. A bind's access decides both its mount
// flags and its Landlock rule.
enum class Access {
  read_only,       // execute, read_file, read_dir
  read_only_file,  // execute, read_file: one regular file
  read_write,      // every file right but make_char and make_block
};

struct Bind {
  std::string source;  // absolute host path; no component may be a symbolic link
  std::string target;  // absolute path inside; empty means the same as source
  Access access = Access::read_only;
};

// The files of one owner shown as another's (an idmapped mount, root callers
// only): `lower`'s owner becomes the uid a call runs as, which can then write
// over the project through the overlay with no copy of it. The two ids swap;
// every other id stays as it is.
struct OwnerShift {
  uid_t uid_from = 0;
  gid_t gid_from = 0;
  uid_t uid_to = 0;
  gid_t gid_to = 0;
  friend bool operator==(const OwnerShift&, const OwnerShift&) = default;
};

// An overlay the sandbox mounts (overlayfs with `userxattr`, so it needs no
// privilege): `lower` read-only, `upper` and `work` writable host directories
// on one file system, all opened as the caller before privileges drop;
// mounted read-write at `target` (absolute, inside) after the binds. The
// workspace of a project that is not a git repository is one of these.
struct Overlay {
  std::string lower;
  std::string upper;
  std::string work;
  std::string target;
  std::vector<std::string> lower_below = {};   // more read-only layers under `lower`, top first
  std::optional<OwnerShift> lower_shift = {};  // `lower` idmapped (a root caller's overlay)
  // Kept mounted for the session's next call by a holder listening in
  // `hold_dir` (src/sandbox/overlay_holder.hpp), which lets it go after
  // `hold_idle` without a call once `hold_lock` (the session's mounts lock)
  // is free; not kept where `hold_idle` is 0 (nor where `hold_dir` is empty,
  // which the caller also reads as: no holder to let go first). Only for
  // lower layers that never change, or that the holder watches
  // (`hold_watch_lower`: it lets go at their first change).
  std::string hold_dir = {};
  std::string hold_lock = {};
  std::chrono::milliseconds hold_idle{0};
  bool hold_watch_lower = false;
  // A clone of this overlay handed over by its holder for this call, attached
  // instead of making one: borrowed until spawn returns, -1 none.
  int held = -1;
};

// A read-only file at `target` (absolute) inside, holding `bytes`: memory of
// the caller's that lives until spawn returns (a library Chock carries).
struct FileInside {
  std::string target;
  std::string_view bytes;
};

// A Landlock rule: a path inside the sandbox and the grant set beneath it.
struct Grant {
  std::string path;
  Access access = Access::read_only;
};

enum class Network {
  none,      // a fresh network namespace with only its own loopback up
  filtered,  // the closed namespace, plus a resolver, a relay and a broker
             // served by this process and judged by Config::judge
  host,      // no network namespace at all
};

namespace net {
class Judge;
}

// Resource limits. Unset fields take the defaults below: the floor every
// call gets, whoever spawns it (chock.zon's ratchet starts from them too).
struct Limits {
  static constexpr std::uint64_t kDefaultMemoryBytes = 2ULL << 30;
  static constexpr std::uint64_t kDefaultProcesses = 256;
  static constexpr std::uint64_t kDefaultOpenFiles = 1024;
  static constexpr std::uint64_t kDefaultFileSizeBytes = 1ULL << 30;
  static constexpr std::uint64_t kDefaultCpuSeconds = 3600;

  // The call's memory, all its processes together: a cgroup's memory.max
  // where cgroup v2 memory is delegated, else measured by Chock's keeper.
  std::optional<std::uint64_t> memory_bytes;
  // RLIMIT_DATA, per process, only when asked for: sanitizers reserve tens of
  // TiB of address space that the kernel counts against it.
  std::optional<std::uint64_t> data_bytes;
  std::optional<std::uint64_t> processes;        // cgroup pids.max; RLIMIT_NPROC
  std::optional<std::uint64_t> open_files;       // RLIMIT_NOFILE
  std::optional<std::uint64_t> file_size_bytes;  // RLIMIT_FSIZE
  std::optional<std::uint64_t> cpu_seconds;      // RLIMIT_CPU (soft; hard is 30 s more)

  bool operator==(const Limits&) const = default;
};

// The file system a call writes its workspace to, watched while it runs:
// the call is stopped when it has written `cap_bytes` there since it started,
// or when the free space or free inodes fall under their floors, so the
// machine's disk never fills and the session log can still be written.
struct DiskGuard {
  std::string path;                // a directory on that file system (the data directory)
  std::uint64_t cap_bytes = 0;     // blocks the call may add to its use
  std::uint64_t floor_bytes = 0;   // free space that must remain
  std::uint64_t floor_inodes = 0;  // free inodes that must remain (0: not checked)

  // The guard of a file system of `size_bytes` and `inodes` (0: it counts
  // none): floors of 1 GiB and 10,000 inodes, or a tenth of a smaller one.
  static DiskGuard for_file_system(std::string path, std::uint64_t cap_bytes, std::uint64_t size_bytes,
                                   std::uint64_t inodes);
  // A call starts only while this much of each floor is free: the guard
  // polls, so a stopped call overshoots the floor by what it wrote in a
  // few milliseconds, and the next call must still have room to run.
  [[nodiscard]] std::uint64_t start_bytes() const { return floor_bytes / 4; }
  [[nodiscard]] std::uint64_t start_inodes() const { return floor_inodes / 4; }
};

// A directory of the host that a call may grow only up to a size (a
// project's toolchain cache). Its size is counted (every block under it)
// when the call starts, and again only when its file system's use says it
// may have passed the cap; past it, the call is stopped.
struct DirectoryCap {
  std::string path;  // the host directory
  std::uint64_t cap_bytes = 0;
  std::string name;  // how the stop names it: "the toolchain cache (/run/chock/cache)"
  // A file of Chock's own, outside `path` (a call may write anything in
  // that), keeping the last count with its file system's use then: a call
  // starts from it, not from a walk of the whole directory, while the most
  // the directory can have grown since keeps it under the cap
  // (sandbox/directory_cap.hpp). Empty: counted at every start.
  std::string record = {};
};

// Who owns the cgroup the call runs in.
struct Containment {
  enum class Kind {
    managed,   // Chock makes a child cgroup where memory and pids are delegated (best effort)
    supplied,  // the caller's own cgroup v2 directory: Chock writes and reads nothing in it
  };
  Kind kind = Kind::managed;
  int cgroup_fd = -1;  // Kind::supplied: an open cgroup v2 directory, borrowed (not closed)
};

struct Config {
  std::vector<std::string> argv;                // argv[0] is looked up on PATH inside
  std::optional<std::vector<std::string>> env;  // "K=V" entries; nullopt: the caller's
  std::vector<Bind> binds;                      // applied in order, parents first
  // Character device nodes under /dev, each bound read-write at its own path
  // in the call's /dev (Landlock: open, read, write, ioctl on that node). The
  // program opens it under its own uid and the node's mode bits; the grant is
  // the whole device (seccomp cannot tell one descriptor's ioctls from another's).
  std::vector<std::string> devices;
  std::vector<Overlay> overlays;  // mounted after the binds, in order
  // Mounted after the overlays: a file of an overlay bound over itself read-only.
  std::vector<Bind> binds_over_overlays;
  // Files of Chock's own written into the sandbox's root (a fresh tmpfs, made
  // read-only with it) before anything is mounted: no host file, no mount.
  std::vector<FileInside> files_inside;
  bool toolchain = true;  // /usr /bin /lib* /sbin /etc read-only
  // With `toolchain`, a Nix closure instead of the host's /usr /bin /lib*
  // /sbin: each store path ("/nix/store/<hash>-<name>") read-only at its own
  // path and nothing else of /nix; /etc stays the host's.
  std::optional<std::vector<std::string>> store_paths;
  std::vector<std::string> covers;  // files inside replaced by the deny notice
  std::string cwd = "/";
  Network network = Network::none;
  // Network::filtered: who decides each name and connection (chock/net.hpp).
  // Its threads serve the call while it runs, so the judge's rule and record
  // functions are called from threads of this process. Unset: every name
  // and connection is refused.
  std::shared_ptr<net::Judge> judge;
  std::optional<uid_t> user;  // root callers only; default 65534
  bool pass_stdin = false;    // otherwise stdin is /dev/null
  // The caller's descriptors that become the program's 0, 1 and 2 (the
  // keeper's too); borrowed, not closed. `chock` puts a pseudo-terminal of
  // the call's own here when its own are a terminal, so the program never
  // holds the person's terminal.
  std::array<int, 3> stdio{0, 1, 2};
  std::optional<std::chrono::milliseconds> timeout;
  bool allow_jit = false;                     // drops the write-xor-execute rules only
  std::uint64_t tmp_size_bytes = 1ULL << 30;  // the /tmp tmpfs cap
  // Landlock rules to use instead of those derived from the binds: only ever
  // narrower than the mounts (tests and embedders proving the layer alone).
  std::optional<std::vector<Grant>> landlock_grants;
  Limits limits;
  Containment containment;
  std::optional<DiskGuard> disk;              // chock run sets it; nullopt: not watched
  std::optional<DirectoryCap> directory_cap;  // chock run: the toolchain cache
  // The caller's own work, done by spawn in this thread while the sandbox's
  // first process makes the call's processes (on another CPU), before spawn
  // returns: chock run writes a call's first log lines here, before any it
  // writes of what the call does. Not run when spawn fails before that point.
  std::function<void()> while_entering;
  // Called once every overlay this call hands to a holder (Overlay::hold_dir)
  // is held, from the thread in spawn() or wait(): from then on, the call's
  // mount of them is the one later calls attach, and the session's lock on
  // its mounts may be shared with them.
  std::function<void()> overlays_held;
};

}  // namespace chock
