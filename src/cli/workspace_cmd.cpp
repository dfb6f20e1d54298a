// chock workspace list | remove SESSION [--force] [--keep-log] | clear [--force] [--keep-log]
//                | prune [SESSION...] [--older-than DAYS] | gc [--older-than DAYS] | adopt SESSION
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "chock/workspace.hpp"
#include "cli/command.hpp"
#include "config/chock_zon.hpp"
#include "log/session_log.hpp"
#include "session/ending.hpp"
#include "util/escape.hpp"
#include "util/size.hpp"

namespace chock::cli {

namespace {

// What a removal let go is deleted by the sweeper, in the background.
void start_sweeper() {
  session::start_sweeper([](const std::string& line) { std::fprintf(stderr, "chock: %s\n", line.c_str()); });
}

struct WorkspaceOptions {
  std::string session;
  std::vector<std::string> sessions;  // prune SESSION...
  bool force = false;
  bool keep_log = false;
  double older_than_days = 0;
  bool older_than_given = false;  // prune: --older-than was asked for (0 included)
  std::string max_size;           // gc --max-size; empty: the operator's .bases_max_size, if any
};

// Bad input (a malformed session id) is 2, as in every command; a refusal 1.
int report_error(const Error& e) {
  std::fprintf(stderr, "chock: %s\n", e.message().c_str());
  return exit_status_for(e, e.kind == Errc::bad_config ? 2 : 1);
}

// "2026-12-04 13:24", local time; "-" for never.
std::string when(std::int64_t unix_seconds) {
  if (unix_seconds <= 0) return "-";
  const auto t = static_cast<std::time_t>(unix_seconds);
  std::tm local{};
  char buf[32];
  if (::localtime_r(&t, &local) == nullptr || std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M", &local) == 0)
    return "?";
  return buf;
}

using workspace::last_use;

// Newest use first: the session a person is after is most often the last one.
// docs/schemas/workspace-list.schema.json
int list_json(const std::vector<workspace::SessionInfo>& all) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& info : all) {
    const auto& s = info.session;
    out.push_back(
        {{"id", s.id},
         {"kind", workspace::kind_name(s.kind)},
         {"project", s.project},
         {"created", s.created},
         {"last_run", s.last_run},
         {"base", s.kind == workspace::Kind::git ? nlohmann::json(s.base) : nlohmann::json(nullptr)},
         {"unapplied", info.pending},
         {"unapplied_unit", s.kind == workspace::Kind::git ? "commits" : "changed paths"},
         {"size_bytes", info.size_bytes},
         {"problem", info.problem.empty() ? nlohmann::json(nullptr) : nlohmann::json(info.problem)}});
  }
  std::printf("%s\n", out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  return 0;
}

int list(bool json) {
  auto all = workspace::list();
  if (!all) return report_error(all.error());
  std::stable_sort(all->begin(), all->end(),
                   [](const auto& a, const auto& b) { return last_use(a.session) > last_use(b.session); });
  if (json) return list_json(*all);
  std::printf("%-10s %-8s %-16s %-16s %-14s %-10s %s\n", "SESSION", "KIND", "MADE", "LAST USED", "UNAPPLIED",
              "SIZE", "PROJECT");
  for (const auto& info : *all) {
    const auto& s = info.session;
    if (!info.problem.empty() && s.project.empty()) {
      std::printf("%-10s (unreadable: %s)\n", s.id.c_str(), printable(info.problem).c_str());
      continue;
    }
    std::string pending = s.kind == workspace::Kind::git ? std::to_string(info.pending) + " commits"
                                                         : std::to_string(info.pending) + " changed";
    if (!info.problem.empty()) pending = "?";
    std::printf("%-10s %-8s %-16s %-16s %-14s %-10s %s\n", s.id.c_str(), workspace::kind_name(s.kind),
                when(s.created).c_str(), when(s.last_run).c_str(), pending.c_str(),
                human_size(info.size_bytes).c_str(), printable(s.project).c_str());
    if (!info.problem.empty()) std::printf("           problem: %s\n", printable(info.problem).c_str());
  }
  return 0;
}

// Removes the log files of `id`; the bytes freed. A log that cannot be
// removed is said, and the removal of the workspace stands.
std::uint64_t remove_logs_of(const std::string& id) {
  auto logs = log::list_logs();
  if (!logs) {
    std::fprintf(stderr, "chock: warning: %s\n", logs.error().message().c_str());
    return 0;
  }
  std::uint64_t freed = 0;
  for (const auto& l : *logs) {
    if (l.session != id) continue;
    auto gone = log::remove_log(l);
    if (gone)
      freed += *gone;
    else
      std::fprintf(stderr, "chock: warning: %s\n", gone.error().message().c_str());
  }
  return freed;
}

// A session ends when its workspace is removed: its logs go with it, or,
// with --keep-log, say so last.
Expected<std::string> remove_and_end(const std::string& id, bool force, bool keep_log) {
  auto session = workspace::load(id);
  auto done = workspace::remove(id, force);
  if (!done) return done;
  if (!keep_log) {
    remove_logs_of(id);
    return *done + " and its log";
  }
  if (session) {
    if (auto log = log::SessionLog::open(session->project, id); log)
      (void)log->append(log::event::kSessionEnd, {{"removed", true}, {"forced", force}});
  }
  return done;
}

int remove(const WorkspaceOptions& o) {
  auto done = remove_and_end(o.session, o.force, o.keep_log);
  if (!done) return report_error(done.error());
  std::fprintf(stderr, "chock: %s\n", done->c_str());
  start_sweeper();
  return 0;
}

int clear(const WorkspaceOptions& o) {
  auto all = workspace::list();
  if (!all) return report_error(all.error());
  int status = 0;
  bool any = false;
  for (const auto& info : *all) {
    auto done = remove_and_end(info.session.id, o.force, o.keep_log);
    if (done) {
      std::fprintf(stderr, "chock: %s\n", done->c_str());
      any = true;
    } else {
      std::fprintf(stderr, "chock: %s\n", done.error().message().c_str());
      status = 1;
    }
  }
  if (any) start_sweeper();
  return status;
}

// Removes what holds nothing any more (sessions whose work is applied or
// adopted or that made none) and their logs, and the logs of sessions that
// no longer exist. Which sessions is workspace::prune_verdict: never work;
// a session made to last (--keep) or used in the last day only when named or
// with --older-than.
int prune(const WorkspaceOptions& o) {
  const auto now = static_cast<std::int64_t>(std::time(nullptr));
  workspace::PruneAsk ask;
  ask.named = o.sessions;
  if (o.older_than_given) ask.older_than_seconds = static_cast<std::int64_t>(o.older_than_days * 86400);
  for (const auto& id : o.sessions)
    if (auto valid = workspace::validate_session_id(id); !valid) return report_error(valid.error());
  auto all = workspace::list();
  if (!all) return report_error(all.error());
  std::set<std::string> existing;
  for (const auto& info : *all) existing.insert(info.session.id);
  for (const auto& id : o.sessions)
    if (existing.count(id) == 0)
      if (auto loaded = workspace::load(id); !loaded) return report_error(loaded.error());
  std::uint64_t freed = 0;
  int removed = 0, with_work = 0, recent = 0, kept = 0, status = 0;
  for (const auto& info : *all) {
    switch (workspace::prune_verdict(info, ask, now)) {
      case workspace::PruneVerdict::not_asked:
        continue;
      case workspace::PruneVerdict::keep_work:
        ++with_work;
        continue;
      case workspace::PruneVerdict::keep_recent:
        ++recent;
        continue;
      case workspace::PruneVerdict::keep_kept:
        ++kept;
        continue;
      case workspace::PruneVerdict::remove:
        break;
    }
    auto done = workspace::remove(info.session.id, false);
    if (!done) {
      std::fprintf(stderr, "chock: %s\n", done.error().message().c_str());
      status = 1;
      continue;
    }
    existing.erase(info.session.id);
    freed += info.size_bytes + remove_logs_of(info.session.id);
    ++removed;
    std::fprintf(stderr, "chock: %s and its log (%s)\n", done->c_str(), human_size(info.size_bytes).c_str());
  }
  int logs = 0;
  // A log's time can be a tick ahead of now: --older-than 0 (or none) is any age.
  const std::int64_t cutoff = ask.older_than_seconds.value_or(0) > 0
                                  ? now - *ask.older_than_seconds
                                  : std::numeric_limits<std::int64_t>::max();
  // Named sessions are all that was asked for: no other log goes.
  auto all_logs = o.sessions.empty() ? log::list_logs()
                                     : Expected<std::vector<log::LogFile>>(std::vector<log::LogFile>{});
  if (all_logs) {
    for (const auto& l : *all_logs) {
      if (existing.count(l.session) != 0 || l.modified > cutoff) continue;
      if (auto gone = log::remove_log(l); gone) {
        freed += *gone;
        ++logs;
      } else {
        std::fprintf(stderr, "chock: %s\n", gone.error().message().c_str());
        status = 1;
      }
    }
  } else {
    std::fprintf(stderr, "chock: %s\n", all_logs.error().message().c_str());
    status = 1;
  }
  std::string left = std::to_string(with_work) + " session(s) with unapplied work were kept";
  if (recent > 0)
    left += "; " + std::to_string(recent) +
            (ask.older_than_seconds ? " used more recently than that were kept"
                                    : " used in the last day were kept (name one, or --older-than DAYS)");
  if (kept > 0)
    left += "; " + std::to_string(kept) + " made with --keep were kept (name one, or --older-than DAYS)";
  std::fprintf(stderr, "chock: pruned %d session(s) and %d log(s) of sessions already gone, freeing %s; %s\n",
               removed, logs, human_size(freed).c_str(), left.c_str());
  if (removed > 0) start_sweeper();
  return status;
}

// The shared bases no session uses, into the trash (deleted by the sweeper
// after); what they held is said before it goes.
int gc(const WorkspaceOptions& o) {
  std::optional<std::uint64_t> max_bytes;
  if (!o.max_size.empty()) {
    auto bytes = parse_size("--max-size", o.max_size);
    if (!bytes) {
      std::fprintf(stderr, "chock: %s\n", bytes.error().message().c_str());
      return 2;
    }
    max_bytes = *bytes;
  } else {
    auto operator_file = config::read_operator();
    if (!operator_file) return report_error(operator_file.error());
    max_bytes = operator_file->bases_max_bytes;
  }
  auto done = workspace::collect_bases(static_cast<std::int64_t>(o.older_than_days * 86400), max_bytes);
  if (!done) return report_error(done.error());
  std::string names;
  for (const auto& k : done->removed)
    names += (names.empty() ? " (" : ", ") + printable(k.substr(0, k.find('-') + 13));
  if (!names.empty()) names += ")";
  std::fprintf(
      stderr,
      "chock: removed %zu shared base(s) no session uses%s, freeing %s; kept %zu in use and %zu used "
      "more recently than %g day(s)\n",
      done->removed.size(), names.c_str(), human_size(done->freed_bytes).c_str(), done->kept_in_use,
      done->kept_recent, o.older_than_days);
  if (max_bytes)
    std::fprintf(stderr, "chock: the shared bases left take %s, the cap is %s (%zu removed for it)\n",
                 human_size(done->kept_bytes).c_str(), human_size(*max_bytes).c_str(),
                 done->removed_for_size);
  if (!done->removed.empty()) start_sweeper();
  return 0;
}

int adopt(const WorkspaceOptions& o) {
  auto r = workspace::adopt(o.session);
  if (!r) return report_error(r.error());
  // The same escaping as the list file: a name with a newline cannot forge a line.
  for (const auto& p : r->changed) std::printf("changed\t%s\n", unambiguous(p).c_str());
  for (const auto& p : r->added) std::printf("added\t%s\n", unambiguous(p).c_str());
  for (const auto& p : r->deleted) std::printf("deleted\t%s\n", unambiguous(p).c_str());
  for (const auto& [p, why] : r->skipped)
    std::printf("skipped\t%s\t%s\n", unambiguous(p).c_str(), unambiguous(why).c_str());
  std::fprintf(stderr, "chock: copied %zu changed and %zu added files to %s; the list is in %s\n",
               r->changed.size(), r->added.size(), printable(r->destination).c_str(),
               printable(r->list_file).c_str());
  if (r->owner == 0 && ::geteuid() == 0)
    std::fprintf(stderr, "chock: the adopted files belong to root, as the project directory %s does\n",
                 printable(r->destination.substr(0, r->destination.rfind("/.chock-adopted/"))).c_str());
  return 0;
}

}  // namespace

void add_workspace_command(Command app, Action& action) {
  auto o = std::make_shared<WorkspaceOptions>();
  Command ws = app.add_subcommand("workspace", "List, remove and adopt sessions' workspaces");
  ws.require_subcommand(1);
  Command ls =
      ws.add_subcommand("list", "Sessions, last used first: kind, when made and used, unapplied work, size");
  auto json = std::make_shared<bool>(false);
  ls.add_flag("--json", *json, "Print the sessions as JSON (docs/schemas/workspace-list.schema.json)");
  ls.callback([json, &action] { action = [json] { return list(*json); }; });
  Command rm = ws.add_subcommand("remove", "Remove a session and its log (refused while work is unapplied)");
  rm.add_option("session", o->session, "The session").required();
  rm.add_flag("--force", o->force, "Remove even with unapplied work (git commits stay parked)");
  rm.add_flag("--keep-log", o->keep_log, "Keep the session's log (it ends with a session.end line)");
  rm.callback([o, &action] { action = [o] { return remove(*o); }; });
  Command cl = ws.add_subcommand("clear", "Remove every session without unapplied work, and their logs");
  cl.add_flag("--force", o->force, "Remove them all (git commits stay parked)");
  cl.add_flag("--keep-log", o->keep_log, "Keep the sessions' logs");
  cl.callback([o, &action] { action = [o] { return clear(*o); }; });
  Command pr =
      ws.add_subcommand("prune",
                        "Remove applied and empty sessions and their logs, and the logs of sessions already "
                        "gone; a session made with --keep or used in the last day only when named or with "
                        "--older-than");
  pr.add_option("session", o->sessions, "Only these sessions (whatever their age, or --keep)");
  pr.add_option_function<double>(
        "--older-than",
        [o](double days) {
          o->older_than_days = days;
          o->older_than_given = true;
        },
        "Every session last used more than DAYS ago (0: whatever its age), --keep ones too")
      .type_name("DAYS")
      .check(Check::non_negative());
  pr.callback([o, &action] { action = [o] { return prune(*o); }; });
  Command g = ws.add_subcommand(
      "gc",
      "Remove the shared bases (one checkout per commit) that no session uses, and say what that freed");
  g.add_option("--older-than", o->older_than_days, "Only those last used more than DAYS ago (default 0)")
      .check(Check::non_negative());
  g.add_option(
      "--max-size", o->max_size,
      "Then, while the bases left take more than SIZE (\"20GiB\"), remove the unused ones used least "
      "recently, whatever their age (default: the operator's .bases_max_size, if set)");
  g.callback([o, &action] { action = [o] { return gc(*o); }; });
  Command ad = ws.add_subcommand("adopt", "Copy an overlay session's changes to .chock-adopted/<session>/");
  ad.add_option("session", o->session, "The session").required();
  ad.callback([o, &action] { action = [o] { return adopt(*o); }; });
}

}  // namespace chock::cli
