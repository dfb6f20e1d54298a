// What chock run needs of the host side: a cgroup it can make (tried with
// cgroup::Managed::create, the code a call uses, and removed again), git, and
// room in the data directory for workspaces.
#include <sys/stat.h>
#include <sys/statvfs.h>

#include <cerrno>
#include <cstdio>

#include "chock/workspace.hpp"
#include "config/chock_zon.hpp"
#include "doctor/probes.hpp"
#include "sandbox/cgroup.hpp"
#include "sandbox/exit_watch.hpp"
#include "workspace/git.hpp"

namespace chock::doctor {
namespace {

constexpr const char* kCgroupRow = "cgroup v2";
constexpr const char* kGitRow = "git";
constexpr const char* kMemoryRow = "memory limit";
constexpr const char* kDiskRow = "disk limit";
constexpr const char* kSpaceRow = "workspace space";
constexpr unsigned long long kSpaceFloor = 1ULL << 30;

// The data directory, or its nearest ancestor that exists yet.
std::string nearest_existing(std::string path) {
  while (path.size() > 1) {
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0) return path;
    const auto slash = path.rfind('/');
    path = slash == 0 ? std::string("/") : path.substr(0, slash);
  }
  return "/";
}

}  // namespace

Row cgroup_row(const Row& rlimit_floor) {
  // The very call chock run makes: a cgroup below a delegated ancestor with
  // memory.max, memory.swap.max and pids.max written; destroyed at once.
  cgroup::Managed managed = cgroup::Managed::create(Limits{});
  if (managed.state() == CgroupState::ok) {
    return make_row(kCgroupRow, Level::ok, false,
                    "memory.max " + human_size(managed.memory_max()) + " and pids.max " +
                        std::to_string(managed.pids_max()) + " written on " + managed.path() +
                        " (removed again)");
  }
  std::string reason = "unsupported: " + managed.reason();
  reason += rlimit_floor.level == Level::ok
                ? "; the rlimit floor and Chock's memory measurement carry the load"
                : "; and the rlimit floor is off too";
  return make_row(kCgroupRow, Level::degraded, false, reason);
}

Row memory_row() {
  cgroup::Managed managed = cgroup::Managed::create(Limits{});
  const std::string limit = human_size(Limits::kDefaultMemoryBytes);
  if (managed.state() == CgroupState::ok)
    return make_row(kMemoryRow, Level::ok, false,
                    "memory.max of the call's own cgroup (" + limit +
                        " unless limited): the kernel stops the call the moment it passes it");
  return make_row(kMemoryRow, Level::ok, false,
                  "measured by Chock (" + managed.reason() +
                      "): the keeper sums the resident memory of every process of a call every " +
                      std::to_string(exit_watch::kMemoryIntervalMaxUsec / 1000) + " ms, every " +
                      std::to_string(exit_watch::kMemoryIntervalMinUsec / 1000) +
                      " ms near the limit, and ends the call past it (" + limit +
                      " unless limited); no per-process RLIMIT_DATA, so sanitizer builds run");
}

Row git_row(bool blocks, const std::string& why_blocks) {
  const Level missing = blocks ? Level::off : Level::degraded;
  auto out = workspace::git::run({"--version"});
  if (!out) return make_row(kGitRow, missing, blocks, out.error().message() + why_blocks);
  if (!out->ok())
    return make_row(
        kGitRow, missing, blocks,
        "git --version exited " + std::to_string(out->status) + ": " + out->first_error_line() + why_blocks);
  std::string version = workspace::git::chomp(out->out);
  if (version.rfind("git version ", 0) != 0)
    return make_row(kGitRow, missing, blocks, "git --version said '" + version + "'" + why_blocks);
  return make_row(kGitRow, Level::ok, blocks, version + why_blocks);
}

namespace {

// The data directory (or its nearest existing ancestor) and its file system.
struct DataFs {
  std::string data;
  std::string probed;
  struct statvfs fs {};
};
Expected<DataFs> data_fs() {
  auto data = workspace::data_dir();
  if (!data) return std::move(data).error();
  DataFs d{*data, nearest_existing(*data), {}};
  if (::statvfs(d.probed.c_str(), &d.fs) != 0) return sys_error("statvfs", d.probed);
  return d;
}

}  // namespace

Row space_row() {
  auto d = data_fs();
  if (!d) return make_row(kSpaceRow, Level::degraded, false, d.error().message());
  const std::string& probed = d->probed;
  const std::string* data = &d->data;
  const struct statvfs& fs = d->fs;
  const unsigned long long free = static_cast<unsigned long long>(fs.f_bavail) * fs.f_frsize;
  std::string where = probed == *data
                          ? "in the data directory " + *data
                          : "in " + probed + " (the data directory " + *data + " is not made yet)";
  if (free < kSpaceFloor)
    return make_row(
        kSpaceRow, Level::degraded, false,
        human_size(free) + " free " + where + "; workspaces want at least " + human_size(kSpaceFloor));
  std::string inodes = fs.f_files == 0 ? std::string("inodes not counted by this file system")
                                       : std::to_string(fs.f_favail) + " inodes free";
  return make_row(kSpaceRow, Level::ok, false, human_size(free) + " free " + where + ", " + inodes);
}

Row disk_row() {
  auto d = data_fs();
  if (!d) return make_row(kDiskRow, Level::degraded, false, d.error().message());
  const std::string& probed = d->probed;
  const struct statvfs& fs = d->fs;
  const DiskGuard g = DiskGuard::for_file_system(
      probed, config::kDefaultDiskBytes, static_cast<std::uint64_t>(fs.f_blocks) * fs.f_frsize, fs.f_files);
  const unsigned long long floor = g.floor_bytes;
  const std::string inodes = g.floor_inodes == 0 ? std::string(" (this file system counts no inodes)")
                                                 : " and " + std::to_string(g.floor_inodes) + " inodes";
  return make_row(kDiskRow, Level::ok, false,
                  "chock run watches the file system of " + probed +
                      " every 2 to 50 ms: a call is stopped when it "
                      "has written " +
                      human_size(config::kDefaultDiskBytes) +
                      " there (.limits.disk lowers it), or when less than " + human_size(floor) + inodes +
                      " are left free");
}

}  // namespace chock::doctor
