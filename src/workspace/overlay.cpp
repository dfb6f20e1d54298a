// The overlay workspace of a project that is not a git repository: the
// project is the read-only lower layer; the sandbox mounts the overlay
// (userxattr) over the project's path. A root caller's call runs as another
// uid, which could not write over the project owner's files through the
// overlay: the lower layer is then the project through an idmapped mount
// that shows its owner as that uid, or, where that mount cannot be made, a
// copy owned by that uid.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "sandbox/mount_tree.hpp"
#include "util/fs.hpp"
#include "util/passwd.hpp"
#include "workspace/build.hpp"
#include "workspace/progress.hpp"

namespace chock::workspace::build {

Expected<std::optional<OwnerShift>> lower_shift_for(const Session& s, const std::string& lower,
                                                    const std::string& upper, const std::string& work) {
  struct stat st {};
  if (::stat(lower.c_str(), &st) != 0) return sys_error("stat", lower);
  const OwnerShift shift{st.st_uid, st.st_gid, s.owner, group_of(s.owner)};
  if (shift.uid_from == shift.uid_to && shift.gid_from == shift.gid_to) return std::optional<OwnerShift>{};
  auto tried = sandbox::mount_overlay_now(Overlay{lower, upper, work, lower, {}, shift});
  if (!tried) return std::move(tried).error();
  return std::optional<OwnerShift>{shift};
}

namespace {

Expected<void> copy_project(Session& s, Notes& notes, const Progress& progress,
                            std::uint32_t progress_after_ms) {
  s.lower = s.dir + "/lower";
  fs::CopyHooks hooks;
  hooks.skip = [&](const std::string& rel) -> std::string {
    // The bytes of a denied file are never copied; cover_denied writes the notice.
    return std::find(s.deny.begin(), s.deny.end(), rel) != s.deny.end() ? "denied" : "";
  };
  hooks.on_skip = [&](const std::string& rel, const std::string& why) {
    if (why != "denied") notes.push_back("copy skipped " + rel + ": " + why);
  };
  {
    ProgressWatch watch(progress, progress_after_ms, "copying " + s.project, s.dir,
                        progress ? fs::count_entries(s.project) : 0);
    if (auto r = fs::copy_tree(s.project, s.lower, hooks); !r) return r;
  }
  return fs::chown_tree(s.lower, s.owner, group_of(s.owner));
}

}  // namespace

Expected<void> make_overlay(Session& s, Notes& notes, const Progress& progress,
                            std::uint32_t progress_after_ms) {
  for (const char* d : {"/upper", "/work"})
    if (auto r = fs::make_dirs(s.dir + d, 0755); !r) return r;
  s.lower = s.project;
  const bool root_caller = ::geteuid() == 0 && s.owner != 0;
  if (root_caller) {
    auto shift = lower_shift_for(s, s.project, s.upper(), s.work());
    if (shift) {
      s.lower_shift = *shift;
    } else {
      notes.push_back("the project is copied for this session: an idmapped mount of it does not work here (" +
                      shift.error().message() + ")");
      if (auto r = copy_project(s, notes, progress, progress_after_ms); !r) return r;
    }
  }
  if (auto r = cover_denied(s, s.deny, notes); !r) return r;
  if (root_caller) {
    for (const char* d : {"/upper", "/work"})
      if (auto r = fs::chown_tree(s.dir + d, s.owner, group_of(s.owner)); !r) return r;
  }
  return {};
}

}  // namespace chock::workspace::build
