// The git workspace: a linked worktree whose admin and common dirs are
// private to the session (the layout: docs/architecture.md, "The data directory").
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <future>
#include <optional>
#include <string_view>
#include <system_error>
#include <utility>

#include "util/fd.hpp"
#include "util/fs.hpp"
#include "util/passwd.hpp"
#include "workspace/bases.hpp"
#include "workspace/build.hpp"
#include "workspace/git.hpp"
#include "workspace/index_file.hpp"
#include "workspace/progress.hpp"

namespace chock::workspace::build {

namespace {

// The private common dir: a generated config, the session's own objects
// (the real ones as the alternate), and links into the view for the rest.
Expected<void> make_common(const Session& s, Notes& notes) {
  std::string common = s.common();
  for (const char* d : {"/objects", "/objects/info", "/objects/pack"})
    if (auto r = fs::make_dirs(common + d); !r) return r;
  if (auto r = fs::write_file(common + "/objects/info/alternates", "../../repo/objects\n"); !r) return r;
  if (auto r = write_common_config(s); !r) return r;
  return refresh_view(s, notes);
}

// The session's git dir beside its tree: admin/ (HEAD, commondir, gitdir),
// the link to the repository, the private common dir.
Expected<void> make_git_dir(const Session& s, const Project& project, Notes& notes) {
  if (auto r = fs::make_dirs(s.dir + "/git/admin"); !r) return r;
  const std::string repo_link = s.dir + "/git/repo";
  if (::symlink(project.common_dir.c_str(), repo_link.c_str()) != 0) return sys_error("symlink", repo_link);
  if (auto r = make_common(s, notes); !r) return r;
  const std::string admin = s.admin();
  if (auto r = fs::write_file(admin + "/HEAD", s.base + "\n"); !r) return r;
  if (auto r = fs::write_file(admin + "/commondir", "../common\n"); !r) return r;
  return fs::write_file(admin + "/gitdir", project.root + "/.git\n");
}

}  // namespace

std::string index_header(const std::string& index) {
  // The header alone, not the whole index.
  UniqueFd fd(::open(index.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  char head[12] = {};
  if (!fd || ::pread(fd.get(), head, sizeof head, 0) != static_cast<ssize_t>(sizeof head)) return {};
  return {head, sizeof head};
}

std::uint64_t index_entries(const std::string& index) {
  return index_file::entry_count(index_header(index)).value_or(0);
}

std::string writable_tree(const Session& s) {
  return s.shared_base.empty() ? s.tree() : s.upper();
}

Expected<void> make_worktree(Session& s, const Project& project, WorktreeKind kind, Notes& notes,
                             const Progress& progress, std::uint32_t progress_after_ms, UniqueFd& base_lock) {
  s.common_dir = project.common_dir;
  s.base = project.head;
  // The shared base (made, derived or there) and the session's git dir need
  // nothing of each other: the base is held on a thread of its own while
  // the git dir is made (where no thread can start, one after the other).
  std::future<Expected<bases::Held>> holding;
  if (!kind.allow_dirty) {
    try {
      holding =
          std::async(std::launch::async, [&project, owner = s.owner, &kind, &progress, progress_after_ms] {
            return bases::hold(project, owner, kind.link_base_index, progress, progress_after_ms);
          });
    } catch (const std::system_error&) {
    }
  }
  if (auto r = make_git_dir(s, project, notes); !r) {
    // A full disk fails both; the base's failure is the cause to tell.
    if (holding.valid())
      if (auto held = holding.get(); !held) return std::move(held).error();
    return r;
  }
  const std::string admin = s.admin();
  const bool root_caller = ::geteuid() == 0 && s.owner != 0;
  const gid_t gid = group_of(s.owner);

  if (!kind.allow_dirty) {
    // Over the commit's shared base: a few directories and a link to its
    // index, whatever the size of the tree (bases.hpp). The admin dir inside
    // is an overlay over that link: the session has an index of its own only
    // once its git writes one (renamed over the base's; a write in place is
    // overlayfs's copy, never the base's file). Where the operator links the
    // base's index and the base is settled, the small half of its split
    // index instead, the shared half linked (and bound read-only in each
    // call). The lock is held until the session's record names the base.
    auto held = holding.valid()
                    ? holding.get()
                    : bases::hold(project, s.owner, kind.link_base_index, progress, progress_after_ms);
    if (!held) return std::move(held).error();
    base_lock = std::move(held->lock);
    s.shared_base = bases::key(s.owner, s.base);
    const auto split = kind.link_base_index ? bases::shared_index(held->dir) : std::nullopt;
    s.index_below = !split;
    std::vector<std::string> own{s.upper(), s.work()};
    if (s.index_below) own.push_back(admin_work(s));
    for (const auto& d : own)
      if (auto r = fs::make_dirs(d, 0755); !r) return r;
    if (s.index_below) {
      if (auto r = fs::make_dirs(index_below_dir(s), 0755); !r) return r;
    } else if (auto r = fs::copy_entry(split->index, admin + "/index"); !r) {
      return r;
    }
    if (auto r = cover_denied(s, s.deny, notes); !r) return r;
    if (root_caller) {
      own.insert(own.end(), {admin, s.common()});
      for (const auto& d : own)
        if (auto r = fs::chown_tree(d, s.owner, gid); !r) return r;
    }
    // Linked after the chown: the base's file stays whose it is.
    if (s.index_below) {
      // A copy where no link can be made (a workspaces directory mounted
      // apart from bases/): the session holds the index, as it did before.
      const std::string link = index_below_dir(s) + "/index";
      if (::link((held->dir + "/index").c_str(), link.c_str()) != 0) {
        if (errno != EXDEV && errno != EMLINK && errno != EPERM) return sys_error("link", link);
        if (auto r = fs::copy_entry(held->dir + "/index", link); !r) return r;
      }
    } else {
      const std::string link = admin + "/" + split->name;
      if (::link(split->shared.c_str(), link.c_str()) != 0) return sys_error("link", link);
      s.shared_index = split->name;
    }
    return {};
  }

  // --allow-dirty: a checkout of its own, the project's uncommitted work copied in.
  if (auto r = fs::make_dirs(s.tree()); !r) return r;
  // Check out with git pointed at the real repository and our index; the
  // session's config is never git's configuration on the host.
  auto env = git::repo_env(project.common_dir, s.tree(), admin + "/index", s.objects());
  if (auto r = git::capture({"read-tree", s.base + "^{commit}"}, env, "read the base commit into the index");
      !r)
    return std::move(r).error();
  {
    ProgressWatch watch(progress, progress_after_ms, "checking out " + s.base.substr(0, 12), s.tree(),
                        index_entries(admin + "/index"));
    if (auto r = git::capture({"checkout-index", "-a", "-u"}, env, "check out the worktree"); !r)
      return std::move(r).error();
  }
  if (auto r = fs::write_file(s.tree() + "/.git", std::string("gitdir: ") + kSandboxGitRoot + "/admin\n"); !r)
    return r;
  if (auto r = import_dirty(s, project, notes); !r) return r;
  if (auto r = cover_denied(s, s.deny, notes); !r) return r;
  if (root_caller) {
    for (const char* d : {"/tree", "/git/admin", "/git/common"})
      if (auto r = fs::chown_tree(s.dir + d, s.owner, gid); !r) return r;
    // chown moved every ctime: refresh the index so the first `git status`
    // inside does not rehash the whole tree. Exit 1 only means "modified".
    auto refreshed = git::run({"update-index", "-q", "--refresh"}, env);
    if (!refreshed) return std::move(refreshed).error();
    if (refreshed->status > 1) return Error{"refresh the index: " + refreshed->first_error_line(), admin, 0};
    if (::lchown((admin + "/index").c_str(), s.owner, gid) != 0) return sys_error("chown", admin + "/index");
  }
  return {};
}

std::string index_below_dir(const Session& s) {
  return s.dir + "/git/index-below";
}

std::string admin_work(const Session& s) {
  return s.dir + "/git/admin-work";
}

}  // namespace chock::workspace::build
