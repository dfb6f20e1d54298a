#include "log/session_log.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <optional>
#include <vector>

#include "chock/workspace.hpp"
#include "util/dirs.hpp"
#include "util/io.hpp"
#include "util/json.hpp"
#include "util/sha256.hpp"

namespace chock::log {

namespace {

const std::string kNoPrevious(kSha256HexLength, '0');  // the prev of line 1
constexpr std::size_t kMaxHeadBytes = 4096;

// Holds an flock for the scope; the descriptor stays open.
class FileLock {
 public:
  FileLock(int fd, int operation) : fd_(fd) {
    int rc = 0;
    do {
      rc = ::flock(fd, operation);
    } while (rc != 0 && errno == EINTR);
    locked_ = rc == 0;
  }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  ~FileLock() {
    if (locked_) ::flock(fd_, LOCK_UN);
  }
  [[nodiscard]] bool locked() const { return locked_; }

 private:
  int fd_;
  bool locked_ = false;
};

std::string now_rfc3339() {
  timespec now{};
  ::clock_gettime(CLOCK_REALTIME, &now);
  // Not gmtime_r nor strftime: glibc's first reads /etc/localtime (tzset)
  // for a time in UTC. The calendar is arithmetic.
  using namespace std::chrono;
  const sys_seconds at{seconds{now.tv_sec}};
  const sys_days day = floor<days>(at);
  const year_month_day date{day};
  const hh_mm_ss time{at - day};
  std::array<char, 64> out{};
  std::snprintf(out.data(), out.size(), "%04d-%02u-%02uT%02ld:%02ld:%02ld.%03ldZ",
                static_cast<int>(date.year()), static_cast<unsigned>(date.month()),
                static_cast<unsigned>(date.day()), static_cast<long>(time.hours().count()),
                static_cast<long>(time.minutes().count()), static_cast<long>(time.seconds().count()),
                now.tv_nsec / 1000000);
  return out.data();
}

// Opens `path` as a directory, creating each missing component with 0700.
Expected<UniqueFd> open_or_make_dirs(const std::string& path) {
  // Made once, opened on every line after: one open, not two calls a component.
  if (UniqueFd there(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)); there) return there;
  UniqueFd dir(::open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir) return sys_error("open directory", "/");
  std::string so_far;
  std::size_t start = 0;
  while (start < path.size()) {
    std::size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    std::string name = path.substr(start, end - start);
    start = end + 1;
    if (name.empty()) continue;
    so_far += "/" + name;
    if (::mkdirat(dir.get(), name.c_str(), 0700) != 0 && errno != EEXIST)
      return sys_error("create directory", so_far);
    UniqueFd next(::openat(dir.get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!next) return sys_error("open directory", so_far);
    dir = std::move(next);
  }
  return dir;
}

// What the head file says: how many lines, and the SHA-256 of the last.
struct Head {
  std::size_t lines = 0;
  std::string last = kNoPrevious;
};

// {"last":"<hex>","lines":N}: the keys in the order nlohmann::json dumps
// them, written by hand since this is written once a line.
std::string head_text(const Head& head) {
  return "{\"last\":\"" + head.last + "\",\"lines\":" + std::to_string(head.lines) + "}\n";
}

bool is_sha256_hex(const std::string& text) {
  return text.size() == kSha256HexLength && text.find_first_not_of("0123456789abcdef") == std::string::npos;
}

std::optional<Head> parse_head(const std::string& text) {
  if (text.size() > kMaxHeadBytes) return std::nullopt;
  auto parsed = parse_json(text);
  if (!parsed || !parsed->is_object()) return std::nullopt;
  const nlohmann::json& j = *parsed;
  auto lines = j.find("lines");
  auto last = j.find("last");
  if (lines == j.end() || !lines->is_number_unsigned() || last == j.end() || !last->is_string())
    return std::nullopt;
  Head head{lines->get<std::size_t>(), last->get<std::string>()};
  if (!is_sha256_hex(head.last)) return std::nullopt;
  return head;
}

// The head file's bytes, nullopt when there is none.
Expected<std::optional<std::string>> read_head(int dir_fd, const std::string& name, const std::string& path) {
  UniqueFd fd(::openat(dir_fd, name.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd && errno == ENOENT) return std::optional<std::string>();
  if (!fd) return sys_error("open session log head", path);
  auto text = read_all(fd.get(), path, SIZE_MAX / 2);
  if (!text) return std::move(text).error();
  return std::optional<std::string>(std::move(*text));
}

// The end of a log: its last complete line, and the bytes after it when the
// file does not end in a newline (a write that was cut: chock killed, or the
// disk full). Read backwards, a block at a time.
struct Tail {
  std::optional<std::string> last;  // without its newline
  std::optional<std::string> torn;
};

Expected<Tail> read_tail(int fd, const std::string& path) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return sys_error("stat", path);
  std::size_t offset = static_cast<std::size_t>(st.st_size);
  Tail out;
  if (offset == 0) return out;
  std::string tail;  // grows backwards from the end of the file
  std::array<char, 4096> buf{};
  for (;;) {
    if (offset > 0) {
      std::size_t chunk = std::min(buf.size(), offset);
      ssize_t n = ::pread(fd, buf.data(), chunk, static_cast<off_t>(offset - chunk));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return sys_error("read", path);
      if (static_cast<std::size_t>(n) != chunk)
        return Error{"read: the log shrank while it was read", path, 0};
      offset -= chunk;
      tail.insert(0, buf.data(), chunk);
    }
    const bool torn = tail.back() != '\n';
    const std::size_t end = torn ? tail.rfind('\n') : tail.size() - 1;  // the newline of the last whole line
    if (end == std::string::npos) {
      if (offset > 0) continue;
      out.torn = tail;  // nothing but a cut first line
      return out;
    }
    const std::size_t before = end == 0 ? std::string::npos : tail.rfind('\n', end - 1);
    if (before == std::string::npos && offset > 0) continue;
    const std::size_t start = before == std::string::npos ? 0 : before + 1;
    out.last = tail.substr(start, end - start);
    if (torn) out.torn = tail.substr(end + 1);
    return out;
  }
}

// A cut line that a later append closed: the line after it says so and
// chains from its bytes.
bool closed_cut_line(std::string_view line, std::string_view rest, std::size_t number) {
  const std::string_view next = rest.substr(0, rest.find('\n'));
  auto j = parse_json(next);
  return j && j->is_object() && j->contains("torn_line") && (*j)["torn_line"] == number &&
         j->contains("prev") && (*j)["prev"] == sha256_hex(line);
}

bool is_event_name(std::string_view event) {
  if (event.empty()) return false;
  for (char c : event) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

std::string head_path_for(const std::string& log_path) {
  std::string stem = log_path;
  if (stem.ends_with(".jsonl")) stem.resize(stem.size() - 6);
  return stem + ".head";
}

std::string line_problem(std::size_t line, const std::string& what) {
  return "line " + std::to_string(line) + ": " + what;
}

// What is wrong with line `number` of a log, or nullopt when it continues
// the chain. `session` is line 1's, and is set by line 1.
std::optional<std::string> line_fault(std::string_view line, std::size_t number,
                                      const std::string& expected_prev, std::string& session) {
  auto parsed = parse_json(line);
  if (!parsed) return line_problem(number, parsed.error().what);
  nlohmann::json& j = *parsed;
  if (!j.is_object()) return line_problem(number, "not a JSON object");
  for (const char* field : {"ts", "event", "session", "prev"}) {
    if (!j.contains(field) || !j[field].is_string())
      return line_problem(number, std::string("has no \"") + field + "\" text field");
  }
  if (j["prev"] != expected_prev) {
    if (number == 1) return line_problem(1, "prev is not 64 zeros (lines before it were removed)");
    std::string before = std::to_string(number - 1);
    return line_problem(number, "prev does not match the SHA-256 of line " + before + " (line " + before +
                                    " was edited, or a line after it was removed)");
  }
  const auto& line_session = j["session"].get_ref<const std::string&>();
  if (number == 1 || session.empty()) session = line_session;  // (line 1 may be a cut one)
  if (line_session != session)
    return line_problem(number, "session \"" + line_session + "\" is not line 1's \"" + session +
                                    "\" (a line of another log was put in)");
  return std::nullopt;
}

}  // namespace

Expected<std::string> state_dir() {
  return chock_dir(Xdg::state);
}

std::string project_key(std::string_view absolute_project_dir) {
  std::string_view trimmed = absolute_project_dir;
  while (trimmed.size() > 1 && trimmed.ends_with('/')) trimmed.remove_suffix(1);
  std::size_t slash = trimmed.rfind('/');
  std::string name(slash == std::string_view::npos ? trimmed : trimmed.substr(slash + 1));
  for (char& c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
              c == '_' || c == '-';
    if (!ok) c = '_';
  }
  if (name.empty() || name == "." || name == "..") name = "root";  // "/" has no basename
  return name + "-" + sha256_hex(trimmed).substr(0, 12);
}

Expected<SessionLog> SessionLog::open(const std::string& project, const std::string& session) {
  if (auto valid = workspace::validate_session_id(session); !valid) return std::move(valid).error();
  std::array<char, PATH_MAX> resolved{};
  if (::realpath(project.c_str(), resolved.data()) == nullptr)
    return sys_error("resolve the project directory", project);
  auto state = state_dir();
  if (!state) return std::move(state).error();
  std::string dir_path = *state + "/sessions/" + project_key(resolved.data());
  auto dir = open_or_make_dirs(dir_path);
  if (!dir) return std::move(dir).error();
  std::string name = session + ".jsonl";
  std::string path = dir_path + "/" + name;
  UniqueFd file(
      ::openat(dir->get(), name.c_str(), O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!file) return sys_error("open session log", path);
  return SessionLog(std::move(*dir), std::move(file), std::move(path), session);
}

SessionLog::Entry SessionLog::entry(std::string_view event, const nlohmann::json& fields) {
  return Entry{std::string(event), fields, now_rfc3339()};
}

Expected<void> SessionLog::append(std::string_view event, const nlohmann::json& fields) {
  return append(entry(event, fields));
}

Expected<void> SessionLog::append(const Entry& entry) {
  return append(std::span<const Entry>(&entry, 1));
}

Expected<void> SessionLog::append(std::span<const Entry> entries) {
  if (entries.empty()) return {};
  for (const Entry& entry : entries) {
    const std::string& event = entry.event;
    const nlohmann::json& fields = entry.fields;
    if (!is_event_name(event)) return Error{"session log event \"" + event + "\": use [a-z0-9._-]", path_, 0};
    if (!fields.is_object() && !fields.is_null())
      return Error{"session log event " + event + ": fields must be a JSON object, not " + fields.type_name(),
                   path_, 0};
    for (const char* reserved : {"ts", "event", "session", "prev", "torn_line"}) {
      if (fields.contains(reserved))
        return Error{"session log event " + event + ": the field \"" + reserved + "\" is the log's own",
                     path_, 0};
    }
  }

  FileLock lock(file_.get(), LOCK_EX);
  if (!lock.locked()) return sys_error("lock session log", path_);
  struct stat now {};
  if (::fstat(file_.get(), &now) != 0) return sys_error("stat", path_);
  // Each line is followed by its head file, as if appended alone: a chock
  // stopped between the two leaves the head one line behind, never more. The
  // lock and the head file's descriptor serve the whole batch.
  UniqueFd head_fd;
  auto rest = [&]() -> Expected<void> {
    for (const Entry& entry : entries.subspan(1))
      if (auto r = append_line(entry, known_prev_, known_lines_, 0, known_head_bytes_, known_size_, head_fd);
          !r)
        return r;
    return {};
  };
  if (static_cast<std::uint64_t>(now.st_size) == known_size_) {
    if (auto r = append_line(entries.front(), known_prev_, known_lines_, 0, known_head_bytes_, now.st_size,
                             head_fd);
        !r)
      return r;
    return rest();
  }
  // Read the end of the file, not a remembered hash: other chock processes
  // may have appended to this session since this object last did.
  auto tail = read_tail(file_.get(), path_);
  if (!tail) return std::move(tail).error();
  const std::optional<std::string>& last_line = tail->last;
  std::string head_name = session_ + ".head";
  std::string head_path = head_path_for(path_);
  auto head_bytes = read_head(dir_.get(), head_name, head_path);
  if (!head_bytes) return std::move(head_bytes).error();
  Head head;  // no head file: nothing was appended yet
  if (head_bytes->has_value()) {
    auto parsed = parse_head(**head_bytes);
    if (!parsed) return Error{"session log head is not in the form chock writes", head_path, 0};
    head = std::move(*parsed);
  }

  std::string prev = last_line.has_value() ? sha256_hex(*last_line) : kNoPrevious;
  std::size_t lines = 0;
  std::size_t torn_line = 0;
  if (tail->torn) {
    // A write before this one was cut. Its bytes stay, closed by a newline in
    // the same write as this line, which chains from them and names them.
    if (prev != head.last || last_line.has_value() != (head.lines > 0))
      return Error{
          "session log ends in a cut line after lines its head file does not know; chock will not "
          "extend it",
          path_, 0};
    torn_line = head.lines + 1;
    prev = sha256_hex(*tail->torn);
    lines = head.lines + 1;
  } else if (prev == head.last && last_line.has_value() == (head.lines > 0)) {
    lines = head.lines;
  } else {
    // One line past the head: a writer stopped between its line and its head
    // file. Anything else means lines were removed or edited.
    auto last = parse_json(last_line.value_or(""));
    bool follows_head = last && last->is_object() && last->contains("prev") && (*last)["prev"] == head.last;
    if (!follows_head)
      return Error{
          "session log does not agree with its head file (lines were removed or edited); "
          "chock will not extend it",
          path_, 0};
    lines = head.lines + 1;
  }

  if (auto r = append_line(entries.front(), prev, lines, torn_line,
                           head_bytes->has_value() ? (*head_bytes)->size() : 0, now.st_size, head_fd);
      !r)
    return r;
  return rest();
}

Expected<void> SessionLog::append_line(const Entry& entry, const std::string& prev, std::size_t lines,
                                       std::size_t torn_line, std::size_t head_bytes, std::uint64_t size,
                                       UniqueFd& head_fd) {
  known_size_ = UINT64_MAX;  // known again only once the line and the head are written
  std::string head_name = session_ + ".head";
  std::string head_path = head_path_for(path_);
  // The log's own fields first, then the event's in their (sorted) order:
  // one object, joined as text rather than copied into another. Replace
  // rather than throw on bytes that are not UTF-8 (a program's output).
  auto dump = [](const nlohmann::json& j) {
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  };
  std::string text = "{\"ts\":" + dump(entry.ts) + ",\"event\":" + dump(entry.event) +
                     ",\"session\":" + dump(session_) + ",\"prev\":" + dump(prev);
  if (torn_line != 0) text += ",\"torn_line\":" + std::to_string(torn_line);
  if (entry.fields.is_object() && !entry.fields.empty())
    text.append(",").append(dump(entry.fields), 1, std::string::npos);  // past its own '{'
  else
    text += "}";
  const std::string bytes = (torn_line != 0 ? "\n" : "") + text + "\n";
  if (auto w = write_all(file_.get(), bytes, path_); !w) {
    // A line cut by a full disk is taken back (shrinking needs no room), so
    // the log ends where it did and its chain stays whole.
    (void)!::ftruncate(file_.get(), static_cast<off_t>(size));
    return w;
  }

  const std::string last = sha256_hex(text);
  const std::string new_head = head_text(Head{lines + 1, last});
  auto known = [&] {
    known_size_ = size + bytes.size();
    known_prev_ = last;
    known_lines_ = lines + 1;
    known_head_bytes_ = new_head.size();
  };
  // The head only grows (its line count gains digits, never loses them), so
  // it is rewritten in place: one write of under a hundred bytes into a block
  // the file already has, under the lock readers share. Replacing it by a
  // rename made ext4 write back and evict a file on every line. The first
  // head is made through a temporary file, so a full disk leaves none, not half.
  if (head_bytes != 0 && new_head.size() >= head_bytes) {
    if (!head_fd) head_fd.reset(::openat(dir_.get(), head_name.c_str(), O_WRONLY | O_CLOEXEC | O_NOFOLLOW));
    if (!head_fd) return sys_error("open session log head", head_path);
    const ssize_t n = ::pwrite(head_fd.get(), new_head.data(), new_head.size(), 0);
    if (n != static_cast<ssize_t>(new_head.size()))
      return n < 0 ? sys_error("write session log head", head_path)
                   : Error{"write session log head: short write", head_path, EIO};
    known();
    return {};
  }
  std::string tmp_name = head_name + ".tmp";
  UniqueFd tmp(
      ::openat(dir_.get(), tmp_name.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!tmp) return sys_error("create session log head", head_path + ".tmp");
  if (auto w = write_all(tmp.get(), new_head, head_path + ".tmp"); !w) return w;
  tmp.reset();
  if (::renameat(dir_.get(), tmp_name.c_str(), dir_.get(), head_name.c_str()) != 0)
    return sys_error("replace session log head", head_path);
  head_fd.reset();  // the file it named was replaced
  known();
  return {};
}

Expected<Verification> verify(const std::string& log_path) {
  UniqueFd fd(::open(log_path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return sys_error("open session log", log_path);
  // Shared: an append in progress finishes first, so its line and its head agree.
  FileLock lock(fd.get(), LOCK_SH);
  if (!lock.locked()) return sys_error("lock session log", log_path);
  auto content = read_all(fd.get(), log_path, SIZE_MAX / 2);
  if (!content) return std::move(content).error();
  std::string head_path = head_path_for(log_path);
  auto head_bytes = read_head(AT_FDCWD, head_path, head_path);
  if (!head_bytes) return std::move(head_bytes).error();
  return verify_chain(*content, *head_bytes, head_path);
}

Verification verify_chain(std::string_view content, const std::optional<std::string>& head_file,
                          const std::string& head_path) {
  const std::optional<std::string>* head_bytes = &head_file;
  Verification v;
  auto fail = [&](std::size_t bad_line, std::string problem) {
    v.ok = false;
    v.bad_line = bad_line;
    v.problem = std::move(problem);
    return v;
  };
  std::string_view rest = content;
  v.lines = static_cast<std::size_t>(std::count(rest.begin(), rest.end(), '\n'));
  if (!rest.empty() && rest.back() != '\n') ++v.lines;  // a cut last line still counts
  std::string expected_prev = kNoPrevious;
  std::string before_last = kNoPrevious;  // the SHA-256 of the line before the last
  std::string session;
  std::size_t number = 0;
  while (!rest.empty()) {
    ++number;
    std::size_t newline = rest.find('\n');
    if (newline == std::string_view::npos)
      return fail(number, line_problem(number,
                                       "has no newline at its end: a write that was cut (chock killed, or "
                                       "the disk full) or the log was cut; the lines before it verify, and "
                                       "the next append closes it and chains past it"));
    std::string_view line = rest.substr(0, newline);
    rest.remove_prefix(newline + 1);
    if (auto fault = line_fault(line, number, expected_prev, session)) {
      if (!closed_cut_line(line, rest, number)) return fail(number, *fault);
      v.torn_lines.push_back(number);
    }
    before_last = expected_prev;
    expected_prev = sha256_hex(line);
  }

  std::string count = std::to_string(v.lines);
  if (!head_bytes->has_value()) {
    if (v.lines == 0) {
      v.ok = true;
      return v;
    }
    return fail(0, "the head file " + head_path + " is missing (so a removed last line would not show)");
  }
  auto parsed = parse_head(**head_bytes);
  if (!parsed) return fail(0, "the head file " + head_path + " is not in the form chock writes");
  const Head& head = *parsed;
  std::string said = std::to_string(head.lines);
  if (head.lines > v.lines) {
    std::size_t removed = head.lines - v.lines;
    return fail(v.lines + 1,
                "the log ends at line " + count + " but its head file says " + said + " lines (" +
                    (removed == 1 ? std::string("the last line was removed")
                                  : "the last " + std::to_string(removed) + " lines were removed") +
                    ")");
  }
  // One line past the head, chaining from it: a chock that stopped (or found
  // the disk full) between its line and its head file; its next append
  // brings the head up to date.
  v.head_behind = head.lines + 1 == v.lines && head.last == before_last;
  if (head.lines < v.lines && !v.head_behind)
    return fail(head.lines + 1,
                "the log has " + count + " lines but its head file says " + said + " (from line " +
                    std::to_string(head.lines + 1) +
                    " on, added by something other than chock, or by a chock that stopped mid-append)");
  if (head.last != expected_prev && !v.head_behind)
    return fail(v.lines, line_problem(v.lines,
                                      "its SHA-256 is not the one the head file holds (the last line "
                                      "was edited or replaced)"));
  if (!v.torn_lines.empty()) {
    const std::string first = std::to_string(v.torn_lines.front());
    return fail(
        v.torn_lines.front(),
        "line " + first +
            " is torn: a write that was cut (chock killed, or the disk full), closed by "
            "the line after it, which chains from its bytes; every other line verifies, to line " +
            count +
            (v.torn_lines.size() > 1 ? " (" + std::to_string(v.torn_lines.size()) + " torn lines)" : ""));
  }
  v.ok = true;
  return v;
}

Expected<void> SessionLog::reserve(std::uint64_t bytes) {
  struct stat st {};
  if (::fstat(file_.get(), &st) != 0) return sys_error("fstat session log", path_);
  // Most calls find the room the last one reserved still there: no new extent to journal.
  if (static_cast<std::uint64_t>(st.st_blocks) * 512 >= static_cast<std::uint64_t>(st.st_size) + bytes)
    return {};
  if (::fallocate(file_.get(), FALLOC_FL_KEEP_SIZE, st.st_size, static_cast<off_t>(bytes)) != 0 &&
      errno != EOPNOTSUPP)
    return sys_error("reserve room in the session log", path_);
  return {};
}

}  // namespace chock::log
