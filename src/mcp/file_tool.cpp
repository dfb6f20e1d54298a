#include "mcp/file_tool.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <linux/openat2.h>
#include <regex.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <iterator>
#include <vector>

#include "util/fd.hpp"
#include "util/json.hpp"
#include "util/split.hpp"
#include "util/syscalls.hpp"

namespace chock::mcp {

namespace {

constexpr std::uint64_t kBeneath = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;

Json error_of(const std::string& why) {
  return Json{{"error", why}};
}

// The path below the project that `path` names: "" for the project itself.
std::optional<std::string> relative_path(const std::string& path, const std::string& project,
                                         std::string& why) {
  if (path.empty() || path.find('\0') != std::string::npos) {
    why = "a path is a non-empty string";
    return std::nullopt;
  }
  std::string rel = path;
  if (path.starts_with('/')) {
    if (path == project) return std::string();
    if (!path.starts_with(project + "/")) {
      why = path + " is outside the project (" + project + "): the file tools reach only the project";
      return std::nullopt;
    }
    rel = path.substr(project.size() + 1);
  }
  while (rel.starts_with("./")) rel.erase(0, 2);
  if (rel == ".") rel.clear();
  return rel;
}

std::string errno_text(int e) {
  return std::strerror(e);
}

// Opens `path` below the project; EXDEV (a `..` or a link out of it) is said as such.
int open_below(int root, const std::string& rel, const std::string& path, std::uint64_t flags,
               std::string& why, std::uint64_t mode = 0) {
  const int fd = sys::openat2(root, rel.empty() ? "." : rel.c_str(), flags | O_CLOEXEC, mode, kBeneath);
  if (fd < 0) {
    if (errno == EXDEV || errno == ELOOP)
      why = path + " leads outside the project (through .. or a link): the file tools reach only the project";
    else
      why = path + ": " + errno_text(errno);
  }
  return fd;
}

bool read_whole(int fd, std::string& out, std::size_t cap) {
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) return true;
    out.append(buf, static_cast<std::size_t>(n));
    if (out.size() > cap) return true;
  }
}

bool write_whole(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

// A regular file's bytes, or why not (a FIFO is never waited on).
std::optional<std::string> file_bytes(int root, const std::string& rel, const std::string& path,
                                      std::string& why) {
  UniqueFd fd(open_below(root, rel, path, O_RDONLY | O_NONBLOCK, why));
  if (!fd) return std::nullopt;
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    why = path + " is not a regular file";
    return std::nullopt;
  }
  if (static_cast<std::size_t>(st.st_size) > kMaxFileToolBytes) {
    why = path + " is " + std::to_string(st.st_size) + " bytes, over the file tools' 8 MiB";
    return std::nullopt;
  }
  std::string bytes;
  if (!read_whole(fd.get(), bytes, kMaxFileToolBytes)) {
    why = path + ": " + errno_text(errno);
    return std::nullopt;
  }
  return bytes;
}

bool looks_binary(std::string_view bytes) {
  return bytes.substr(0, 8192).find('\0') != std::string_view::npos;
}

Json read_op(int root, const std::string& rel, const std::string& path, const Json& req) {
  std::string why;
  auto bytes = file_bytes(root, rel, path, why);
  if (!bytes) return error_of(why);
  if (looks_binary(*bytes))
    return error_of(path + " is a binary file of " + std::to_string(bytes->size()) + " bytes");
  const long offset = std::max<long>(1, req.value("offset", 1L));
  const long limit = std::max<long>(1, req.value("limit", 2000L));
  std::string content;
  long line = 1, shown = 0;
  bool cut = false;
  std::size_t at = 0;
  while (at < bytes->size() && shown < limit) {
    std::size_t nl = bytes->find('\n', at);
    const std::size_t end = nl == std::string::npos ? bytes->size() : nl + 1;
    if (line >= offset) {
      if (content.size() + (end - at) > kMaxReadAnswerBytes) {
        cut = true;
        break;
      }
      content.append(*bytes, at, end - at);
      ++shown;
    }
    ++line;
    at = end;
  }
  long total = static_cast<long>(std::count(bytes->begin(), bytes->end(), '\n'));
  if (!bytes->empty() && bytes->back() != '\n') ++total;
  return Json{{"content", content},
              {"first_line", offset},
              {"lines", shown},
              {"total_lines", total},
              {"truncated", cut || (offset + shown - 1 < total)}};
}

// The directory `rel` is in, opened (made first, each part below the project, when `make`).
int parent_dir(int root, const std::string& rel, const std::string& path, bool make, std::string& why) {
  const std::size_t slash = rel.rfind('/');
  const std::string dir = slash == std::string::npos ? std::string() : rel.substr(0, slash);
  if (make && !dir.empty()) {
    std::string sofar;
    for (std::size_t at = 0; at <= dir.size();) {
      std::size_t next = dir.find('/', at);
      if (next == std::string::npos) next = dir.size();
      sofar += (sofar.empty() ? "" : "/") + dir.substr(at, next - at);
      at = next + 1;
      UniqueFd up(open_below(root,
                             sofar.find('/') == std::string::npos ? "" : sofar.substr(0, sofar.rfind('/')),
                             path, O_PATH | O_DIRECTORY, why));
      if (!up) return -1;
      const std::string name = sofar.substr(sofar.rfind('/') == std::string::npos ? 0 : sofar.rfind('/') + 1);
      if (::mkdirat(up.get(), name.c_str(), 0755) != 0 && errno != EEXIST) {
        why = path;
        why += ": making " + sofar + ": " + errno_text(errno);
        return -1;
      }
    }
  }
  return open_below(root, dir, path, O_PATH | O_DIRECTORY, why);
}

std::string base_name(const std::string& rel) {
  const std::size_t slash = rel.rfind('/');
  return slash == std::string::npos ? rel : rel.substr(slash + 1);
}

// Writes `bytes` to `rel` whole: a new file beside it, renamed over it, so a
// reader never sees half; never through a link.
Json replace_file(int root, const std::string& rel, const std::string& path, const std::string& bytes,
                  mode_t mode) {
  std::string why;
  UniqueFd dir(parent_dir(root, rel, path, true, why));
  if (!dir) return error_of(why);
  const std::string name = base_name(rel);
  if (name.empty() || name == "." || name == "..") return error_of(path + " names no file");
  const std::string temp = "." + name + ".chock-" + std::to_string(::getpid());
  UniqueFd out(::openat(dir.get(), temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode));
  if (!out) return error_of(path + ": " + errno_text(errno));
  if (!write_whole(out.get(), bytes) || ::fchmod(out.get(), mode) != 0 ||
      ::renameat(dir.get(), temp.c_str(), dir.get(), name.c_str()) != 0) {
    const std::string e = errno_text(errno);
    ::unlinkat(dir.get(), temp.c_str(), 0);
    return error_of(path + ": " + e);
  }
  return Json{{"bytes", bytes.size()}};
}

mode_t mode_of(int root, const std::string& rel) {
  struct stat st {};
  UniqueFd fd(sys::openat2(root, rel.c_str(), O_PATH | O_CLOEXEC, 0, kBeneath | RESOLVE_NO_SYMLINKS));
  if (fd && ::fstat(fd.get(), &st) == 0 && S_ISREG(st.st_mode)) return st.st_mode & 0777;
  return 0644;
}

// What a write to `rel` writes: when its last part is a link, the file the
// link leads to (below the project, or an error), so a link is written
// through as a program would, never replaced and never followed out.
std::optional<std::string> written_path(int root, const std::string& rel, const std::string& path,
                                        std::string& why) {
  struct stat st {};
  if (::fstatat(root, rel.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISLNK(st.st_mode)) return rel;
  UniqueFd target(open_below(root, rel, path, O_PATH, why));
  if (!target) return std::nullopt;
  auto where = [](int fd) {
    char buf[4096];
    const std::string proc = "/proc/self/fd/" + std::to_string(fd);
    const ssize_t n = ::readlink(proc.c_str(), buf, sizeof buf);
    return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
  };
  const std::string top = where(root), at = where(target.get());
  if (top.empty() || !at.starts_with(top + "/")) {
    why = path + ": where its link leads could not be read";
    return std::nullopt;
  }
  return at.substr(top.size() + 1);
}

Json write_op(int root, const std::string& rel, const std::string& path, const Json& req) {
  const auto content = req.find("content");
  if (content == req.end() || !content->is_string()) return error_of("content is a string");
  if (rel.empty()) return error_of(path + " is the project's directory, not a file");
  std::string why;
  auto target = written_path(root, rel, path, why);
  if (!target) return error_of(why);
  return replace_file(root, *target, path, content->get<std::string>(), mode_of(root, *target));
}

Json edit_op(int root, const std::string& link_rel, const std::string& path, const Json& req) {
  const std::string old_string = req.value("old_string", std::string());
  const std::string new_string = req.value("new_string", std::string());
  if (old_string.empty()) return error_of("old_string is a non-empty string");
  std::string why;
  auto target = written_path(root, link_rel, path, why);
  if (!target) return error_of(why);
  const std::string& rel = *target;
  auto bytes = file_bytes(root, rel, path, why);
  if (!bytes) return error_of(why);
  std::size_t count = 0, first = std::string::npos;
  for (std::size_t at = bytes->find(old_string); at != std::string::npos;
       at = bytes->find(old_string, at + old_string.size())) {
    if (count++ == 0) first = at;
  }
  if (count != 1)
    return error_of("old_string occurs " + std::to_string(count) + " times in " + path +
                    "; it must occur exactly once (give more of the text around it)");
  bytes->replace(first, old_string.size(), new_string);
  Json done = replace_file(root, rel, path, *bytes, mode_of(root, rel));
  if (!done.contains("error")) done["replaced"] = 1;
  return done;
}

const char* type_name(unsigned char type) {
  switch (type) {
    case DT_REG:
      return "file";
    case DT_DIR:
      return "directory";
    case DT_LNK:
      return "link";
    default:
      return "other";
  }
}

Json list_op(int root, const std::string& rel, const std::string& path) {
  std::string why;
  const int fd = open_below(root, rel, path, O_RDONLY | O_DIRECTORY, why);
  if (fd < 0) return error_of(why);
  DIR* d = ::fdopendir(fd);
  if (d == nullptr) {
    ::close(fd);
    return error_of(path + ": " + errno_text(errno));
  }
  std::vector<std::pair<std::string, std::string>> entries;
  std::size_t seen = 0;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    if (++seen > kMaxListed) continue;
    entries.emplace_back(name, type_name(e->d_type));
  }
  ::closedir(d);
  std::sort(entries.begin(), entries.end());
  Json list = Json::array();
  for (const auto& [name, type] : entries) list.push_back({{"name", name}, {"type", type}});
  return Json{{"entries", list}, {"truncated", seen > kMaxListed}, {"total", seen}};
}

// Every path below `dir` (links and .git not entered), depth first, sorted.
struct Walk {
  std::size_t walked = 0;
  bool cut = false;
  template <typename Visit>
  void go(int dir, const std::string& prefix, int depth, const Visit& visit) {
    if (depth > 64 || cut) return;
    const int fd = ::openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return;
    DIR* d = ::fdopendir(fd);
    if (d == nullptr) {
      ::close(fd);
      return;
    }
    std::vector<std::pair<std::string, unsigned char>> names;
    while (const dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      if (name == "." || name == ".." || name == ".git") continue;
      if (++walked > kMaxWalked) {
        cut = true;
        break;
      }
      names.emplace_back(name, e->d_type);
    }
    std::sort(names.begin(), names.end());
    for (const auto& [name, type] : names) {
      std::string rel = prefix;
      if (!rel.empty()) rel += '/';
      rel += name;
      if (!visit(dir, name, rel, type)) {
        cut = true;
        break;
      }
      if (type == DT_DIR) {
        UniqueFd sub(::openat(::dirfd(d), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
        if (sub) go(sub.get(), rel, depth + 1, visit);
      }
      if (cut) break;
    }
    ::closedir(d);
  }
};

// `**` is any number of whole path segments; `*`, `?` and [...] stay within one.
bool glob_match(const std::vector<std::string>& pat, std::size_t p, const std::vector<std::string>& path,
                std::size_t s) {
  if (p == pat.size()) return s == path.size();
  if (pat[p] == "**") {
    for (std::size_t k = s; k <= path.size(); ++k)
      if (glob_match(pat, p + 1, path, k)) return true;
    return false;
  }
  if (s == path.size()) return false;
  return ::fnmatch(pat[p].c_str(), path[s].c_str(), 0) == 0 && glob_match(pat, p + 1, path, s + 1);
}

std::vector<std::string> split_path(const std::string& path) {
  return split_nonempty(path, '/');
}

Json glob_op(int root, const std::string& project, const Json& req) {
  std::string pattern = req.value("pattern", std::string());
  if (pattern.empty()) return error_of("pattern is a non-empty string");
  if (pattern.starts_with(project + "/")) pattern.erase(0, project.size() + 1);
  if (pattern.starts_with('/') || pattern.find("..") != std::string::npos)
    return error_of("the pattern " + pattern + " leaves the project: patterns are relative to the project");
  const auto pat = split_path(pattern);
  Json found = Json::array();
  Walk w;
  w.go(root, "", 0, [&](int, const std::string&, const std::string& rel, unsigned char) {
    if (glob_match(pat, 0, split_path(rel), 0)) found.push_back(rel);
    return found.size() < kMaxListed;
  });
  return Json{{"paths", found}, {"truncated", w.cut}};
}

Json grep_op(int root, const std::string& rel, const std::string& path, const Json& req) {
  const std::string pattern = req.value("pattern", std::string());
  if (pattern.empty()) return error_of("pattern is a non-empty string");
  regex_t re;
  if (const int e = ::regcomp(&re, pattern.c_str(), REG_EXTENDED | REG_NOSUB | REG_NEWLINE); e != 0) {
    char msg[256];
    ::regerror(e, &re, msg, sizeof msg);
    return error_of("the pattern is not an extended regular expression: " + std::string(msg));
  }
  Json matches = Json::array();
  auto search = [&](int dir, const std::string& name, const std::string& shown) {
    UniqueFd fd(::openat(dir, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    struct stat st {};
    if (!fd || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) ||
        static_cast<std::size_t>(st.st_size) > kMaxFileToolBytes)
      return true;
    std::string bytes;
    if (!read_whole(fd.get(), bytes, kMaxFileToolBytes) || looks_binary(bytes)) return true;
    std::size_t at = 0, line = 1;
    while (at < bytes.size()) {
      std::size_t nl = bytes.find('\n', at);
      if (nl == std::string::npos) nl = bytes.size();
      const std::string text = bytes.substr(at, nl - at);
      if (::regexec(&re, text.c_str(), 0, nullptr, 0) == 0) {
        matches.push_back(shown + ":" + std::to_string(line) + ":" + text.substr(0, 500));
        if (matches.size() >= kMaxListed) return false;
      }
      at = nl + 1;
      ++line;
    }
    return true;
  };
  std::string why;
  UniqueFd start(open_below(root, rel, path, O_RDONLY, why));
  if (!start) {
    ::regfree(&re);
    return error_of(why);
  }
  struct stat st {};
  bool cut = false;
  if (::fstat(start.get(), &st) == 0 && S_ISDIR(st.st_mode)) {
    Walk w;
    w.go(start.get(), rel, 0,
         [&](int dir, const std::string& name, const std::string& shown, unsigned char type) {
           return type != DT_REG || search(dir, name, shown);
         });
    cut = w.cut;
  } else {
    UniqueFd dir(parent_dir(root, rel, path, false, why));
    cut = dir && !search(dir.get(), base_name(rel), rel);
  }
  ::regfree(&re);
  return Json{{"matches", matches}, {"truncated", cut || matches.size() >= kMaxListed}};
}

}  // namespace

Json file_tool(const Json& request, const std::string& project) {
  if (!request.is_object()) return error_of("the request is a JSON object");
  const std::string op = request.value("op", std::string());
  UniqueFd root(::open(project.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!root) return error_of("the project " + project + ": " + errno_text(errno));
  if (op == "glob") return glob_op(root.get(), project, request);
  const auto path_at = request.find("path");
  const std::string path = path_at != request.end() && path_at->is_string() ? path_at->get<std::string>()
                           : op == "grep" || op == "list"                   ? std::string(".")
                                                                            : std::string();
  std::string why;
  auto rel = relative_path(path, project, why);
  if (!rel) return error_of(why);
  if (op == "read") return read_op(root.get(), *rel, path, request);
  if (op == "write") return write_op(root.get(), *rel, path, request);
  if (op == "edit") return edit_op(root.get(), *rel, path, request);
  if (op == "list") return list_op(root.get(), *rel, path);
  if (op == "grep") return grep_op(root.get(), *rel, path, request);
  return error_of("no such file operation: " + op);
}

int file_tool_main() {
  std::string input((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  const char* project = std::getenv("CHOCK_PROJECT");
  auto request = parse_json(input);
  Json answer = project == nullptr ? error_of("CHOCK_PROJECT is not set: the file tool runs inside a call")
                : !request         ? error_of("the request is " + request.error().what)
                                   : file_tool(*request, project);
  std::cout << answer.dump(-1, ' ', false, Json::error_handler_t::replace) << "\n";
  return answer.contains("error") ? 1 : 0;
}

}  // namespace chock::mcp
