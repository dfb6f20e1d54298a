#include "workspace/index_file.hpp"

#include <algorithm>
#include <charconv>

#include "util/io.hpp"
#include "util/sha256.hpp"

namespace chock::workspace::index_file {

namespace {

// An entry's fixed part: ctime, mtime, dev, ino, mode, uid, gid, size
// (32 bits each), the object name, 16 bits of flags; 16 more when the
// flags say "extended" (version 3).
constexpr std::size_t kStatBytes = 40;
constexpr std::uint16_t kExtended = 0x4000;
constexpr std::uint16_t kStageMask = 0x3000;
constexpr std::uint16_t kNameMask = 0x0fff;
constexpr int kMaxTreeDepth = 4096;

std::uint32_t be32(std::string_view b, std::size_t at) {
  std::uint32_t v = 0;
  for (std::size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(b[at + i]);
  return v;
}

std::uint16_t be16(std::string_view b, std::size_t at) {
  return static_cast<std::uint16_t>((static_cast<unsigned char>(b[at]) << 8) |
                                    static_cast<unsigned char>(b[at + 1]));
}

void put32(std::string& out, std::uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>((v >> shift) & 0xff));
}

// One directory of the cache tree: its name (relative to its parent), how
// many entries it covers (negative: invalid, no object name follows), its
// tree's object name and its subdirectories, in the order git wrote them.
struct TreeNode {
  std::string_view name;
  long long entries = -1;
  std::string_view id;
  std::vector<TreeNode> children;
};

bool parse_number(std::string_view& in, char end, long long& out) {
  const auto stop = in.find(end);
  if (stop == std::string_view::npos || stop == 0) return false;
  const auto [ptr, ec] = std::from_chars(in.data(), in.data() + stop, out);
  if (ec != std::errc() || ptr != in.data() + stop) return false;
  in.remove_prefix(stop + 1);
  return true;
}

bool parse_tree(std::string_view& in, std::size_t hash_size, int depth, TreeNode& node) {
  if (depth > kMaxTreeDepth) return false;
  const auto nul = in.find('\0');
  if (nul == std::string_view::npos) return false;
  node.name = in.substr(0, nul);
  in.remove_prefix(nul + 1);
  long long subtrees = 0;
  if (!parse_number(in, ' ', node.entries) || !parse_number(in, '\n', subtrees) || subtrees < 0 ||
      static_cast<unsigned long long>(subtrees) > in.size())
    return false;
  if (node.entries >= 0) {
    if (in.size() < hash_size) return false;
    node.id = in.substr(0, hash_size);
    in.remove_prefix(hash_size);
  }
  node.children.resize(static_cast<std::size_t>(subtrees));
  for (auto& child : node.children)
    if (!parse_tree(in, hash_size, depth + 1, child)) return false;
  return true;
}

// Marks the root and each directory on the way to `path` that the cache tree has invalid.
void invalidate(TreeNode& root, std::string_view path) {
  TreeNode* node = &root;
  node->entries = -1;
  for (auto slash = path.find('/'); slash != std::string_view::npos; slash = path.find('/')) {
    const std::string_view dir = path.substr(0, slash);
    path.remove_prefix(slash + 1);
    auto it = std::find_if(node->children.begin(), node->children.end(),
                           [dir](const TreeNode& c) { return c.name == dir; });
    if (it == node->children.end()) return;
    node = &*it;
    node->entries = -1;
  }
}

void write_tree(const TreeNode& node, std::string& out) {
  out.append(node.name).push_back('\0');
  out.append(node.entries < 0 ? "-1" : std::to_string(node.entries));
  out.append(" ").append(std::to_string(node.children.size())).push_back('\n');
  if (node.entries >= 0) out.append(node.id);
  for (const auto& child : node.children) write_tree(child, out);
}

}  // namespace

std::optional<std::uint32_t> entry_count(std::string_view header) {
  if (header.size() < 12 || header.substr(0, 4) != "DIRC") return std::nullopt;
  return be32(header, 8);
}

bool plain_version(std::string_view header) {
  return entry_count(header) && (be32(header, 4) == 2 || be32(header, 4) == 3);
}

std::optional<Index> parse(std::string_view b, std::size_t hash_size) {
  if ((hash_size != 20 && hash_size != 32) || b.size() < 12 + hash_size || b.substr(0, 4) != "DIRC")
    return std::nullopt;
  Index index;
  index.version = be32(b, 4);
  if (index.version != 2 && index.version != 3) return std::nullopt;
  const std::uint32_t count = be32(b, 8);
  const std::size_t end = b.size() - hash_size;  // where the trailer starts
  const std::size_t fixed = kStatBytes + hash_size + 2;
  if (count > end / (fixed + 2)) return std::nullopt;
  index.entries.reserve(count);
  std::size_t at = 12;
  for (std::uint32_t i = 0; i < count; ++i) {
    if (at + fixed > end) return std::nullopt;
    const std::uint16_t flags = be16(b, at + kStatBytes + hash_size);
    if ((flags & kStageMask) != 0 || ((flags & kExtended) != 0 && index.version < 3)) return std::nullopt;
    const std::size_t head = fixed + ((flags & kExtended) != 0 ? 2 : 0);
    if (at + head > end) return std::nullopt;
    // The name ends at its NUL (its length is in the flags only up to 0xfff);
    // one to eight NULs pad the entry to a multiple of eight bytes.
    const std::size_t nul = b.find('\0', at + head);
    if (nul == std::string_view::npos || nul >= end) return std::nullopt;
    const std::size_t name_length = nul - (at + head);
    if (name_length == 0 || (flags & kNameMask) != std::min<std::size_t>(name_length, kNameMask))
      return std::nullopt;
    const std::size_t size = (head + name_length + 8) & ~static_cast<std::size_t>(7);
    if (at + size > end) return std::nullopt;
    Entry e{b.substr(at + head, name_length), b.substr(at, size)};
    if (!index.entries.empty() && !(index.entries.back().name < e.name)) return std::nullopt;
    index.entries.push_back(e);
    at += size;
  }
  while (at < end) {
    if (at + 8 > end) return std::nullopt;
    const std::string_view signature = b.substr(at, 4);
    const std::uint32_t size = be32(b, at + 4);
    if (size > end - at - 8) return std::nullopt;
    // An extension named in lower case must be understood ("link", "sdir").
    if (signature[0] < 'A' || signature[0] > 'Z') return std::nullopt;
    if (signature == "TREE") index.tree = b.substr(at + 8, size);
    at += 8 + size;
  }
  return index;
}

Expected<bool> write_merged(int fd, const std::string& path, const Index& donor, const Index& changed,
                            const std::set<std::string>& gone, std::size_t hash_size) {
  std::string tree;
  if (!donor.tree.empty()) {
    std::string_view in = donor.tree;
    TreeNode root;
    if (!parse_tree(in, hash_size, 0, root) || !in.empty()) return false;
    for (const auto& e : changed.entries) invalidate(root, e.name);
    for (const auto& p : gone) invalidate(root, p);
    tree = "TREE";
    put32(tree, 0);
    write_tree(root, tree);
    const auto size = static_cast<std::uint32_t>(tree.size() - 8);
    for (int i = 0; i < 4; ++i)
      tree[4 + static_cast<std::size_t>(i)] = static_cast<char>((size >> (24 - 8 * i)) & 0xff);
  }
  // The entries as runs of bytes: the donor's that stay side by side are one.
  std::vector<std::string_view> pieces{{}};
  std::uint32_t count = 0;
  auto keep = [&](const Entry& e) {
    std::string_view& last = pieces.back();
    if (pieces.size() > 1 && last.data() + last.size() == e.bytes.data())
      last = std::string_view(last.data(), last.size() + e.bytes.size());
    else
      pieces.push_back(e.bytes);
    ++count;
  };
  auto d = donor.entries.begin();
  auto c = changed.entries.begin();
  while (d != donor.entries.end() || c != changed.entries.end()) {
    if (c == changed.entries.end() || (d != donor.entries.end() && d->name < c->name)) {
      if (gone.empty() || gone.count(std::string(d->name)) == 0) keep(*d);
      ++d;
    } else {
      if (d != donor.entries.end() && d->name == c->name) ++d;
      keep(*c++);
    }
  }
  std::string head("DIRC");
  put32(head, std::max(donor.version, changed.version));
  put32(head, count);
  pieces.front() = head;
  if (!tree.empty()) pieces.emplace_back(tree);
  const std::string trailer = digest_of(pieces, hash_size);
  pieces.emplace_back(trailer);
  for (const auto piece : pieces)
    if (auto r = write_all(fd, piece, path); !r) return std::move(r).error();
  return true;
}

}  // namespace chock::workspace::index_file
