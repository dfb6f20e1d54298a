// The refs a git session keeps of its own. Inside, the session's common dir
// holds a refs/ directory and a packed-refs file the call may change: a
// branch, a tag, a stash, notes, bisect and gc work there and never reach
// the real repository. Chock seeds packed-refs with the real branches and
// tags and, at the start of each call, brings the real ones up to date
// where the session has not changed them (a three-way merge against what
// Chock wrote the time before). On the host these files are hostile input:
// they are parsed here, line by line, never handed to git.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chock/workspace.hpp"

namespace chock::workspace::session_refs {

// ref name -> object id
using Refs = std::map<std::string, std::string>;

// Whether `name` is a ref name Chock accepts from a session: "refs/...",
// printable, no space, no "..", no component starting with '.' or ending
// with ".lock", none of ~^:?*[\ (a subset of git check-ref-format's rules).
bool is_ref_name(std::string_view name);
// The "<id> <name>" lines of a packed-refs file; comments, peeled lines and
// every line that is not a valid ref are skipped.
Refs parse_packed(std::string_view text);
// A packed-refs file of `refs`, sorted as git writes it.
std::string packed_text(const Refs& refs);
// What the session has after a call changed its refs from `before` (what
// Chock wrote) to `session`, when the repository now has `real`: a ref the
// session did not change follows the repository (and goes if it went); a
// ref the session made, moved or deleted stays as the session left it.
Refs merge(const Refs& before, const Refs& real, const Refs& session);
// The session's refs as git inside sees them: packed-refs, then loose refs
// under refs/ over them. Read beneath the common dir without following a
// link; what is not a small regular file holding an object id is skipped.
Expected<Refs> read(const Session& s);
// Every ref of the session (branches, tags, the stash, notes) that it made
// or moved since Chock last brought its refs up to date.
Expected<Refs> changed(const Session& s);
// The repository's branches and tags as `git for-each-ref refs/heads/
// refs/tags/` lists them, read from its files (loose refs, then
// packed-refs) where they are plain: nullopt where git must be asked (a
// reftable store, a symbolic ref, a link or anything else than a ref file,
// bytes that are not an id). Unlike git, a ref whose object is missing is
// listed: git inside then warns of it, as git outside does.
std::optional<Refs> repository_refs_from_files(const std::string& common_dir);
// The repository's branches and tags, as git lists them there.
Expected<Refs> repository_refs(const std::string& common_dir);
// The branches and tags the session made or moved since Chock last brought
// its refs up to date ("refs/heads/x"), for a line that says apply leaves them.
Expected<std::vector<std::string>> own_branches_and_tags(const Session& s);

}  // namespace chock::workspace::session_refs
