// Whether the repository's branches and tags can have changed since the last
// call, without running git: a stamp of every file `git for-each-ref
// refs/heads/ refs/tags/` reads (packed-refs, the loose refs and their
// directories: inode, size, change time). Git replaces a ref by a rename and
// a directory's change time moves with each entry made or removed, so an
// equal stamp means equal refs. The change time is the kernel's coarse clock:
// a stamp taken within kRacyNs of a change is not vouched for (the next
// change could carry the same time), the same rule as git's racy index.
#pragma once

#include <string>
#include <vector>

namespace chock::workspace::refs_stamp {

inline constexpr long long kRacyNs = 2'000'000'000;

// The stamp of the repository at `common_dir`, or empty where it cannot
// vouch: a reftable store, a symbolic ref among the branches and tags (its
// target may be elsewhere), a change younger than kRacyNs, an unreadable entry.
std::string take(const std::string& common_dir);

// The same stamp of `root` and of each of `rels` beneath it as it is (no
// link followed, the last one's own metadata; one that cannot be reached is
// stamped with why), or empty when one changed within kRacyNs.
std::string take_paths(const std::string& root, const std::vector<std::string>& rels);

}  // namespace chock::workspace::refs_stamp
