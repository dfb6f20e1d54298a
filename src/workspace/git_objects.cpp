// Git's object formats read from bytes (git_objects.hpp): no file is opened here.
#include "workspace/git_objects.hpp"

#include <zlib.h>

#include <algorithm>
#include <climits>
#include <cstring>

#include "util/hex.hpp"

namespace chock::workspace::git_objects {

namespace {

// A delta chain this long is not one git wrote.
constexpr int kMaxChain = 10000;

std::uint32_t be32(std::string_view s, std::size_t at) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data() + at);
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) | p[3];
}

// A little-endian base-128 number (a delta's sizes), or nullopt.
std::optional<std::uint64_t> delta_size(std::string_view d, std::size_t& at) {
  std::uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (at >= d.size()) return std::nullopt;
    const auto c = static_cast<unsigned char>(d[at++]);
    v |= std::uint64_t{c & 0x7fU} << shift;
    if ((c & 0x80U) == 0) return v;
  }
  return std::nullopt;
}

std::uint32_t canonical_mode(std::uint32_t mode) {
  switch (mode & 0170000) {
    case 0100000:
      return 0100000 | ((mode & 0100) != 0 ? 0755 : 0644);
    case 0120000:
      return 0120000;
    case 040000:
      return kTreeMode;
    default:
      return 0160000;
  }
}

}  // namespace

std::string raw_id(std::string_view hex) {
  return hex.size() == 40 || hex.size() == 64 ? bytes_of_hex(hex) : std::string();
}

std::string hex_id(std::string_view raw) {
  return hex_of(raw);
}

std::optional<std::string> apply_delta(std::string_view base, std::string_view delta, std::size_t max_bytes) {
  std::size_t at = 0;
  const auto source = delta_size(delta, at);
  const auto target = delta_size(delta, at);
  if (!source || !target || *source != base.size() || *target > max_bytes) return std::nullopt;
  std::string out;
  out.reserve(static_cast<std::size_t>(*target));
  while (at < delta.size()) {
    const auto op = static_cast<unsigned char>(delta[at++]);
    if ((op & 0x80U) != 0) {  // copy from the base: offset and size in the bytes the flags name
      std::uint64_t offset = 0, size = 0;
      for (int i = 0; i < 4; ++i) {
        if ((op & (1U << i)) == 0) continue;
        if (at >= delta.size()) return std::nullopt;
        offset |= std::uint64_t{static_cast<unsigned char>(delta[at++])} << (8 * i);
      }
      for (int i = 0; i < 3; ++i) {
        if ((op & (0x10U << i)) == 0) continue;
        if (at >= delta.size()) return std::nullopt;
        size |= std::uint64_t{static_cast<unsigned char>(delta[at++])} << (8 * i);
      }
      if (size == 0) size = 0x10000;
      if (offset > base.size() || size > base.size() - offset || size > *target - out.size())
        return std::nullopt;
      out.append(base.substr(static_cast<std::size_t>(offset), static_cast<std::size_t>(size)));
    } else if (op != 0) {  // insert the next `op` bytes
      if (op > delta.size() - at || op > *target - out.size()) return std::nullopt;
      out.append(delta.substr(at, op));
      at += op;
    } else {
      return std::nullopt;  // reserved
    }
  }
  if (out.size() != *target) return std::nullopt;
  return out;
}

std::optional<std::string> inflate_exactly(std::string_view bytes, std::size_t size) {
  if (size > kMaxObjectBytes) return std::nullopt;
  z_stream z{};
  if (::inflateInit(&z) != Z_OK) return std::nullopt;
  std::string out(size + 1, '\0');  // one byte more: a stream longer than announced is seen
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  z.avail_in = static_cast<uInt>(std::min<std::size_t>(bytes.size(), UINT_MAX));
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int rc = ::inflate(&z, Z_FINISH);
  const std::size_t produced = z.total_out;
  ::inflateEnd(&z);
  if (rc != Z_STREAM_END || produced != size) return std::nullopt;
  out.resize(size);
  return out;
}

std::optional<Object> parse_loose(std::string_view inflated) {
  const std::size_t space = inflated.find(' ');
  const std::size_t nul = inflated.find('\0');
  if (space == std::string_view::npos || nul == std::string_view::npos || space > nul) return std::nullopt;
  const std::string_view type = inflated.substr(0, space);
  Object o;
  if (type == "commit") {
    o.type = Type::commit;
  } else if (type == "tree") {
    o.type = Type::tree;
  } else if (type == "blob") {
    o.type = Type::blob;
  } else if (type == "tag") {
    o.type = Type::tag;
  } else {
    return std::nullopt;
  }
  const std::string_view digits = inflated.substr(space + 1, nul - space - 1);
  if (digits.empty() || digits.size() > 12) return std::nullopt;
  std::size_t size = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    size = size * 10 + static_cast<std::size_t>(c - '0');
  }
  if (size != inflated.size() - nul - 1) return std::nullopt;
  o.data = std::string(inflated.substr(nul + 1));
  return o;
}

std::optional<std::vector<TreeEntry>> parse_tree(std::string_view data, std::size_t hash_size) {
  std::vector<TreeEntry> out;
  std::size_t at = 0;
  while (at < data.size()) {
    const std::size_t space = data.find(' ', at);
    if (space == std::string_view::npos || space == at || space - at > 7) return std::nullopt;
    std::uint32_t mode = 0;
    for (std::size_t i = at; i < space; ++i) {
      if (data[i] < '0' || data[i] > '7') return std::nullopt;
      mode = (mode << 3) | static_cast<std::uint32_t>(data[i] - '0');
    }
    const std::size_t nul = data.find('\0', space + 1);
    if (nul == std::string_view::npos || nul == space + 1 || hash_size > data.size() - nul - 1)
      return std::nullopt;
    const std::string_view name = data.substr(space + 1, nul - space - 1);
    if (name == "." || name == ".." || name.find('/') != std::string_view::npos) return std::nullopt;
    out.push_back({canonical_mode(mode), name, data.substr(nul + 1, hash_size)});
    at = nul + 1 + hash_size;
  }
  return out;
}

std::optional<std::string> commit_tree(std::string_view commit, std::size_t hash_size) {
  if (!commit.starts_with("tree ") || commit.size() < 5 + 2 * hash_size + 1 ||
      commit[5 + 2 * hash_size] != '\n')
    return std::nullopt;
  std::string raw = raw_id(commit.substr(5, 2 * hash_size));
  if (raw.empty()) return std::nullopt;
  return raw;
}

Pack::Pack(std::string_view idx, std::string_view pack, std::size_t hash_size)
    : idx_(idx), pack_(pack), hash_size_(hash_size) {
  constexpr std::size_t kHeader = 8 + 256 * 4;
  if (idx.size() < kHeader + 2 * hash_size || be32(idx, 0) != 0xff744f63 || be32(idx, 4) != 2) return;
  count_ = be32(idx, 8 + 255 * 4);
  const std::uint64_t tables = std::uint64_t{count_} * (hash_size + 8);
  if (tables > idx.size() - kHeader - 2 * hash_size) return;
  if ((idx.size() - kHeader - 2 * hash_size - tables) % 8 != 0) return;  // the 8-byte offsets
  if (pack.size() < 12 + hash_size || pack.substr(0, 4) != "PACK") return;
  const std::uint32_t version = be32(pack, 4);
  valid_ = version == 2 || version == 3;
}

std::optional<std::uint64_t> Pack::find(std::string_view id) const {
  if (!valid_ || id.size() != hash_size_) return std::nullopt;
  const auto first = static_cast<unsigned char>(id[0]);
  std::uint32_t lo = first == 0 ? 0 : be32(idx_, 8 + (first - 1) * 4U);
  std::uint32_t hi = be32(idx_, 8 + first * 4U);
  if (hi > count_ || lo > hi) return std::nullopt;
  const std::size_t names = 8 + 256 * 4;
  while (lo < hi) {
    const std::uint32_t mid = lo + (hi - lo) / 2;
    const int c = std::memcmp(idx_.data() + names + std::size_t{mid} * hash_size_, id.data(), hash_size_);
    if (c == 0) {
      const std::size_t offsets = names + std::size_t{count_} * (hash_size_ + 4);
      const std::uint32_t small = be32(idx_, offsets + std::size_t{mid} * 4);
      if ((small & 0x80000000U) == 0) return small;
      const std::size_t large = offsets + std::size_t{count_} * 4 + std::size_t{small & 0x7fffffffU} * 8;
      if (large + 8 > idx_.size() - 2 * hash_size_) return std::nullopt;
      return (std::uint64_t{be32(idx_, large)} << 32) | be32(idx_, large + 4);
    }
    if (c < 0) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return std::nullopt;
}

std::optional<Object> Pack::read_at(std::uint64_t offset, Resolve resolve, void* store, int depth) const {
  if (!valid_ || depth > kMaxBaseDepth) return std::nullopt;
  const std::size_t end = pack_.size() - hash_size_;  // the trailer is no entry's
  std::vector<std::string> deltas;
  std::optional<Object> base;
  for (int chain = 0; !base; ++chain) {
    if (chain > kMaxChain || offset < 12 || offset >= end) return std::nullopt;
    std::size_t at = static_cast<std::size_t>(offset);
    auto c = static_cast<unsigned char>(pack_[at++]);
    const unsigned type = (c >> 4) & 7U;
    std::uint64_t size = c & 15U;
    for (int shift = 4; (c & 0x80U) != 0; shift += 7) {
      if (at >= end || shift > 57) return std::nullopt;
      c = static_cast<unsigned char>(pack_[at++]);
      size |= std::uint64_t{c & 0x7fU} << shift;
    }
    if (size > kMaxObjectBytes) return std::nullopt;
    std::uint64_t next = 0;
    std::string base_id;
    if (type == 6) {  // OFS_DELTA: the base this far before the entry
      if (at >= end) return std::nullopt;
      c = static_cast<unsigned char>(pack_[at++]);
      std::uint64_t back = c & 0x7fU;
      while ((c & 0x80U) != 0) {
        if (at >= end || back > (std::uint64_t{1} << 56)) return std::nullopt;
        c = static_cast<unsigned char>(pack_[at++]);
        back = ((back + 1) << 7) | (c & 0x7fU);
      }
      if (back == 0 || back > offset) return std::nullopt;
      next = offset - back;
    } else if (type == 7) {  // REF_DELTA: the base named by id
      if (hash_size_ > end - at) return std::nullopt;
      base_id = std::string(pack_.substr(at, hash_size_));
      at += hash_size_;
    } else if (type < 1 || type > 4) {
      return std::nullopt;
    }
    auto data = inflate_exactly(pack_.substr(at, end - at), static_cast<std::size_t>(size));
    if (!data) return std::nullopt;
    if (type >= 1 && type <= 4) {
      base = Object{static_cast<Type>(type), std::move(*data)};
      break;
    }
    deltas.push_back(std::move(*data));
    if (type == 6) {
      offset = next;
    } else if (auto here = find(base_id)) {
      offset = *here;
    } else {
      base = resolve(store, base_id, depth + 1);
      if (!base) return std::nullopt;
    }
  }
  for (auto d = deltas.rbegin(); d != deltas.rend(); ++d) {
    auto applied = apply_delta(base->data, *d, kMaxObjectBytes);
    if (!applied) return std::nullopt;
    base->data = std::move(*applied);
  }
  return base;
}

}  // namespace chock::workspace::git_objects
