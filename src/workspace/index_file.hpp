// A git index (versions 2 and 3, git's index-format.txt) as Chock reads and
// writes it for one purpose: the index of a derived base is its donor's
// with the entries that differ taken from a small index git wrote for just
// those paths (base_derive.cpp). Git would read and rehash the whole index
// with its collision-detecting SHA-1, and again to write it; here the
// unchanged entries are written as they are, byte for byte. Every entry and
// extension is bounds-checked; anything else than a plain index (version 4,
// a split or sparse index, an extension git requires to be understood) is
// refused, and git does the work instead.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "chock/error.hpp"

namespace chock::workspace::index_file {

struct Entry {
  std::string_view name;
  std::string_view bytes;  // the whole entry as on disk, its padding included
};

struct Index {
  std::uint32_t version = 2;
  std::vector<Entry> entries;  // in git's order: by name, byte by byte
  std::string_view tree;       // the cache tree ("TREE") extension's data, if any
};

// The number of entries an index's first 12 bytes announce ("DIRC", the
// version, the count), or nullopt where they are not an index's.
std::optional<std::uint32_t> entry_count(std::string_view header);
// Whether those bytes announce an index of version 2 or 3 (which parse may
// still refuse, for what follows them).
bool plain_version(std::string_view header);

// `bytes` (which must outlive the result) read as an index whose object
// names are `hash_size` bytes (20 for SHA-1, 32 for SHA-256); its trailer is
// not checked. Nullopt for what is not a plain index of version 2 or 3 or
// holds a stage other than 0 (a conflict). Optional extensions other than
// the cache tree (the untracked cache, the end-of-entries markers) are left
// out: git makes them again.
std::optional<Index> parse(std::string_view bytes, std::size_t hash_size);

// Writes to `fd` (`path`, for errors) the index that is `donor` with each
// entry of `changed` in place of the donor's of that name (or added) and
// the entries named in `gone` left out: the donor's unchanged entries as
// they are, run by run, no copy made. Its cache tree is the donor's with
// every tree above a path of `changed` or `gone` marked invalid (git's own
// rule when it changes an entry), so `git write-tree` and `git commit`
// compute those again. False, nothing written, when the cache tree does not
// parse.
Expected<bool> write_merged(int fd, const std::string& path, const Index& donor, const Index& changed,
                            const std::set<std::string>& gone, std::size_t hash_size);

}  // namespace chock::workspace::index_file
