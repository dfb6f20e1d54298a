// A session as mounts: what the sandbox core is asked to build for a call.
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <string>

#include "chock/workspace.hpp"
#include "sandbox/overlay_holder.hpp"
#include "util/fs.hpp"
#include "workspace/bases.hpp"
#include "workspace/build.hpp"

namespace chock::workspace {

namespace {

// How long a session's overlay stays mounted after its last call:
// CHOCK_OVERLAY_HOLD_MS (0: not kept), else 20 seconds.
Expected<std::chrono::milliseconds> hold_idle() {
  const char* given = std::getenv("CHOCK_OVERLAY_HOLD_MS");
  if (given == nullptr || *given == '\0') return std::chrono::milliseconds(std::chrono::seconds(20));
  char* end = nullptr;
  errno = 0;
  const unsigned long long ms = std::strtoull(given, &end, 10);
  if (*end != '\0' || errno != 0 || ms > 3'600'000 || *given < '0' || *given > '9')
    return Error{
        std::string("CHOCK_OVERLAY_HOLD_MS=") + given +
            " in chock's environment: not milliseconds from 0 (keep no overlay between calls) to 3600000",
        "", 0, Errc::bad_config};
  return std::chrono::milliseconds(ms);
}

// One of the session's overlays kept mounted for its next call by the
// session's holder (overlay_holder.hpp); where hold_idle is 0, those kept
// before are let go, not mounted beside. A task's runs beside the calls:
// never kept, never letting go.
Expected<void> keep_for_next_call(Overlay& o, const Session& s, Mounter mounter, bool watch_lower) {
  auto idle = hold_idle();  // checked for every call, a task's too: a bad value is said, not ignored
  if (!idle) return std::move(idle).error();
  if (mounter == Mounter::task) return {};
  o.hold_dir = s.dir;
  o.hold_lock = s.dir + "/mounts.lock";
  o.hold_watch_lower = watch_lower;
  if (mounter == Mounter::kept_call) o.hold_idle = *idle;
  return {};
}

bool is_within(const std::string& path, const std::string& dir) {
  return path == dir || (path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 &&
                         (dir == "/" || path[dir.size()] == '/'));
}

}  // namespace

Expected<void> add_to_config(const Session& s, const std::string& host_cwd, Config& config, Mounter mounter) {
  const std::size_t first_overlay = config.overlays.size();
  if (s.kind == Kind::git) {
    std::string root = kSandboxGitRoot;
    // The tree at the project's own path; its .git file names the admin dir below.
    // The project's configuration is read-only inside: a call cannot rewrite
    // the rules the next call of its session is decided by.
    struct stat st {};
    if (s.shared_base.empty()) {
      config.binds.push_back(Bind{s.tree(), s.project, Access::read_write});
      if (::lstat((s.tree() + "/chock.zon").c_str(), &st) == 0 && S_ISREG(st.st_mode))
        config.binds.push_back(
            Bind{s.tree() + "/chock.zon", s.project + "/chock.zon", Access::read_only_file});
    } else {
      // An overlay: the commit's shared base below (its layers, when derived
      // from an older base), the session's own layer above.
      auto lowers = bases::layers_of(s.shared_base);
      if (!lowers) return std::move(lowers).error();
      for (const auto& lower : *lowers)
        if (!fs::is_dir(lower))
          return Error{"session " + s.id + ": its shared base is gone (chock workspace remove " + s.id +
                           " --force parks its commits)",
                       lower, ENOENT};
      config.overlays.push_back(Overlay{lowers->front(), s.upper(), s.work(), s.project,
                                        std::vector<std::string>(lowers->begin() + 1, lowers->end())});
      // A base never changes under it.
      if (auto r = keep_for_next_call(config.overlays.back(), s, mounter, false); !r) return r;
      // chock.zon as the tree shows it: the topmost layer that has it (a
      // whiteout, or anything but a file, ends the search with none).
      std::vector<std::string> layers{s.upper()};
      layers.insert(layers.end(), lowers->begin(), lowers->end());
      for (const std::string& layer : layers) {
        const std::string zon = layer + "/chock.zon";
        if (::lstat(zon.c_str(), &st) != 0) continue;
        if (S_ISREG(st.st_mode))
          config.binds_over_overlays.push_back(Bind{zon, s.project + "/chock.zon", Access::read_only_file});
        break;
      }
    }
    // Never the real git dir: its config, index, reflogs and stash stay out (git_view.cpp).
    std::string view = build::view_dir(s);
    config.binds.push_back(Bind{view, root + "/view", Access::read_only});
    struct stat hooks {};
    if (::stat((s.common_dir + "/hooks").c_str(), &hooks) == 0 && S_ISDIR(hooks.st_mode))
      config.binds.push_back(Bind{s.common_dir + "/hooks", root + "/view/hooks", Access::read_only});
    config.binds.push_back(
        Bind{build::view_has_own_objects(s) ? view + "/objects" : s.common_dir + "/objects",
             root + "/repo/objects", Access::read_only});
    config.binds.push_back(Bind{s.common(), root + "/common", Access::read_write});
    if (s.index_below) {
      // Its index the base's until git writes one; kept mounted with the
      // tree (its lower layer, a link, never changes either).
      config.overlays.push_back(
          Overlay{build::index_below_dir(s), s.admin(), build::admin_work(s), root + "/admin"});
      if (auto r = keep_for_next_call(config.overlays.back(), s, mounter, false); !r) return r;
    } else {
      config.binds.push_back(Bind{s.admin(), root + "/admin", Access::read_write});
    }
    // Every session at the commit reads this file: no call writes it.
    if (!s.shared_index.empty())
      config.binds.push_back(
          Bind{s.admin() + "/" + s.shared_index, root + "/admin/" + s.shared_index, Access::read_only_file});
    // Carried directories over their place in the tree, the real one as the lower layer.
    for (std::size_t i = 0; i < s.carry.size(); ++i) {
      const std::string at = s.project + "/" + s.carry[i];
      config.overlays.push_back(Overlay{at,
                                        build::carry_upper(s, i),
                                        build::carry_work(s, i),
                                        at,
                                        {},
                                        i < s.carry_shift.size() ? s.carry_shift[i] : std::nullopt});
    }
  } else {
    config.overlays.push_back(Overlay{s.lower, s.upper(), s.work(), s.project, {}, s.lower_shift});
    // The person goes on changing the project: its first change lets the
    // overlay go. A project too large to watch is mounted for each call.
    if (!fs::exists(s.dir + "/" + sandbox::kUnwatchedMarker))
      if (auto r = keep_for_next_call(config.overlays.back(), s, mounter, true); !r) return r;
  }
  config.cwd = is_within(host_cwd, s.project) ? host_cwd : s.project;
  if (config.env) {
    config.env->push_back("CHOCK_SESSION=" + s.id);
    config.env->push_back("CHOCK_PROJECT=" + s.project);
  }
  if (::geteuid() == 0 && !config.user) config.user = s.owner;
  // A task's mounts work in directories of their own (work_dirs.cpp); a
  // call's, one at a time, in the work roots themselves.
  for (std::size_t i = first_overlay; mounter == Mounter::task && i < config.overlays.size(); ++i) {
    auto own = build::own_work_dir(config.overlays[i].work);
    if (!own) return std::move(own).error();
    config.overlays[i].work = std::move(*own);
  }
  return {};
}

}  // namespace chock::workspace
