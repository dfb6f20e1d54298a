// The object store of a repository (git_objects.hpp): its directories, the
// alternates', their packs mapped when first looked in, loose objects.
#include <dirent.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>

#include "util/fs.hpp"
#include "util/io.hpp"
#include "workspace/git_objects.hpp"

namespace chock::workspace::git_objects {

namespace {

// Alternates of alternates, as deep as git follows them.
constexpr int kMaxAlternates = 5;

struct PackFiles {
  MappedFile idx, pack;
  std::unique_ptr<Pack> reader;  // reads the two mappings above
};

}  // namespace

struct Store::Dir {
  std::string path;
  bool listed = false;
  std::vector<PackFiles> packs;
};

Store::Store() = default;
Store::Store(Store&&) noexcept = default;
Store& Store::operator=(Store&&) noexcept = default;
Store::~Store() = default;

std::optional<Store> Store::open(const std::string& objects_dir, std::size_t hash_size) {
  Store s;
  s.hash_size_ = hash_size;
  std::vector<std::pair<std::string, int>> todo{{objects_dir, 0}};
  std::vector<std::string> seen;
  while (!todo.empty()) {
    auto [dir, level] = todo.back();
    todo.pop_back();
    if (!fs::is_dir(dir)) return std::nullopt;  // git would warn and go on; git is asked
    char real[PATH_MAX];
    if (::realpath(dir.c_str(), real) == nullptr) return std::nullopt;
    if (std::find(seen.begin(), seen.end(), real) != seen.end()) continue;
    seen.emplace_back(real);
    auto d = std::make_unique<Dir>();
    d->path = real;
    s.dirs_.push_back(std::move(d));
    auto text = fs::read_file_nofollow(dir + "/info/alternates", 1 << 20);
    if (!text) {
      if (text.error().code == ENOENT) continue;
      return std::nullopt;
    }
    if (level >= kMaxAlternates) return std::nullopt;
    std::size_t at = 0;
    while (at < text->size()) {
      std::size_t nl = text->find('\n', at);
      if (nl == std::string::npos) nl = text->size();
      std::string line = text->substr(at, nl - at);
      at = nl + 1;
      if (line.empty() || line[0] == '#') continue;
      if (line[0] == '"') return std::nullopt;  // C-quoted: git's to read
      todo.emplace_back(line[0] == '/' ? line : std::string(real) + "/" + line, level + 1);
    }
  }
  return s;
}

std::optional<Object> Store::read(std::string_view id) {
  return read(id, 0);
}

std::optional<Object> Store::resolve(void* store, std::string_view id, int depth) {
  return static_cast<Store*>(store)->read(id, depth);
}

std::optional<Object> Store::read(std::string_view id, int depth) {
  if (id.size() != hash_size_ || depth > kMaxBaseDepth) return std::nullopt;
  for (auto& d : dirs_) {
    if (!d->listed) {
      d->listed = true;
      const std::string pack_dir = d->path + "/pack";
      if (DIR* listing = ::opendir(pack_dir.c_str())) {
        std::vector<std::string> names;
        while (dirent* e = ::readdir(listing)) {
          const std::string name = e->d_name;
          if (name.size() > 4 && name.ends_with(".idx")) names.push_back(name.substr(0, name.size() - 4));
        }
        ::closedir(listing);
        std::sort(names.begin(), names.end());
        for (const auto& n : names) {
          const std::string stem = std::string(pack_dir).append("/").append(n);
          auto idx = MappedFile::open(stem + ".idx", std::size_t{1} << 40, false);
          auto pack = MappedFile::open(stem + ".pack", std::size_t{1} << 44, false);
          if (!idx || !pack) continue;  // a pack being written, or removed since
          PackFiles p{std::move(*idx), std::move(*pack), nullptr};
          p.reader = std::make_unique<Pack>(p.idx.bytes(), p.pack.bytes(), hash_size_);
          if (p.reader->valid()) d->packs.push_back(std::move(p));
        }
      }
    }
    for (const auto& p : d->packs)
      if (auto at = p.reader->find(id)) return p.reader->read_at(*at, &Store::resolve, this, depth);
  }
  const std::string hex = hex_id(id);
  for (const auto& d : dirs_) {
    auto bytes =
        fs::read_file_nofollow(d->path + "/" + hex.substr(0, 2) + "/" + hex.substr(2), kMaxObjectBytes);
    if (!bytes) continue;
    // Inflated by steps: the size is in the header, inside the stream.
    z_stream z{};
    if (::inflateInit(&z) != Z_OK) return std::nullopt;
    std::string out;
    z.next_in = reinterpret_cast<Bytef*>(bytes->data());
    z.avail_in = static_cast<uInt>(bytes->size());
    int rc = Z_OK;
    while (rc == Z_OK && out.size() <= kMaxObjectBytes) {
      const std::size_t before = out.size();
      out.resize(before + 65536);
      z.next_out = reinterpret_cast<Bytef*>(out.data() + before);
      z.avail_out = 65536;
      rc = ::inflate(&z, Z_NO_FLUSH);
      out.resize(before + 65536 - z.avail_out);
    }
    ::inflateEnd(&z);
    if (rc != Z_STREAM_END) return std::nullopt;
    return parse_loose(out);
  }
  return std::nullopt;
}

}  // namespace chock::workspace::git_objects
