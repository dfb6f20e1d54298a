// libFuzzer: arbitrary bytes as a repository's objects, which Chock reads on
// the host side when it derives a base (git_objects.hpp), and which a call's
// commits, once applied, may have shaped. The first byte chooses a delta on
// a base, a tree, a loose object, or a pack with its index (the index's size
// in the next four bytes). A crash or sanitizer report is a bug; so is a
// delta's result of another size than it announced, a tree entry with an id
// of another size or a name that is not one, a loose object's data of
// another size than its header says.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "workspace/git_objects.hpp"

namespace go = chock::workspace::git_objects;

namespace {

std::optional<go::Object> no_base(void*, std::string_view, int) {
  return std::nullopt;
}

std::uint32_t be32(std::string_view s) {
  return (std::uint32_t{static_cast<unsigned char>(s[0])} << 24) |
         (std::uint32_t{static_cast<unsigned char>(s[1])} << 16) |
         (std::uint32_t{static_cast<unsigned char>(s[2])} << 8) | static_cast<unsigned char>(s[3]);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 4) {
    case 0: {  // base, NUL, delta
      const std::size_t nul = bytes.find('\0');
      if (nul == std::string_view::npos) return 0;
      auto out = go::apply_delta(bytes.substr(0, nul), bytes.substr(nul + 1), 1 << 16);
      if (out && out->size() > (1 << 16)) std::abort();
      return 0;
    }
    case 1: {
      for (std::size_t hash : {20U, 32U}) {
        auto entries = go::parse_tree(bytes, hash);
        if (!entries) continue;
        for (const auto& e : *entries)
          if (e.id.size() != hash || e.name.empty() || e.name == "." || e.name == ".." ||
              e.name.find('/') != std::string_view::npos || e.name.find('\0') != std::string_view::npos)
            std::abort();
      }
      (void)go::commit_tree(bytes, 20);
      return 0;
    }
    case 2: {
      auto o = go::parse_loose(bytes);
      if (o && o->data.size() > bytes.size()) std::abort();
      (void)go::inflate_exactly(bytes, bytes.size() * 2);
      return 0;
    }
    default: {  // a pack: the index's size, the index, the pack
      if (bytes.size() < 4) return 0;
      const std::size_t idx_size = be32(bytes);
      if (idx_size > bytes.size() - 4) return 0;
      const std::string_view idx = bytes.substr(4, idx_size), pack = bytes.substr(4 + idx_size);
      const go::Pack p(idx, pack, 20);
      if (!p.valid()) return 0;
      // Every name the index lists, read from the pack; then offsets at random.
      const std::size_t count = be32(idx.substr(8 + 255 * 4));
      for (std::size_t i = 0; i < count && i < 64; ++i) {
        const std::string_view id = idx.substr(8 + 256 * 4 + i * 20, 20);
        if (auto at = p.find(id)) (void)p.read_at(*at, &no_base, nullptr, 0);
      }
      for (std::size_t at = 0; at < pack.size() && at < 4096; at += 97)
        (void)p.read_at(at, &no_base, nullptr, 0);
      return 0;
    }
  }
}
