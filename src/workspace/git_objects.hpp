// Reading commits and trees straight from a repository's object store
// (gitformat-pack, gitformat-loose): the packs' version 2 indexes, their
// entries and delta chains, loose objects, alternates. For one purpose: what
// differs between two commits when a base is derived (tree_diff.hpp), where
// a `git diff` process cost more than the walk. Every length, offset and
// delta instruction is bounds-checked; what is not read here (an index of
// version 1, a quoted alternate, a missing object) gives no answer, and the
// caller asks git. Objects are not hashed again on read (nor does git).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace chock::workspace::git_objects {

enum class Type : std::uint8_t { commit = 1, tree = 2, blob = 3, tag = 4 };

struct Object {
  Type type = Type::blob;
  std::string data;
};

// The largest object read: commits and trees are far smaller.
inline constexpr std::size_t kMaxObjectBytes = std::size_t{64} << 20;
// How many delta bases named by id (REF_DELTA) are looked up one in another.
inline constexpr int kMaxBaseDepth = 64;

// `base` changed by the delta `delta` (its source size, target size, then
// copy and insert instructions); nullopt where any of it is out of bounds,
// or the result would pass `max_bytes`.
std::optional<std::string> apply_delta(std::string_view base, std::string_view delta, std::size_t max_bytes);

// An inflated loose object, "<type> <size>\0<data>".
std::optional<Object> parse_loose(std::string_view inflated);

// `bytes` inflated (zlib) to exactly `size` bytes, or nullopt.
std::optional<std::string> inflate_exactly(std::string_view bytes, std::size_t size);

// One entry of a tree: its mode as git compares it (canonical: 040000,
// 0100644, 0100755, 0120000 or 0160000), its name and raw object id.
struct TreeEntry {
  std::uint32_t mode = 0;
  std::string_view name, id;
};
inline constexpr std::uint32_t kTreeMode = 040000;
// A tree's entries in their order; nullopt where one is cut short, has no
// or an empty name, a name "." or "..", or a mode that is not octal.
std::optional<std::vector<TreeEntry>> parse_tree(std::string_view data, std::size_t hash_size);

// The raw id of the tree a commit names (its first line), or nullopt.
std::optional<std::string> commit_tree(std::string_view commit, std::size_t hash_size);

// One pack: its index (version 2) and its entries, read from `idx` and
// `pack` (which must outlive it). `resolve` reads a delta's base named by
// id (REF_DELTA), which may be in another pack.
class Pack {
 public:
  Pack(std::string_view idx, std::string_view pack, std::size_t hash_size);
  // False where the index is not one of version 2 that fits its pack.
  [[nodiscard]] bool valid() const { return valid_; }
  // The entry's offset in the pack, or nullopt where the index has no `id`.
  [[nodiscard]] std::optional<std::uint64_t> find(std::string_view id) const;
  using Resolve = std::optional<Object> (*)(void* store, std::string_view id, int depth);
  [[nodiscard]] std::optional<Object> read_at(std::uint64_t offset, Resolve resolve, void* store,
                                              int depth) const;

 private:
  std::string_view idx_, pack_;
  std::size_t hash_size_ = 20;
  std::uint32_t count_ = 0;
  bool valid_ = false;
};

// A repository's object store: the packs and loose objects of `objects_dir`
// and of its alternates (five deep, as git), packs mapped when first looked in.
class Store {
 public:
  // Nullopt where the store cannot be read here (an alternate quoted or missing).
  static std::optional<Store> open(const std::string& objects_dir, std::size_t hash_size);
  Store(Store&&) noexcept;
  Store& operator=(Store&&) noexcept;
  ~Store();
  // The object named by the raw id `id`, or nullopt.
  std::optional<Object> read(std::string_view id);

 private:
  Store();
  struct Dir;
  std::vector<std::unique_ptr<Dir>> dirs_;
  std::size_t hash_size_ = 20;
  static std::optional<Object> resolve(void* store, std::string_view id, int depth);
  std::optional<Object> read(std::string_view id, int depth);
};

// 40 or 64 hex digits to their raw bytes; empty for anything else.
std::string raw_id(std::string_view hex);
std::string hex_id(std::string_view raw);

}  // namespace chock::workspace::git_objects
