// Listing and removing sessions. Nothing is removed while it holds work
// that has not come back, unless forced; a forced removal of a git session
// parks its commits in the real repository first.
#include <sys/stat.h>

#include <algorithm>
#include <cstdint>

#include "util/fs.hpp"
#include "workspace/build.hpp"
#include "workspace/git.hpp"
#include "workspace/overlay_scan.hpp"
#include "workspace/session_git.hpp"
#include "workspace/session_refs.hpp"
#include "workspace/store.hpp"

namespace chock::workspace {

namespace {

struct Pending {
  std::uint64_t count = 0;  // commits of HEAD not applied, or changed paths
  std::uint64_t own = 0;    // git: commits only the session's own refs reach (a branch, the stash)
  std::string head;         // git
  std::string problem;      // the count could not be known
  bool hostile = false;     // because the call left what Chock refuses to read
};

Pending pending_of(const Session& s) {
  Pending p;
  if (s.kind == Kind::overlay) {
    if (s.last_run > 0 && s.adopted_run == s.last_run) return p;
    p.count = overlay_scan::scan(s).count();
    return p;
  }
  if (!fs::is_dir(s.common_dir)) {
    p.problem = "its repository is gone (" + s.common_dir + ")";
    return p;
  }
  if (auto r = session_git::check_objects(s); !r) {
    p.problem = r.error().message();
    p.hostile = r.error().kind == Errc::hostile_content;
    return p;
  }
  auto head = session_git::head(s);
  if (!head) {
    p.problem = head.error().message();
    return p;
  }
  p.head = *head;
  auto n = git::capture({"rev-list", "--count", session_git::from(s) + ".." + *head}, session_git::env(s),
                        "count the session's commits");
  if (!n) {
    p.problem = n.error().message();
    return p;
  }
  p.count = std::stoull(git::chomp(*n));
  // Work on the session's own refs (a branch it made, a stash, notes) is
  // work too: removing the session would lose it.
  auto own = session_refs::changed(s);
  if (!own) {
    p.problem = own.error().message();
    return p;
  }
  if (own->empty()) return p;
  std::vector<std::string> args{"rev-list", "--count"};
  for (const auto& [name, id] : *own) args.push_back(id);
  args.insert(args.end(), {"--not", *head, "--branches", "--tags"});
  auto m = git::capture(args, session_git::env(s), "count the commits of the session's own refs");
  if (!m) {
    p.problem = m.error().message();
    return p;
  }
  p.own = std::stoull(git::chomp(*m));
  return p;
}

// What a session holds of its own: the base's index (or its shared half)
// that it links is the base's, counted there (while the base still has it).
std::uint64_t own_size(const Session& s) {
  std::uint64_t bytes = fs::disk_usage(s.dir);
  std::string linked;
  if (s.index_below) linked = build::index_below_dir(s) + "/index";
  if (!s.shared_index.empty()) linked = s.admin() + "/" + s.shared_index;
  struct stat st {};
  if (!linked.empty() && ::lstat(linked.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_nlink > 1)
    bytes -= std::min(bytes, static_cast<std::uint64_t>(st.st_blocks) * 512U);
  return bytes;
}

}  // namespace

Expected<std::vector<SessionInfo>> list() {
  auto ids = store::session_ids();
  if (!ids) return std::move(ids).error();
  std::vector<SessionInfo> out;
  for (const auto& id : *ids) {
    SessionInfo info;
    auto s = load(id);
    if (!s) {
      info.session.id = id;
      info.problem = s.error().message();
      out.push_back(std::move(info));
      continue;
    }
    info.session = std::move(*s);
    Pending p = pending_of(info.session);
    info.pending = p.count + p.own;
    info.problem = p.problem;
    info.size_bytes = own_size(info.session);
    out.push_back(std::move(info));
  }
  return out;
}

std::int64_t last_use(const Session& s) {
  return std::max(s.last_run, s.created);
}

PruneVerdict prune_verdict(const SessionInfo& info, const PruneAsk& ask, std::int64_t now) {
  const bool named = std::find(ask.named.begin(), ask.named.end(), info.session.id) != ask.named.end();
  if (!ask.named.empty() && !named) return PruneVerdict::not_asked;
  if (info.pending > 0 || !info.problem.empty()) return PruneVerdict::keep_work;
  const std::int64_t used = last_use(info.session);
  // Asked by age: only the age counts (a file's time can be a tick ahead of now: >= 0 is "now").
  if (ask.older_than_seconds)
    return *ask.older_than_seconds > 0 && used > now - *ask.older_than_seconds ? PruneVerdict::keep_recent
                                                                               : PruneVerdict::remove;
  if (named) return PruneVerdict::remove;
  // Unasked, a session made to last, or in use, is someone's: a --keep
  // session whose npm install filled its carried node_modules holds no
  // commit, and is no less wanted.
  if (info.session.kept) return PruneVerdict::keep_kept;
  if (used > now - kRecentUseSeconds) return PruneVerdict::keep_recent;
  return PruneVerdict::remove;
}

Expected<Ending> remove_if_empty(const std::string& id) {
  auto loaded = load(id);
  if (!loaded) return std::move(loaded).error();
  Session s = std::move(*loaded);
  Ending end;
  auto held = lock(s, false);
  if (!held) {
    end.problem = "another call holds it";
    return end;
  }
  Pending p = pending_of(s);
  end.pending = p.count + p.own;
  end.problem = p.problem;
  if (end.pending > 0 || !p.problem.empty()) return end;
  if (s.kind == Kind::git)
    (void)git::run({"update-ref", "-d", session_git::parked_ref(s)}, git::repo_env(s.common_dir));
  if (auto r = store::discard(s.dir); !r) return std::move(r).error();
  end.removed = true;
  return end;
}

Expected<std::string> remove(const std::string& id, bool force) {
  auto loaded = load(id);
  if (!loaded) return std::move(loaded).error();
  Session s = std::move(*loaded);
  auto held = lock(s, true);  // waits for the session's calls
  if (!held) return std::move(held).error();
  Pending p = pending_of(s);
  std::string done = "removed session " + id;
  if (s.kind == Kind::git) {
    // Forcing would drop commits Chock could park once the file is gone: the person decides, by hand.
    if (p.hostile)
      return Error{"not removed: " + p.problem + "; delete that entry yourself, then run this again", "", 0};
    if (!p.problem.empty() && !force)
      return Error{"not removed: session " + id + "'s commits cannot be counted (" + p.problem +
                       "); --force removes it anyway",
                   "", 0};
    if (p.own > 0 && !force)
      return Error{"not removed: session " + id + " has " + std::to_string(p.own) +
                       " commit(s) on refs of its own (a branch, the stash) that its HEAD does not reach; "
                       "check out what you want in it and apply, or --force to drop them",
                   "", 0};
    if (p.count > 0 && !force)
      return Error{"not removed: session " + id + " has " + std::to_string(p.count) +
                       " unapplied commit(s); run 'chock apply " + id +
                       "', or --force (the commits are then kept at refs/chock/" + id + ")",
                   "", 0};
    if (p.own > 0) done += "; " + std::to_string(p.own) + " commit(s) on its own refs were dropped";
    if (p.count > 0) {
      if (auto r = session_git::park(s, p.head); !r) return std::move(r).error();
      done += "; its " + std::to_string(p.count) + " unapplied commit(s) are kept at " +
              session_git::parked_ref(s) + " in " + s.project;
    } else if (p.problem.empty()) {
      // Everything reached the branch: a parked ref of this session is stale.
      (void)git::run({"update-ref", "-d", session_git::parked_ref(s)}, git::repo_env(s.common_dir));
    }
  } else if (p.count > 0) {
    if (!force)
      return Error{"not removed: session " + id + " has " + std::to_string(p.count) +
                       " changed path(s) not adopted since its last call; run 'chock workspace adopt " + id +
                       "', or --force to discard them",
                   "", 0};
    done += "; " + std::to_string(p.count) + " changed path(s) were discarded";
  }
  if (auto r = store::discard(s.dir); !r) return std::move(r).error();
  return done;
}

}  // namespace chock::workspace
