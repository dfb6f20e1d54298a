#include "mcp/wrap_session.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <mutex>

#include "chock/session.hpp"
#include "util/escape.hpp"
#include "util/fd.hpp"
#include "util/io.hpp"
#include "util/syscalls.hpp"
#include "workspace/overlay_scan.hpp"

namespace chock::mcp {

namespace {

// The paths said by name; the rest are counted.
constexpr std::size_t kPathsNamed = 5;
// git's answer is read up to this much: enough for thousands of paths.
constexpr std::size_t kStatusCap = 1U << 20;
// A file larger than this is not compared: it counts as changed.
constexpr std::size_t kCompareCap = 16U << 20;

// The session's commits since it started (or last applied) on the first
// line, then `git status -z`: NUL-separated "XY PATH" entries, a rename's
// or copy's source path an entry of its own after it. --no-optional-locks:
// reading the status writes nothing of the session's.
constexpr const char* kHeldScript =
    "git rev-list --count \"$1\"..HEAD && "
    "git --no-optional-locks status --porcelain=v1 -z --untracked-files=all";

struct Captured {
  std::mutex mutex;
  std::string out;
  std::string err;
};

// `status -z` entries: the paths, without a rename's source.
std::vector<std::string> status_paths(std::string_view z) {
  std::vector<std::string> paths;
  bool source_next = false;
  while (!z.empty()) {
    const auto end = z.find('\0');
    const std::string_view entry = z.substr(0, end);
    z.remove_prefix(end == std::string_view::npos ? z.size() : end + 1);
    if (source_next) {
      source_next = false;
      continue;
    }
    if (entry.size() < 4) continue;
    source_next = entry[0] == 'R' || entry[0] == 'C';
    paths.emplace_back(entry.substr(3));
  }
  return paths;
}

// What is at `rel` beneath `root`, reached without a link: a regular
// file's bytes, or `absent` when nothing is there; nullopt for anything
// else (a link, a directory, a file too large, what cannot be read).
struct Entry {
  bool absent = false;
  std::string bytes;
};
std::optional<Entry> entry_beneath(int root, const std::string& rel) {
  UniqueFd fd(sys::openat2(root, rel.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0,
                           RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS));
  if (!fd) return errno == ENOENT ? std::optional<Entry>(Entry{true, {}}) : std::nullopt;
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) ||
      static_cast<std::size_t>(st.st_size) > kCompareCap)
    return std::nullopt;
  auto bytes = read_all(fd.get(), rel, kCompareCap);
  if (!bytes) return std::nullopt;
  return Entry{false, std::move(*bytes)};
}

// A session with a tree of its own (--allow-dirty) began with the person's
// uncommitted work, which is theirs, not the server's: a path whose bytes
// are the project's own now (or absent from both) is not counted.
std::vector<std::string> unlike_the_project(const workspace::Session& s, std::vector<std::string> paths) {
  UniqueFd project(::open(s.project.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  UniqueFd tree(::open(s.tree().c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!project || !tree) return paths;
  std::erase_if(paths, [&](const std::string& rel) {
    const auto mine = entry_beneath(project.get(), rel);
    const auto its = entry_beneath(tree.get(), rel);
    return mine && its && mine->absent == its->absent && mine->bytes == its->bytes;
  });
  return paths;
}

Held held_in_git(const workspace::Session& s, const config::LayerOptions& layers) {
  Held held;
  auto captured = std::make_shared<Captured>();
  session::Request r;
  r.project = s.project;
  r.session = s.id;
  r.argv = {"sh", "-c", kHeldScript, "sh", s.applied.empty() ? s.base : s.applied};
  r.host_toolchain = true;
  r.network = Network::none;
  r.timeout = std::chrono::minutes(1);
  r.org_bundle = layers.org_bundle;
  r.policy_rules = layers.policy_rules;
  session::Hooks hooks;
  hooks.output = [captured](int stream, std::string_view bytes) {
    std::lock_guard g(captured->mutex);
    std::string& into = stream == 1 ? captured->out : captured->err;
    into.append(bytes.substr(0, kStatusCap - std::min(kStatusCap, into.size())));
  };
  auto ran = session::call(std::move(r), std::move(hooks));
  if (!ran) {
    held.problem = ran.error().message();
    return held;
  }
  std::lock_guard g(captured->mutex);
  if (!ran->result || ran->result->exit_status() != 0) {
    const std::string err = captured->err.substr(0, captured->err.find('\n'));
    held.problem = "git in the session failed" + (err.empty() ? std::string() : ": " + err);
    return held;
  }
  const auto newline = captured->out.find('\n');
  held.commits = std::strtoull(captured->out.substr(0, newline).c_str(), nullptr, 10);
  if (newline == std::string::npos) return held;
  std::vector<std::string> paths = status_paths(std::string_view(captured->out).substr(newline + 1));
  // A denied file's notice is Chock's, not the server's work.
  std::erase_if(paths, [&s](const std::string& p) {
    return std::find(s.deny.begin(), s.deny.end(), p) != s.deny.end();
  });
  if (s.shared_base.empty()) paths = unlike_the_project(s, std::move(paths));
  for (const auto& p : paths) held.uncommitted.push_back(printable(p));
  return held;
}

}  // namespace

Held held_by(const workspace::Session& s, const config::LayerOptions& layers) {
  if (s.kind == workspace::Kind::git) return held_in_git(s, layers);
  Held held;
  // Adopted since its last call: nothing new (as workspace::list counts it).
  if (s.last_run > 0 && s.adopted_run == s.last_run) return held;
  held.changed = workspace::overlay_scan::scan(s).count();
  return held;
}

std::string uncommitted_words(const std::string& id, const std::vector<std::string>& paths) {
  std::string named;
  for (std::size_t i = 0; i < paths.size() && i < kPathsNamed; ++i) named += (i ? ", " : "") + paths[i];
  if (paths.size() > kPathsNamed) named += ", ...";
  return std::to_string(paths.size()) + " uncommitted change(s) (" + named + "); `chock run --session " + id +
         " -- sh -c 'git add -A && git commit -m MESSAGE'` commits them for `chock apply " + id + "`";
}

std::string kept_line(const workspace::Session& s, const Held& held, const std::string& server) {
  std::string line = "session " + s.id + " kept: ";
  std::vector<std::string> parts;
  if (!held.problem.empty())
    parts.push_back("its work could not be counted (" + printable(held.problem) + ")");
  if (held.commits > 0)
    parts.push_back(std::to_string(held.commits) + " commit(s) not applied; `chock apply " + s.id +
                    "` applies them");
  if (!held.uncommitted.empty()) parts.push_back(uncommitted_words(s.id, held.uncommitted));
  if (held.changed > 0)
    parts.push_back(std::to_string(held.changed) + " changed path(s); `chock workspace adopt " + s.id +
                    "` copies them out");
  if (parts.empty()) parts.emplace_back("no work yet");
  for (std::size_t i = 0; i < parts.size(); ++i) line += (i ? "; " : "") + parts[i];
  return line + "; `chock mcp wrap " + printable(server) + " --session " + s.id + " -- ...` continues it";
}

}  // namespace chock::mcp
