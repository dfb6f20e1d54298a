// Opening the session a call runs in: a new one (git worktree or overlay),
// or an existing one by id.
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <utility>

#include "util/dirs.hpp"
#include "util/fs.hpp"
#include "workspace/build.hpp"
#include "workspace/store.hpp"

namespace chock::workspace {

namespace {

uid_t run_uid(const OpenOptions& o) {
  if (::geteuid() != 0) return ::getuid();
  return o.run_uid.value_or(kDefaultRunUid);
}

// An idle session is locked first and its record read once; a busy one (or
// one whose directory is not there) is read first, so that what is wrong is
// said before any wait.
Expected<std::pair<Session, SessionLock>> load_locked(const OpenOptions& o, const build::Project& project) {
  auto belongs = [&](const Session& s) -> Expected<void> {
    if (s.project == project.root) return {};
    return Error{"session " + o.session + " belongs to " + s.project + ", not to " + project.root, "", 0,
                 Errc::bad_config};
  };
  if (auto root = store::workspaces_dir(); root) {
    Session idle;
    idle.id = o.session;
    idle.dir = *root + "/" + o.session;
    if (auto held = lock(idle, false); held) {
      auto s = load(o.session);
      if (!s) return std::move(s).error();
      if (auto b = belongs(*s); !b) return std::move(b).error();
      return std::pair{std::move(*s), std::move(*held)};
    }
  }
  auto s = load(o.session);
  if (!s) return std::move(s).error();
  if (auto b = belongs(*s); !b) return std::move(b).error();
  auto held = lock(*s, true);
  if (!held) return std::move(held).error();
  auto fresh = load(o.session);  // it may have changed while we waited
  if (!fresh) return std::move(fresh).error();
  return std::pair{std::move(*fresh), std::move(*held)};
}

// Whether opening the session for this call changes it as a whole: a
// denied file not yet covered (or whose notice a call replaced), a directory
// not yet carried. Such an open holds the session alone.
bool changes_session(const OpenOptions& o, const Session& s) {
  for (const auto& d : o.deny)
    if (std::find(s.deny.begin(), s.deny.end(), d) == s.deny.end()) return true;
  for (const auto& c : o.carry)
    if (std::find(s.carry.begin(), s.carry.end(), c) == s.carry.end()) return true;
  return !build::denied_in_place(s, s.deny) || !build::deny_links_known(s);
}

// The session shared with its other calls, its record read and written
// under the record lock: nullopt when this open would change the session as
// a whole, which waits to have it alone.
Expected<std::optional<Opened>> open_shared(const OpenOptions& o, const build::Project& project) {
  auto found = load(o.session);
  if (!found) return std::move(found).error();
  if (found->project != project.root)
    return Error{"session " + o.session + " belongs to " + found->project + ", not to " + project.root, "", 0,
                 Errc::bad_config};
  auto held = lock_shared(*found);
  if (!held) return std::move(held).error();
  auto record = lock_record(*found);
  if (!record) return std::move(record).error();
  auto s = load(o.session);  // as it is now that it is ours to read
  if (!s) return std::move(s).error();
  if (changes_session(o, *s)) return std::optional<Opened>();
  const Session loaded = *s;
  Opened out{std::move(*s), std::move(*held), false, {}, false, {}};
  if (o.allow_dirty && out.session.kind == Kind::git)
    out.notes.emplace_back("--allow-dirty only applies when a session is made; session " + o.session +
                           " keeps its own tree");
  if (out.session.kind == Kind::git) {
    if (auto r = build::refresh_view(out.session, out.notes); !r) return std::move(r).error();
  }
  if (o.last_run != 0) out.session.last_run = std::max(o.last_run, out.session.adopted_run + 1);
  if (!(out.session == loaded))
    if (auto r = save(out.session); !r) return std::move(r).error();
  return std::optional<Opened>(std::move(out));
}

Expected<Opened> open_existing(const OpenOptions& o, const build::Project& project) {
  if (o.shared) {
    auto shared = open_shared(o, project);
    if (!shared) return std::move(shared).error();
    if (*shared) return std::move(**shared);
  }
  auto locked = load_locked(o, project);
  if (!locked) return std::move(locked).error();
  // Compared in memory at the end: most calls change nothing in the record.
  const Session loaded = locked->first;
  Opened out{std::move(locked->first), std::move(locked->second), false, {}, true, {}};
  if (o.allow_dirty && out.session.kind == Kind::git)
    out.notes.emplace_back("--allow-dirty only applies when a session is made; session " + o.session +
                           " keeps its own tree");
  std::vector<std::string> added;
  for (const auto& d : o.deny)
    if (std::find(out.session.deny.begin(), out.session.deny.end(), d) == out.session.deny.end())
      added.push_back(d);
  // Denied paths are covered again on every call: a call may have replaced a notice.
  out.session.deny.insert(out.session.deny.end(), added.begin(), added.end());
  if (auto r = build::deny_other_names(out.session, project, out.notes); !r) return std::move(r).error();
  if (auto r = build::add_carried(out.session, o.carry, out.notes); !r) return std::move(r).error();
  if (auto r = build::cover_denied(out.session, out.session.deny, out.notes); !r) return std::move(r).error();
  if (out.session.kind == Kind::git) {
    if (auto r = build::refresh_view(out.session, out.notes); !r) return std::move(r).error();
  }
  if (!added.empty() && out.session.kind == Kind::git)
    out.notes.emplace_back(
        "the newly denied files are covered in the tree; git inside still lists them as changed");
  // Never the run an adopt took in: a call in the second of the adopt is new work.
  if (o.last_run != 0) out.session.last_run = std::max(o.last_run, out.session.adopted_run + 1);
  if (!(out.session == loaded))
    if (auto r = save(out.session); !r) return std::move(r).error();
  return out;
}

Expected<Opened> open_new(const OpenOptions& o, const build::Project& project) {
  bool git = project.git && !project.head.empty();
  auto made = store::make_session_dir(git ? Kind::git : Kind::overlay, project.root);
  if (!made) return std::move(made).error();
  Session s = std::move(*made);
  s.owner = run_uid(o);
  for (const auto& d : o.deny)
    if (std::find(s.deny.begin(), s.deny.end(), d) == s.deny.end()) s.deny.push_back(d);
  auto held = lock(s, false);
  if (!held) return std::move(held).error();
  Opened out{Session{}, std::move(*held), true, {}, true, {}};
  if (project.git && !git)
    out.notes.emplace_back("the repository has no commit yet: this session is an overlay, not a worktree");
  if (!git && o.allow_dirty)
    out.notes.emplace_back("--allow-dirty has no effect on an overlay: it shows every file");
  UniqueFd base_lock;  // released once session.json names the base: gc sees the session from then on
  Expected<void> built = build::deny_other_names(s, project, out.notes);
  if (built)
    built = git ? build::make_worktree(s, project, {o.allow_dirty, o.link_base_index}, out.notes, o.progress,
                                       o.progress_after_ms, base_lock)
                : build::make_overlay(s, out.notes, o.progress, o.progress_after_ms);
  if (built) built = build::add_carried(s, o.carry, out.notes);
  if (built && git) out.uncarried = build::uncarried(s);
  s.last_run = o.last_run;
  s.kept = o.keep;
  if (built) built = save(s);
  if (!built) {
    (void)fs::remove_tree(s.dir);
    return std::move(built).error();
  }
  out.session = std::move(s);
  // Made: from here the session is its calls' to share.
  if (o.shared && ::flock(out.lock.fd(), LOCK_SH) == 0) out.alone = false;
  return out;
}

}  // namespace

Expected<std::string> project_root(const std::string& dir) {
  auto project = build::locate_project(dir.empty() ? current_dir() : dir);
  if (!project) return std::move(project).error();
  return project->root;
}

Expected<Opened> open(const OpenOptions& o) {
  for (const auto& d : o.deny)
    if (auto v = validate_deny_path(d); !v) return std::move(v).error();
  for (const auto& c : o.carry)
    if (auto v = validate_carry_path(c); !v) return std::move(v).error();
  if (!o.session.empty())
    if (auto v = validate_session_id(o.session); !v) return std::move(v).error();
  // An existing session needs the project's HEAD only to check newly denied
  // files against the history: no git process on every call otherwise.
  const std::string dir = o.project.empty() ? current_dir() : o.project;
  const bool existing = !o.session.empty() && o.deny.empty();
  build::Project located;
  located.root = dir;
  auto project = !existing                                 ? build::find_project(dir)
                 : o.project_is_root && !o.project.empty() ? Expected<build::Project>(std::move(located))
                                                           : build::locate_project(dir);
  if (!project) return std::move(project).error();
  if (auto r = build::check_deny_targets(*project, o.deny, o.deny_may_be_missing); !r)
    return std::move(r).error();
  return o.session.empty() ? open_new(o, *project) : open_existing(o, *project);
}

}  // namespace chock::workspace
