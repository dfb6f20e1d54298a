// Whether a directory tree changed since a given time, and from then on:
// for an overlay held over a lower layer the person goes on changing (a
// session's project), which overlayfs does not promise to see while mounted.
//
// inotify watches every directory of the tree (a directory's watch reports
// what happens to its entries: created, deleted, renamed, written, chmod'ed),
// each set before that directory's entries are looked at; what changed before
// its watch was set is told by the entry's ctime, which the kernel sets at
// every change and no one can set by hand. The tree is the lower layer's
// file system only (overlayfs does not cross into mounts below it).
#pragma once

#include <cstddef>
#include <cstdint>

#include "util/fd.hpp"

namespace chock::sandbox {

// More directories than this and the tree is not watched (each watch is
// kernel memory; the holder then holds nothing).
inline constexpr std::size_t kMaxWatchedDirs = 20000;

struct TreeWatch {
  // Readable at the tree's first change; none where it is not watched.
  UniqueFd fd;
  // Why not: it changed since the time given, it is too large (more than
  // max_dirs directories: so it stays), or inotify refused (its limits).
  enum class Not { changed, too_large, refused } why = Not::refused;
};

// A watch of the tree at `root` (a directory descriptor) as it was at
// `since_ns` (unix time, ns).
[[nodiscard]] TreeWatch watch_tree(int root, std::int64_t since_ns, std::size_t max_dirs = kMaxWatchedDirs);

}  // namespace chock::sandbox
