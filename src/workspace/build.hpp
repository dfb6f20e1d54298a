// Building a session's workspace: finding the project, the git worktree,
// the overlay, the dirty import and the deny covers. Internal to workspace/
// (docs/architecture.md): the floors above use project.hpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "chock/workspace.hpp"
#include "util/fd.hpp"
#include "util/fs.hpp"
#include "workspace/project.hpp"

namespace chock::workspace::build {

// Finding the project (project.hpp), named here as the rest of workspace/ knows it.
using workspace::find_project;
using workspace::locate_project;
using workspace::Project;

using Notes = std::vector<std::string>;

// How a worktree is made: `allow_dirty`, a checkout of its own with the
// project's uncommitted work; else over the commit's shared base, its index
// linked where `link_base_index` and the base is settled, else copied.
struct WorktreeKind {
  bool allow_dirty = false;
  bool link_base_index = false;
};
// A linked worktree detached at the project's HEAD, in session.dir. Both
// report a long checkout or copy to `progress` (progress.hpp).
// Without `allow_dirty`, an overlay over the commit's shared base, whose
// shared lock goes to `base_lock` (held until the session is saved).
Expected<void> make_worktree(Session& session, const Project& project, WorktreeKind kind, Notes& notes,
                             const Progress& progress, std::uint32_t progress_after_ms, UniqueFd& base_lock);
// The overlay's directories (and a root caller's copy of the project).
Expected<void> make_overlay(Session& session, Notes& notes, const Progress& progress,
                            std::uint32_t progress_after_ms);
// For a root caller: the shift that shows `lower`'s owner as the session's
// owner, tried now on the layers each call will mount (`upper`, `work`).
// None when `lower` is already the owner's; an error where the idmapped
// mount cannot be made here.
Expected<std::optional<OwnerShift>> lower_shift_for(const Session& session, const std::string& lower,
                                                    const std::string& upper, const std::string& work);

// Copies the project's uncommitted work into the worktree.
Expected<void> import_dirty(const Session& session, const Project& project, Notes& notes);

// Replaces each denied file of the workspace by the notice. `tracked` is
// the subset git tracks (warned about: its bytes are in the objects).
Expected<void> cover_denied(const Session& session, const std::vector<std::string>& paths, Notes& notes);
// Whether every one of `paths` that is in the project or the workspace is
// covered by its notice already (cover_denied would write nothing).
bool denied_in_place(const Session& session, const std::vector<std::string>& paths);
// The deny paths that exist in the project as directories are refused, and
// those not in it at all but for `may_be_missing` (a misspelt path would
// leave the real file readable); in a git project, so are paths git has in
// any commit a ref reaches: the sandbox reads the repository's objects, so
// their bytes would be in it.
Expected<void> check_deny_targets(const Project& project, const std::vector<std::string>& paths,
                                  const std::vector<std::string>& may_be_missing);
// Other names (hard links) in the project of the session's denied files,
// added to its denied paths (deny_links.cpp); refused where one cannot be
// covered (git tracks it).
Expected<void> deny_other_names(Session& session, const Project& project, Notes& notes);
// Whether every name in the project of each denied file is a denied path
// already (a cheap look at link counts; false: search again).
bool deny_links_known(const Session& session);

// Carried directories (carry.cpp): each checked against the project and
// given its layers in the session (git), or only named (an overlay shows
// them already); the ones already carried are left as they are.
Expected<void> add_carried(Session& session, const std::vector<std::string>& paths, Notes& notes);
// Of kCarriable, the directories at a git session's project top that git
// ignores and the session does not carry. Best effort: nothing where git
// cannot say.
std::vector<std::string> uncarried(const Session& session);
// Whether project-relative `path` is a carried directory or below one.
bool is_carried(const Session& session, const std::string& path);
// The upper layer of the session's i-th carried directory.
std::string carry_upper(const Session& session, std::size_t index);
std::string carry_work(const Session& session, std::size_t index);
// A session with an index below (Session::index_below): the lower layer of
// its admin dir's overlay, which holds `index`, a link to the base's, and
// that overlay's work directory.
std::string index_below_dir(const Session& session);
std::string admin_work(const Session& session);
// A new directory below the work root `root` for one task's overlay work
// (work_dirs.cpp): t-<nonce>.
Expected<std::string> own_work_dir(const std::string& root);

// The git view of a session (git_view.cpp): what its git sees of the real
// repository. Made when the session is, and again before every call.
Expected<void> refresh_view(const Session& session, Notes& notes);
// The session's common dir's config, generated from the real one without secrets.
Expected<void> write_common_config(const Session& session);
std::string view_dir(const Session& session);
// True when the call reads a pack of reachable objects in the view rather
// than the real object store (the session denies a path).
bool view_has_own_objects(const Session& session);
// A remote URL without its userinfo, query and fragment (tokens live there).
std::string url_without_secrets(const std::string& url);

// Where the host writes into a git session's tree: its checkout of its own,
// or its upper layer over the shared base.
std::string writable_tree(const Session& session);

// The first 12 bytes of an index ("DIRC", its version, its count), or empty.
std::string index_header(const std::string& index);
// The entries an index Chock's git just wrote counts in its header (for progress reports).
std::uint64_t index_entries(const std::string& index);

// A root caller's: gives `path` (made by Chock) to the uid the call runs as
// (fs::give_to).
inline Expected<void> give_to_owner(const Session& session, const std::string& path) {
  return fs::give_to(session.owner, path);
}

}  // namespace chock::workspace::build
