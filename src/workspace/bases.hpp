// Shared bases: one read-only checkout per commit (and per uid the calls run
// as), kept in <data dir>/bases/<uid>-<commit>/ (tree/ and its index). A git
// session at that commit is an overlay: the base is its lower layer, its own
// upper/ holds what its calls change, and its index is the base's (same
// inodes and times through the overlay, so `git status` inside trusts the
// stat data and reads no file): a copy, or, where the operator links base
// indexes and the base is settled, the small half of the base's split
// index, the shared half linked (split/, SharedIndex). A base is made in a
// temporary directory and renamed into place once complete: a crash leaves
// none half made that a session would use.
//
// Locks: <key>.lock beside the base, shared by a session being made over it
// (until its session.json names the base), exclusive while the base is made
// and while gc decides to remove it; so gc never removes a base that a
// session is about to use, and sees every session that already does.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "util/fd.hpp"
#include "util/subprocess.hpp"
#include "workspace/build.hpp"

namespace chock::workspace::bases {

// How a root caller's git makes a base: as the run uid `owner` (RunAs,
// util/subprocess.hpp). Unset where the filter that goes with it cannot be built.
std::optional<RunAs> as_run_uid(uid_t owner, gid_t group);

// "<uid>-<commit>"
std::string key(uid_t owner, const std::string& commit);
// The lower layers of the sessions over the base `key`, top first: its own
// tree, then those of the bases it was derived from (base_derive.cpp).
Expected<std::vector<std::string>> layers_of(const std::string& key);
// The keys a base's tree stacks on (its `layers` file), top first; none for
// a base checked out whole.
Expected<std::vector<std::string>> layers_below(const std::string& base_dir);
// How deep a stack of derived bases grows; the next base is derived from its
// bottom (a whole checkout) by all that differs since: a stack of two.
inline constexpr std::size_t kMaxLayers = 8;

// A base's index split for its sessions (bases.cpp, make_split): `index`,
// no entry of its own, names `shared` (sharedindex.<hash>, `name`), every entry.
struct SharedIndex {
  std::string index, shared, name;
};
// The split index of the base in `base_dir`; none before the base is settled
// (a second after its checkout), or in a base an older Chock made.
std::optional<SharedIndex> shared_index(const std::string& base_dir);

// A base held for a session being made: the shared lock and where it is.
struct Held {
  UniqueFd lock;
  std::string dir;    // <data dir>/bases/<key>
  bool made = false;  // this call made it (else it was there)
};
// The base of `project`'s HEAD for `owner`, made when missing (a checkout
// with progress reported, as a worktree's is). Marks it used now.
// `split`: once it is settled, its index is split for sessions that link it
// (shared_index).
Expected<Held> hold(const build::Project& project, uid_t owner, bool split, const Progress& progress,
                    std::uint32_t progress_after_ms);

// Makes the base of `project`'s HEAD in `dir` from the base `top` (its key
// `top_key`; base_derive.cpp), or from the bottom of its stack where that is
// kMaxLayers deep: a tree of only the files that differ and whiteouts for
// those gone, stacked on the donor's layers, and the donor's index moved to
// the new commit. False (nothing made but, perhaps, dir/tree and dir/index)
// when the donor's commit is not in this repository, when git or the index
// merge refuses what it is given, or more than `max_changes` paths differ: a
// fresh checkout is then the way.
Expected<bool> derive_base(const std::string& dir, const std::string& top, const std::string& top_key,
                           const build::Project& project, uid_t owner, std::size_t max_changes);

// collect_bases (workspace.hpp).
Expected<BasesCollected> collect(std::int64_t older_than_seconds, std::optional<std::uint64_t> max_bytes);

}  // namespace chock::workspace::bases
