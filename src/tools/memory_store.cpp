#include "tools/memory_store.hpp"

#include "util/escape.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "util/fd.hpp"
#include "util/io.hpp"

namespace chock::tools {

namespace {

constexpr const char* kMagic = "chock-note 1\n";
constexpr std::size_t kMaxFileBytes = kMaxNoteVersions * (kMaxNoteBytes + 1024);

Error limit(const std::string& what) {
  return Error{what, "", 0, Errc::bad_config};
}

// Reads a note file (no link followed), every version newest first.
Expected<std::vector<Note>> load(const std::string& dir, const std::string& name) {
  const std::string path = dir + "/" + name;
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) {
    if (errno == ENOENT) return std::vector<Note>{};
    return sys_error("open", path);
  }
  std::string text;
  char buf[65536];
  for (ssize_t n; (n = ::read(fd.get(), buf, sizeof buf)) > 0;) {
    text.append(buf, static_cast<std::size_t>(n));
    if (text.size() > kMaxFileBytes) return Error{"the note file is larger than any note can be", path};
  }
  std::vector<Note> out;
  std::size_t at = 0;
  auto bad = [&] { return Error{"the note file is not in Chock's format", path}; };
  while (at < text.size()) {
    if (text.compare(at, std::char_traits<char>::length(kMagic), kMagic) != 0) return bad();
    at += std::char_traits<char>::length(kMagic);
    Note n;
    std::size_t bytes = 0;
    for (;;) {
      const std::size_t end = text.find('\n', at);
      if (end == std::string::npos) return bad();
      const std::string line = text.substr(at, end - at);
      at = end + 1;
      if (line.empty()) break;
      const std::size_t colon = line.find(": ");
      if (colon == std::string::npos) return bad();
      const std::string key = line.substr(0, colon), value = line.substr(colon + 2);
      if (key == "name")
        n.name = value;
      else if (key == "kind")
        n.kind = value;
      else if (key == "version")
        n.version = std::atoi(value.c_str());
      else if (key == "time")
        n.time = value;
      else if (key == "session")
        n.session = value;
      else if (key == "description")
        n.description = value;
      else if (key == "bytes")
        bytes = static_cast<std::size_t>(std::strtoull(value.c_str(), nullptr, 10));
    }
    if (bytes > kMaxNoteBytes || at + bytes + 1 > text.size() || text[at + bytes] != '\n') return bad();
    n.body = text.substr(at, bytes);
    at += bytes + 1;
    out.push_back(std::move(n));
  }
  return out;
}

std::string render(const Note& n) {
  return std::string(kMagic) + "name: " + n.name + "\nkind: " + n.kind +
         "\nversion: " + std::to_string(n.version) + "\ntime: " + n.time + "\nsession: " + n.session +
         "\nbytes: " + std::to_string(n.body.size()) + "\ndescription: " + n.description + "\n\n" + n.body +
         "\n";
}

}  // namespace

Expected<void> check_name(std::string_view name) {
  if (name.empty() || name.size() > kMaxNameBytes)
    return limit("a note's name is 1 to " + std::to_string(kMaxNameBytes) + " bytes");
  for (char c : name)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-'))
      return limit("a note's name is made of a-z, 0-9, '_' and '-', not '" + printable(std::string(name)) +
                   "'");
  return {};
}

Expected<void> check_kind(std::string_view kind) {
  for (const char* k : kNoteKinds)
    if (kind == k) return {};
  return limit(
      "a note's kind is one of insight, code_fact, convention, gotcha, dead_end, environment, not '" +
      printable(std::string(kind)) + "'");
}

Expected<void> check_description(std::string_view text) {
  if (text.empty() || text.size() > kMaxDescriptionBytes)
    return limit("a note's description is 1 to " + std::to_string(kMaxDescriptionBytes) + " bytes");
  for (char c : text)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
      return limit("a note's description is one line, without control characters");
  return {};
}

Expected<std::vector<Note>> list_notes(const std::string& dir) {
  std::vector<Note> out;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return sys_error("open the knowledgebase", dir);
  std::vector<std::string> names;
  while (dirent* e = ::readdir(d))
    if (check_name(e->d_name)) names.emplace_back(e->d_name);
  ::closedir(d);
  std::sort(names.begin(), names.end());
  for (const auto& name : names) {
    auto versions = load(dir, name);
    if (!versions) return std::move(versions).error();
    if (versions->empty()) continue;
    Note newest = std::move(versions->front());
    newest.body.clear();
    out.push_back(std::move(newest));
  }
  return out;
}

Expected<Note> read_note(const std::string& dir, const std::string& name, std::optional<int> version) {
  if (auto ok = check_name(name); !ok) return std::move(ok).error();
  auto versions = load(dir, name);
  if (!versions) return std::move(versions).error();
  if (versions->empty()) return Error{"there is no note named " + name, "", 0, Errc::bad_config};
  if (!version) return versions->front();
  for (auto& v : *versions)
    if (v.version == *version) return v;
  return Error{"the note " + name + " has no version " + std::to_string(*version) + " (it has 1 to " +
                   std::to_string(versions->front().version) + ")",
               "", 0, Errc::bad_config};
}

Expected<int> write_note(const std::string& dir, const Note& note) {
  if (auto ok = check_name(note.name); !ok) return std::move(ok).error();
  if (auto ok = check_kind(note.kind); !ok) return std::move(ok).error();
  if (auto ok = check_description(note.description); !ok) return std::move(ok).error();
  if (note.body.size() > kMaxNoteBytes)
    return limit("a note's version is at most " + std::to_string(kMaxNoteBytes / 1024) +
                 " KiB; this one is " + std::to_string(note.body.size()) + " bytes");
  auto versions = load(dir, note.name);
  if (!versions) return std::move(versions).error();
  if (versions->empty()) {
    auto all = list_notes(dir);
    if (!all) return std::move(all).error();
    if (all->size() >= kMaxNoteNames)
      return limit("the knowledgebase holds " + std::to_string(kMaxNoteNames) +
                   " notes, the most it keeps: write a new version of one of them instead");
  }
  if (versions->size() >= kMaxNoteVersions)
    return limit("the note " + note.name + " has " + std::to_string(kMaxNoteVersions) +
                 " versions, the most kept, and the oldest is never dropped to make room");
  Note fresh = note;
  fresh.version = versions->empty() ? 1 : versions->front().version + 1;
  std::string text = render(fresh);
  for (const auto& v : *versions) text += render(v);
  // Through a temporary file and rename: a reader never sees half a note.
  const std::string path = dir + "/" + note.name, tmp = dir + "/." + note.name + ".tmp";
  UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644));
  if (!fd) return sys_error("write", tmp);
  if (auto w = write_all(fd.get(), text, tmp); !w) return std::move(w).error();
  if (::fsync(fd.get()) != 0) return sys_error("fsync", tmp);
  fd.reset();
  if (::rename(tmp.c_str(), path.c_str()) != 0) return sys_error("rename", path);
  return fresh.version;
}

Config memory_call(const std::string& tool, const std::string& dir, const std::vector<std::string>& args) {
  Config c;
  c.argv = {kMemoryToolInside, "memory-tool"};
  c.argv.insert(c.argv.end(), args.begin(), args.end());
  c.env = std::vector<std::string>{"PATH=/usr/bin:/bin", "LANG=C.UTF-8"};
  c.binds.push_back(Bind{tool, kMemoryToolInside, Access::read_only_file});
  c.binds.push_back(Bind{dir, kMemoryInside, Access::read_write});
  c.network = Network::none;
  c.timeout = std::chrono::seconds(30);
  return c;
}

}  // namespace chock::tools
