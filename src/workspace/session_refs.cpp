#include "workspace/session_refs.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <optional>

#include "util/fd.hpp"
#include "util/fs.hpp"
#include "workspace/git.hpp"

namespace chock::workspace::session_refs {

namespace {

constexpr std::size_t kMaxPackedBytes = 64 << 20;
constexpr std::size_t kMaxLooseRefs = 100000;
constexpr int kMaxDepth = 16;

// Reads a loose ref file below `dir_fd`: a regular file of at most 4 KiB
// holding an object id. Anything else (a link, a FIFO, a symbolic ref) is not one.
std::string loose_value(int dir_fd, const char* name) {
  UniqueFd fd(::openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  struct stat st {};
  if (!fd || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > 4096) return {};
  char buf[4097];
  const ssize_t n = ::read(fd.get(), buf, sizeof buf - 1);
  if (n <= 0) return {};
  std::string value = git::chomp(std::string(buf, static_cast<std::size_t>(n)));
  return git::is_object_id(value) ? value : std::string();
}

// Walks a directory of loose refs; `prefix` is its ref name ("refs/heads/").
// `unusual` is set by anything git would read otherwise than as a branch's
// id: a link, a FIFO, a symbolic ref, bytes that are not an id, too deep or many.
void walk_loose(int dir_fd, const std::string& prefix, int depth, Refs& out, std::size_t& seen,
                bool& unusual) {
  if (depth > kMaxDepth) {
    unusual = true;
    ::close(dir_fd);
    return;
  }
  DIR* dir = ::fdopendir(dir_fd);
  if (dir == nullptr) {
    ::close(dir_fd);
    unusual = true;
    return;
  }
  while (dirent* e = ::readdir(dir)) {
    if (++seen > kMaxLooseRefs) {
      unusual = true;
      break;
    }
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    struct stat st {};
    if (::fstatat(::dirfd(dir), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
      unusual = true;
      continue;
    }
    if (S_ISDIR(st.st_mode)) {
      const int sub = ::openat(::dirfd(dir), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (sub >= 0)
        walk_loose(sub, prefix + name + "/", depth + 1, out, seen, unusual);
      else
        unusual = true;
    } else if (S_ISREG(st.st_mode) && is_ref_name(prefix + name)) {
      if (std::string value = loose_value(::dirfd(dir), e->d_name); !value.empty())
        out[prefix + name] = value;
      else
        unusual = true;
    } else {
      unusual = true;
    }
  }
  ::closedir(dir);
}

}  // namespace

bool is_ref_name(std::string_view name) {
  if (!name.starts_with("refs/") || name.size() > 1024 || name.ends_with("/") || name.ends_with(".") ||
      name.ends_with(".lock") || name.find("..") != std::string_view::npos ||
      name.find("//") != std::string_view::npos || name.find("/.") != std::string_view::npos ||
      name.find(".lock/") != std::string_view::npos || name.find("@{") != std::string_view::npos)
    return false;
  for (char c : name) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u == 0x7f || std::string_view("~^:?*[\\").find(c) != std::string_view::npos)
      return false;
  }
  return true;
}

Refs parse_packed(std::string_view text) {
  Refs refs;
  while (!text.empty()) {
    const auto nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    const auto space = line.find(' ');
    if (line.empty() || line[0] == '#' || line[0] == '^' || space == std::string_view::npos) continue;
    std::string id(line.substr(0, space));
    std::string_view name = line.substr(space + 1);
    if (git::is_object_id(id) && is_ref_name(name)) refs[std::string(name)] = std::move(id);
  }
  return refs;
}

std::string packed_text(const Refs& refs) {
  std::string text = "# pack-refs with: sorted \n";
  for (const auto& [name, id] : refs) text.append(id).append(" ").append(name).append("\n");
  return text;
}

Refs merge(const Refs& before, const Refs& real, const Refs& session) {
  Refs out;
  auto value = [](const Refs& r, const std::string& name) {
    auto it = r.find(name);
    return it == r.end() ? std::string() : it->second;
  };
  std::map<std::string, int> names;
  for (const Refs* r : {&before, &real, &session})
    for (const auto& [name, id] : *r) names[name] = 0;
  for (const auto& [name, unused] : names) {
    const std::string was = value(before, name), now = value(real, name), mine = value(session, name);
    std::string result;
    if (mine == was)
      result = now;  // untouched by the session (or absent from both): the repository's
    else
      result = mine;  // made, moved or deleted by the session
    if (!result.empty()) out[name] = result;
  }
  return out;
}

Expected<Refs> read(const Session& s) {
  Refs refs;
  auto packed = fs::read_file_nofollow(s.common() + "/packed-refs", kMaxPackedBytes);
  if (packed) refs = parse_packed(*packed);
  const int dir = ::open((s.common() + "/refs").c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dir >= 0) {
    Refs loose;
    std::size_t seen = 0;
    bool unusual = false;  // the session's own: what git inside would not read as a ref is left out
    walk_loose(dir, "refs/", 0, loose, seen, unusual);
    for (auto& [name, id] : loose) refs[name] = std::move(id);
  }
  return refs;
}

std::optional<Refs> repository_refs_from_files(const std::string& common_dir) {
  UniqueFd common(::open(common_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  struct stat st {};
  if (!common || ::fstatat(common.get(), "reftable", &st, AT_SYMLINK_NOFOLLOW) == 0) return std::nullopt;
  // The loose refs before packed-refs, as git reads them: a `git pack-refs`
  // between the two moves a ref from the first read into the second, never
  // out of both.
  Refs loose;
  std::size_t seen = 0;
  bool unusual = false;
  for (const char* d : {"refs/heads", "refs/tags"}) {
    const int fd = ::openat(common.get(), d, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
      if (errno == ENOENT) continue;
      return std::nullopt;
    }
    walk_loose(fd, std::string(d) + "/", 1, loose, seen, unusual);
    if (unusual) return std::nullopt;
  }
  Refs refs;
  if (auto text = fs::read_file_nofollow(common_dir + "/packed-refs", kMaxPackedBytes); text) {
    for (auto& [name, id] : parse_packed(*text))
      if (name.starts_with("refs/heads/") || name.starts_with("refs/tags/")) refs[name] = std::move(id);
  } else if (text.error().code != ENOENT) {
    return std::nullopt;  // a link, not a file, too large: git reads it as it reads it
  }
  for (auto& [name, id] : loose) refs[name] = std::move(id);
  return refs;
}

Expected<Refs> repository_refs(const std::string& common_dir) {
  auto out = git::capture({"for-each-ref", "--format=%(objectname) %(refname)", "refs/heads/", "refs/tags/"},
                          git::repo_env(common_dir), "list the repository's branches and tags");
  if (!out) return std::move(out).error();
  return parse_packed(*out);
}

Expected<Refs> changed(const Session& s) {
  // Against what Chock gave the last call, not the repository now: a branch
  // that moved since (an apply moves one) is not the session's doing.
  Refs given;
  if (auto text = fs::read_file_nofollow(s.dir + "/git/view/packed-refs", kMaxPackedBytes); text)
    given = parse_packed(*text);
  auto refs = read(s);
  if (!refs) return std::move(refs).error();
  Refs out;
  for (const auto& [name, id] : *refs) {
    auto it = given.find(name);
    if (it == given.end() || it->second != id) out[name] = id;
  }
  return out;
}

Expected<std::vector<std::string>> own_branches_and_tags(const Session& s) {
  auto refs = changed(s);
  if (!refs) return std::move(refs).error();
  std::vector<std::string> own;
  for (const auto& [name, id] : *refs)
    if (name.starts_with("refs/heads/") || name.starts_with("refs/tags/")) own.push_back(name);
  return own;
}

}  // namespace chock::workspace::session_refs
