// Apply: the session's commits, parked at refs/chock/<id>, then brought onto
// the project's checked-out branch. The new commit is computed off the tree
// (merge-tree, commit-tree), so a conflict never touches the project; the
// branch then moves by a fast-forward (`git merge --ff-only`) on a clean tree.
//
// Modes, when the branch has moved since the session's base (otherwise all
// of them fast-forward, and squash still makes one commit):
//   merge   one merge commit with both parents
//   rebase  each session commit replayed onto the branch, authors kept (each
//           replay is a three-way merge against the session's base)
//   squash  one commit holding all the session's changes
// Commits Chock makes here are by the repository's user.name/user.email
// when it has them, else by the fixed agent identity.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/escape.hpp"
#include "util/fd.hpp"
#include "util/fs.hpp"
#include "workspace/build.hpp"
#include "workspace/session_git.hpp"
#include "workspace/session_refs.hpp"

namespace chock::workspace {

namespace {

// One apply at a time onto a repository, whoever runs it: held from the
// last look at the branch to its fast-forward, so two applies never move the
// branch and the working tree at once (the second then sees the branch moved
// and refuses, its work parked). The lock is on the repository's directory
// itself, which every user of it can open: no file of Chock's is left in it.
Expected<UniqueFd> lock_repository(const std::string& common_dir) {
  UniqueFd fd(::open(common_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd) return sys_error("open the repository to lock it for apply", common_dir);
  while (::flock(fd.get(), LOCK_EX) != 0)
    if (errno != EINTR) return sys_error("lock the repository for apply", common_dir);
  return fd;
}

std::string short_id(const std::string& id) {
  return id.substr(0, 8);
}

ApplyOutcome refused(const Session& s, const std::string& why, const std::string& hint) {
  ApplyOutcome o;
  o.state = ApplyOutcome::State::refused;
  o.message = "not applied: " + why + "\nthe work is parked at " + session_git::parked_ref(s) + " in " +
              printable(s.project) + " (git log " + session_git::parked_ref(s) + ")";
  if (!hint.empty()) o.message += "\n" + hint;
  return o;
}

std::string again(const Session& s) {
  return "then run 'chock apply " + s.id + "' again";
}

// The operation in progress in the project's own git dir, if any.
std::string in_progress(const std::string& git_dir) {
  struct Marker {
    const char* file;
    const char* what;
  };
  static constexpr Marker kMarkers[] = {
      {"rebase-merge", "a rebase"},          {"rebase-apply", "a rebase or am"}, {"MERGE_HEAD", "a merge"},
      {"CHERRY_PICK_HEAD", "a cherry-pick"}, {"REVERT_HEAD", "a revert"},        {"BISECT_LOG", "a bisect"},
  };
  for (const auto& m : kMarkers)
    if (fs::exists(git_dir + "/" + m.file)) return m.what;
  return "";
}

struct ProjectState {
  std::string branch;  // empty: detached
  std::string tip;
  std::string busy;  // operation in progress
  std::vector<std::string> dirty;
};

Expected<ProjectState> project_state(const build::Project& p) {
  ProjectState st;
  st.busy = in_progress(p.git_dir);
  auto env = git::repo_env(p.git_dir, p.root);
  auto sym = git::run({"symbolic-ref", "-q", "HEAD"}, env);
  if (!sym) return std::move(sym).error();
  if (sym->ok()) st.branch = git::chomp(sym->out);
  auto tip = git::run({"rev-parse", "-q", "--verify", "HEAD^{commit}"}, env);
  if (!tip) return std::move(tip).error();
  if (tip->ok()) st.tip = git::chomp(tip->out);
  auto status = git::capture({"status", "--porcelain=v1", "-z", "--untracked-files=no"}, env,
                             "read the project's status");
  if (!status) return std::move(status).error();
  for (const auto& e : git::split(*status, '\0'))
    if (e.size() > 3) st.dirty.push_back(e.substr(3));
  return st;
}

std::string list_some(const std::vector<std::string>& paths) {
  std::string out;
  for (std::size_t i = 0; i < paths.size() && i < 5; ++i) out += (i ? ", " : "") + printable(paths[i]);
  if (paths.size() > 5) out += " and " + std::to_string(paths.size() - 5) + " more";
  return out;
}

// Who commits Chock makes here are by.
git::Env with_identity(git::Env env, const std::string& common) {
  std::string name = kAgentName, email = kAgentEmail;
  auto n = git::run({"config", "--get", "user.name"}, git::repo_env(common));
  auto e = git::run({"config", "--get", "user.email"}, git::repo_env(common));
  if (n && e && n->ok() && e->ok()) {
    name = git::chomp(n->out);
    email = git::chomp(e->out);
  }
  env.vars.emplace_back("GIT_COMMITTER_NAME", name);
  env.vars.emplace_back("GIT_COMMITTER_EMAIL", email);
  env.vars.emplace_back("GIT_AUTHOR_NAME", name);
  env.vars.emplace_back("GIT_AUTHOR_EMAIL", email);
  return env;
}

struct Merged {
  std::string tree;
  std::vector<std::string> conflicts;
};

Expected<Merged> merge_trees(const git::Env& env, const std::string& ours, const std::string& theirs) {
  auto r = git::run({"merge-tree", "--write-tree", "--name-only", "--no-messages", ours, theirs}, env);
  if (!r) return std::move(r).error();
  if (r->status != 0 && r->status != 1) return Error{"merge: " + r->first_error_line(), "", 0};
  auto lines = git::split(r->out, '\n');
  if (lines.empty()) return Error{"merge: git printed no tree", "", 0};
  Merged m{lines[0], {}};
  if (r->status == 1)
    for (std::size_t i = 1; i < lines.size() && !lines[i].empty(); ++i) m.conflicts.push_back(lines[i]);
  if (r->status == 1 && m.conflicts.empty()) m.conflicts.emplace_back("(unnamed)");
  return m;
}

Expected<std::string> commit_tree(git::Env env, const std::string& tree,
                                  const std::vector<std::string>& parents, const std::string& message) {
  std::vector<std::string> args{"commit-tree", tree};
  for (const auto& p : parents) {
    args.emplace_back("-p");
    args.push_back(p);
  }
  args.emplace_back("-F");
  args.emplace_back("-");
  env.stdin_data = message;
  auto r = git::capture(args, env, "make a commit");
  if (!r) return std::move(r).error();
  return git::chomp(*r);
}

// The commit the branch fast-forwards to, or a conflict (paths in `conflicts`).
Expected<std::string> integrate(const Session& s, const ApplyPlan& plan,
                                std::vector<std::string>& conflicts) {
  git::Env env = with_identity(git::repo_env(s.common_dir), s.common_dir);
  std::string range = session_git::from(s) + ".." + plan.head;
  if (plan.fast_forward && plan.mode != Mode::squash) return plan.head;
  if (plan.mode == Mode::rebase) {
    auto list =
        git::capture({"rev-list", "--reverse", "--no-merges", range}, env, "list the commits to replay");
    if (!list) return std::move(list).error();
    std::string current = plan.tip;
    for (const auto& c : git::split(*list, '\n')) {
      auto m = merge_trees(env, current, c);
      if (!m) return std::move(m).error();
      if (!m->conflicts.empty()) {
        conflicts = m->conflicts;
        return std::string();
      }
      auto info = git::capture({"log", "-1", "--format=%an%x00%ae%x00%ad%x00%B", "--date=raw", c}, env,
                               "read a commit");
      if (!info) return std::move(info).error();
      auto parts = git::split(*info, '\0');
      if (parts.size() < 4) return Error{"read a commit: unexpected format", c, 0};
      git::Env author = env;
      author.vars.emplace_back("GIT_AUTHOR_NAME", parts[0]);
      author.vars.emplace_back("GIT_AUTHOR_EMAIL", parts[1]);
      author.vars.emplace_back("GIT_AUTHOR_DATE", parts[2]);
      auto made = commit_tree(author, m->tree, {current}, git::chomp(parts[3]) + "\n");
      if (!made) return made;
      current = *made;
    }
    return current;
  }
  std::string tree;
  if (plan.fast_forward) {
    auto t = git::capture({"rev-parse", plan.head + "^{tree}"}, env, "read the session's tree");
    if (!t) return std::move(t).error();
    tree = git::chomp(*t);
  } else {
    auto m = merge_trees(env, plan.tip, plan.head);
    if (!m) return std::move(m).error();
    if (!m->conflicts.empty()) {
      conflicts = m->conflicts;
      return std::string();
    }
    tree = m->tree;
  }
  std::string list;
  for (const auto& c : plan.commits) list += "  " + c + "\n";
  if (plan.mode == Mode::merge)
    return commit_tree(env, tree, {plan.tip, plan.head}, "Merge chock session " + s.id + "\n\n" + list);
  if (plan.commits.size() == 1) {
    auto msg = git::capture({"log", "-1", "--format=%B", plan.head}, env, "read a commit");
    if (!msg) return std::move(msg).error();
    return commit_tree(env, tree, {plan.tip}, git::chomp(*msg) + "\n");
  }
  return commit_tree(
      env, tree, {plan.tip},
      "Chock session " + s.id + ": " + std::to_string(plan.commits.size()) + " commits\n\n" + list);
}

bool is_configuration(const std::string& path) {
  for (const char* f : kConfigurationFiles)
    if (path == f) return true;
  return false;
}

// Every path the range changes, with its line counts, and the configuration files among them.
Expected<void> describe_changes(const Session& s, ApplyPlan& plan) {
  git::Env env = session_git::env(s);
  auto numstat = git::capture(
      {"diff", "--no-renames", "--no-ext-diff", "--numstat", "-z", session_git::from(s), plan.head}, env,
      "list the paths the session's commits change");
  if (!numstat) return std::move(numstat).error();
  // "<added>\t<removed>\t<path>" records, NUL-ended; "-\t-" for binary files.
  for (const auto& record : git::split(*numstat, '\0')) {
    auto t1 = record.find('\t');
    auto t2 = t1 == std::string::npos ? t1 : record.find('\t', t1 + 1);
    if (t2 == std::string::npos) continue;
    std::string path = record.substr(t2 + 1);
    std::string added = record.substr(0, t1), removed = record.substr(t1 + 1, t2 - t1 - 1);
    std::string line = path;
    if (added == "-") {
      line += " (binary)";
    } else {
      line.append(" (+").append(added).append(" -").append(removed).append(")");
    }
    plan.paths.push_back(std::move(line));
    if (is_configuration(path)) plan.configuration.push_back(path);
  }
  if (plan.configuration.empty()) return {};
  std::vector<std::string> args{
      "diff", "--no-renames", "--no-ext-diff", "--no-color", session_git::from(s), plan.head, "--"};
  args.insert(args.end(), plan.configuration.begin(), plan.configuration.end());
  auto diff = git::capture(args, env, "show the configuration the session's commits change");
  if (!diff) return std::move(diff).error();
  plan.configuration_diff = std::move(*diff);
  return {};
}

// Apply takes the commits of the session's HEAD only; its other branches
// and tags stay in the session, and the person is told which.
std::string own_refs_line(const Session& s) {
  auto own = session_refs::own_branches_and_tags(s);
  if (!own || own->empty()) return {};
  std::string names;
  for (const auto& r : *own) names += (names.empty() ? "" : ", ") + printable(r);
  return "\nthe session also has branches or tags of its own (" + names +
         "): apply takes only the commits of its HEAD; they stay in the session";
}

}  // namespace

Expected<Mode> parse_mode(const std::string& name) {
  if (name == "merge") return Mode::merge;
  if (name == "rebase") return Mode::rebase;
  if (name == "squash") return Mode::squash;
  return Error{"--mode " + name + ": use merge, rebase or squash", "", 0, Errc::bad_config};
}

Expected<ApplyOutcome> apply(const std::string& id, Mode mode, const Approve& approve) {
  auto loaded = load(id);
  if (!loaded) return std::move(loaded).error();
  Session s = std::move(*loaded);
  if (s.kind != Kind::git)
    return Error{
        "session " + id + " is an overlay: its work comes back with 'chock workspace adopt " + id + "'", "",
        0, Errc::bad_config};
  auto held = lock(s, true);  // waits for the session's calls
  if (!held) return std::move(held).error();
  auto project = build::find_project(s.project);
  if (!project) return std::move(project).error();
  if (!project->git || project->common_dir != s.common_dir)
    return Error{"the project is no longer the repository this session was made from", s.project, 0};
  if (auto r = session_git::check_objects(s); !r) return std::move(r).error();
  auto head = session_git::head(s);
  if (!head) return std::move(head).error();
  auto commits = session_git::commits(s, *head);
  if (!commits) return std::move(commits).error();
  if (commits->empty()) {
    return ApplyOutcome{
        ApplyOutcome::State::nothing,
        "session " + id + " has no commit to apply (its HEAD is " + short_id(*head) + ")" + own_refs_line(s),
        ""};
  }
  if (auto r = session_git::park(s, *head); !r) return std::move(r).error();

  auto st = project_state(*project);
  if (!st) return std::move(st).error();
  if (!st->busy.empty())
    return refused(s, st->busy + " is in progress in the project", "finish or abort it, " + again(s));
  if (st->branch.empty())
    return refused(s, "no branch is checked out (HEAD is detached)",
                   "check out a branch (git switch BRANCH), " + again(s));
  if (!st->dirty.empty())
    return refused(s, "the working tree has uncommitted changes (" + list_some(st->dirty) + ")",
                   "commit or stash them, " + again(s));

  ApplyPlan plan;
  plan.session = id;
  plan.project = s.project;
  plan.branch = st->branch;
  plan.tip = st->tip;
  plan.head = *head;
  plan.parked = session_git::parked_ref(s);
  plan.mode = mode;
  plan.commits = *commits;
  auto ff = git::run({"merge-base", "--is-ancestor", plan.tip, plan.head}, git::repo_env(s.common_dir));
  if (!ff) return std::move(ff).error();
  plan.fast_forward = ff->ok();
  if (auto r = describe_changes(s, plan); !r) return std::move(r).error();

  Approval answer = approve ? approve(plan) : Approval{false, "nobody approved it"};
  if (!answer.approved) return refused(s, answer.refusal, "");
  if (!plan.configuration.empty() && !answer.configuration)
    return refused(s,
                   "the commits change " + list_some(plan.configuration) +
                       ", the configuration of every later call (its policy, its toolchain evaluated on the "
                       "host, or an agent's MCP servers and chock mcp's rules); that needs a yes on a "
                       "terminal that showed the diff",
                   "run 'chock apply " + id + "' on a terminal and read the diff before you answer");

  auto repository = lock_repository(s.common_dir);
  if (!repository) return std::move(repository).error();
  auto now = project_state(*project);
  if (!now) return std::move(now).error();
  if (now->branch != plan.branch || now->tip != plan.tip)
    return refused(s,
                   "the branch moved since the question was asked (" + printable(plan.branch) + " was " +
                       short_id(plan.tip) + ", is now " +
                       (now->tip.empty() ? std::string("gone") : short_id(now->tip)) + ")",
                   "run 'chock apply " + id + "' again to see the new plan");
  if (!now->dirty.empty() || !now->busy.empty())
    return refused(s, "the project changed since the question was asked", again(s));

  std::vector<std::string> conflicts;
  auto result = integrate(s, plan, conflicts);
  if (!result) return std::move(result).error();
  if (!conflicts.empty())
    return refused(s, "a conflict with " + printable(plan.branch) + " in " + list_some(conflicts),
                   "merge it yourself (git merge " + plan.parked + "), or rebase the work");

  auto ffwd = git::run({"merge", "--ff-only", "-q", *result},
                       with_identity(git::repo_env(project->git_dir, project->root), s.common_dir));
  if (!ffwd) return std::move(ffwd).error();
  if (!ffwd->ok())
    return refused(s, "git could not fast-forward: " + printable(ffwd->first_error_line()), again(s));

  s.applied = *head;
  if (auto r = save(s); !r) return std::move(r).error();
  (void)git::run({"update-ref", "-d", plan.parked, *head}, git::repo_env(s.common_dir));
  static constexpr const char* kModeNames[] = {"merge", "rebase", "squash"};
  std::string how =
      plan.fast_forward && mode != Mode::squash ? "fast-forward" : kModeNames[static_cast<int>(mode)];
  return ApplyOutcome{ApplyOutcome::State::applied,
                      "applied " + std::to_string(plan.commits.size()) + " commit" +
                          (plan.commits.size() == 1 ? "" : "s") + " of session " + id + " onto " +
                          printable(plan.branch) + " (" + how + "): now at " + short_id(*result) +
                          own_refs_line(s),
                      *result};
}

}  // namespace chock::workspace
