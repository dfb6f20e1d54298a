// chock workspace list | remove SESSION [--force] | clear [--force] | adopt SESSION
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>

#include "chock/workspace.hpp"
#include "cli/command.hpp"
#include "log/session_log.hpp"
#include "util/escape.hpp"

namespace chock::cli {

namespace {

struct WorkspaceOptions {
  std::string session;
  bool force = false;
};

std::string human_size(std::uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
  return buf;
}

int report_error(const Error& e) {
  std::fprintf(stderr, "chock: %s\n", e.message().c_str());
  return 1;
}

int list() {
  auto all = workspace::list();
  if (!all) return report_error(all.error());
  std::printf("%-10s %-8s %-12s %-14s %-10s %s\n", "SESSION", "KIND", "BASE", "UNAPPLIED", "SIZE", "PROJECT");
  for (const auto& info : *all) {
    const auto& s = info.session;
    if (!info.problem.empty() && s.project.empty()) {
      std::printf("%-10s (unreadable: %s)\n", s.id.c_str(), printable(info.problem).c_str());
      continue;
    }
    std::string pending = s.kind == workspace::Kind::git ? std::to_string(info.pending) + " commits"
                                                         : std::to_string(info.pending) + " changed";
    if (!info.problem.empty()) pending = "?";
    std::printf("%-10s %-8s %-12s %-14s %-10s %s\n", s.id.c_str(), workspace::kind_name(s.kind),
                s.kind == workspace::Kind::git ? s.base.substr(0, 12).c_str() : "-", pending.c_str(),
                human_size(info.size_bytes).c_str(), printable(s.project).c_str());
    if (!info.problem.empty()) std::printf("           problem: %s\n", printable(info.problem).c_str());
  }
  return 0;
}

// A session ends when its workspace is removed; its log says so last.
Expected<std::string> remove_and_end(const std::string& id, bool force) {
  auto session = workspace::load(id);
  auto done = workspace::remove(id, force);
  if (done && session) {
    if (auto log = log::SessionLog::open(session->project, id); log)
      (void)log->append("session.end", {{"removed", true}, {"forced", force}});
  }
  return done;
}

int remove(const WorkspaceOptions& o) {
  auto done = remove_and_end(o.session, o.force);
  if (!done) return report_error(done.error());
  std::fprintf(stderr, "chock: %s\n", done->c_str());
  return 0;
}

int clear(const WorkspaceOptions& o) {
  auto all = workspace::list();
  if (!all) return report_error(all.error());
  int status = 0;
  for (const auto& info : *all) {
    auto done = remove_and_end(info.session.id, o.force);
    if (done) {
      std::fprintf(stderr, "chock: %s\n", done->c_str());
    } else {
      std::fprintf(stderr, "chock: %s\n", done.error().message().c_str());
      status = 1;
    }
  }
  return status;
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

void add_workspace_command(CLI::App& app, Action& action) {
  auto o = std::make_shared<WorkspaceOptions>();
  CLI::App* ws = app.add_subcommand("workspace", "List, remove and adopt sessions' workspaces");
  ws->require_subcommand(1);
  CLI::App* ls = ws->add_subcommand("list", "Sessions: kind, base commit, unapplied work, size");
  ls->callback([&action] { action = [] { return list(); }; });
  CLI::App* rm = ws->add_subcommand("remove", "Remove a session (refused while work is unapplied)");
  rm->add_option("session", o->session, "The session")->required();
  rm->add_flag("--force", o->force, "Remove even with unapplied work (git commits stay parked)");
  rm->callback([o, &action] { action = [o] { return remove(*o); }; });
  CLI::App* cl = ws->add_subcommand("clear", "Remove every session without unapplied work");
  cl->add_flag("--force", o->force, "Remove them all (git commits stay parked)");
  cl->callback([o, &action] { action = [o] { return clear(*o); }; });
  CLI::App* ad =
      ws->add_subcommand("adopt", "Copy an overlay session's changes to .chock-adopted/<session>/");
  ad->add_option("session", o->session, "The session")->required();
  ad->callback([o, &action] { action = [o] { return adopt(*o); }; });
}

}  // namespace chock::cli
