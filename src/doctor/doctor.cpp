// The order of the rows and which of them block. A row blocks when chock run
// cannot do without its layer; the workspace rows block only for the kind of
// workspace this project gets.
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <optional>

#include "doctor/probes.hpp"
#include "util/dirs.hpp"
#include "util/fs.hpp"
#include "workspace/git.hpp"
#include "workspace/project.hpp"

namespace chock::doctor {

Scratch::~Scratch() {
  if (!path_.empty()) (void)fs::remove_tree(path_);
}

Expected<void> Scratch::make(Scratch& scratch, uid_t owner, gid_t group) {
  const char* tmp = std::getenv("TMPDIR");
  std::string tmpl = std::string(tmp != nullptr && tmp[0] == '/' ? tmp : "/tmp") + "/chock-doctor.XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) return sys_error("make the probes' directory", tmpl);
  scratch.path_ = tmpl;
  scratch.owner_ = owner;
  scratch.group_ = group;
  // A root caller's probes drop to the call's uid before they touch it.
  if (::geteuid() == 0 && ::chown(tmpl.c_str(), owner, group) != 0) return sys_error("chown", tmpl);
  return {};
}

Expected<std::string> Scratch::subdir(const std::string& name) const {
  std::string path = path_ + "/" + name;
  if (::mkdir(path.c_str(), 0755) != 0) return sys_error("mkdir", path);
  if (::geteuid() == 0 && ::chown(path.c_str(), owner_, group_) != 0) return sys_error("chown", path);
  return path;
}

namespace {

// The project Chock will not work in, with what git itself says of it.
Row project_row(const workspace::Project& p, const std::string& why) {
  std::string said;
  if (auto git = workspace::git::run({"-C", p.root, "rev-parse", "--git-dir"}); git && !git->ok())
    said = "; git says: " + git->first_error_line();
  return make_row("project", Level::off, true, why + said);
}

}  // namespace

Expected<std::vector<Row>> check(const Options& options) {
  // The project first, as chock run finds it: a bad chock.zon means a first
  // run cannot work, and nothing is worth probing before that is said.
  const std::string dir = options.project_dir.empty() ? current_dir() : options.project_dir;
  auto found = workspace::find_project(dir);
  // A repository Chock refuses (another uid's) is one row of its own, and
  // every other row is still tried: they say what this machine can do.
  std::optional<Row> refused;
  if (!found && found.error().kind == Errc::bad_config) {
    auto located = workspace::locate_project(dir, false);
    if (located && located->git) {
      refused = project_row(*located, found.error().message());
      found = std::move(*located);
    }
  }
  if (!found) return std::move(found).error();
  const workspace::Project* project = &*found;
  auto jit = policy_answer(options, project->root, policy::kSandboxJit);
  if (!jit) return std::move(jit).error();
  auto nix = policy_answer(options, project->root, policy::kToolchainNix);
  if (!nix) return std::move(nix).error();

  Context context;
  auto identity = sandbox::plan_identity(Config{});
  if (!identity) return std::move(identity).error();
  context.identity = *identity;
  context.root_caller = ::geteuid() == 0;
  if (auto made = Scratch::make(context.scratch, context.identity.uid, context.identity.gid); !made)
    return std::move(made).error();

  // Which workspace chock run would build here decides what the overlay and
  // git rows are needed for.
  const bool worktree = project->git && !project->head.empty();
  const bool overlay_blocks = !worktree && !context.root_caller;
  std::string overlay_why;
  if (worktree)
    overlay_why =
        "; not needed here: " + project->root + " is a git repository, so its workspace is a worktree";
  else if (context.root_caller)
    overlay_why =
        "; a root caller's overlay is mounted as root before the call drops its uid, so this does not block";
  else
    overlay_why = "; needed: the workspace of " + project->root + " is an overlay";
  const std::string git_why = project->git
                                  ? "; needed: " + project->root + " is a git repository"
                                  : "; not needed here: " + project->root + " is not a git repository";

  std::vector<Row> rows = namespace_rows(context);
  rows.push_back(nested_namespaces_row(context));
  rows.push_back(landlock_row(context));
  ChildResult strict = try_filter(false);
  rows.push_back(seccomp_row(strict));
  rows.push_back(write_execute_row(*jit, strict));
  rows.push_back(memfd_row());
  rows.push_back(pidfd_row());
  rows.push_back(clone_into_cgroup_row());
  rows.push_back(overlay_row(context, overlay_blocks, overlay_why));
  rows.push_back(idmap_row(context, project->root,
                           worktree ? "; not needed here: " + project->root + " is a git repository"
                                    : "; needed here: the workspace of " + project->root + " is an overlay"));
  Row floor = rlimit_row();
  rows.push_back(cgroup_row(floor));
  rows.push_back(memory_row());
  rows.push_back(std::move(floor));
  rows.push_back(tmpfs_row(context));
  for (Row& r : filtered_network_rows()) rows.push_back(std::move(r));
  rows.push_back(device_row(options, project->root));
  rows.push_back(toolchain_row(project->root, *nix));
  rows.push_back(git_row(project->git, git_why));
  rows.push_back(space_row());
  rows.push_back(disk_row());
  if (refused) rows.push_back(std::move(*refused));
  return rows;
}

}  // namespace chock::doctor
