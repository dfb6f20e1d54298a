// The overlay workspace of a project that is not a git repository: the
// project is the read-only lower layer; the sandbox mounts the overlay
// (userxattr) over the project's path. A root caller gets a copy as the
// lower layer instead, owned by the uid the call runs as, because that uid
// could not write over root's files through the overlay.
#include <unistd.h>

#include <algorithm>

#include "workspace/build.hpp"
#include "workspace/fs.hpp"
#include "workspace/progress.hpp"

namespace chock::workspace::build {

Expected<void> make_overlay(Session& s, Notes& notes, const Progress& progress,
                            std::uint32_t progress_after_ms) {
  for (const char* d : {"/upper", "/work"})
    if (auto r = fs::make_dirs(s.dir + d, 0755); !r) return r;
  s.lower = s.project;
  if (::geteuid() == 0 && s.owner != 0) {
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
    if (auto r = fs::chown_tree(s.lower, s.owner, group_of(s.owner)); !r) return r;
  }
  if (auto r = cover_denied(s, s.deny, notes); !r) return r;
  if (::geteuid() == 0 && s.owner != 0) {
    for (const char* d : {"/upper", "/work"})
      if (auto r = fs::chown_tree(s.dir + d, s.owner, group_of(s.owner)); !r) return r;
  }
  return {};
}

}  // namespace chock::workspace::build
