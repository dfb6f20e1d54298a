// A base for a new commit made from a base Chock already has, at the cost of
// what differs: its tree/ holds only the files that differ from the donor's
// commit (written by `git restore`) and, for each path that is gone,
// a whiteout (a 0/0 character device, which overlayfs takes for "deleted";
// the kernel lets anyone make one). What differs is read from the object
// store in this process (tree_diff.hpp), from `git diff` where it is not
// read here. Its `layers` file names the donor and the donor's own layers,
// top first: a session's overlay stacks them under this tree (the donor:
// the base used last, or where its stack is kMaxLayers deep, that stack's
// bottom, a whole checkout). The index is the donor's with the entries that
// differ replaced (an unchanged entry keeps its stat data: through the
// overlay its file is the same inode) and the stat data of the files
// written: where the donor's is plain, git writes a small index of the
// changed paths alone and Chock merges the two (index_file.hpp), so no git
// process reads or hashes the donor's entries; else git restores the paths
// into a copy of it.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <future>
#include <set>
#include <system_error>

#include "util/fd.hpp"
#include "util/fs.hpp"
#include "util/io.hpp"
#include "util/passwd.hpp"
#include "workspace/bases.hpp"
#include "workspace/git.hpp"
#include "workspace/index_file.hpp"
#include "workspace/session_record.hpp"
#include "workspace/tree_diff.hpp"

namespace chock::workspace::bases {

namespace {

constexpr std::size_t kMaxIndexBytes = std::size_t{1} << 30;

using tree_diff::Changes;

// What differs between two commits, from git (where tree_diff does not read
// the store): written and gone, not yet new_dirs.
Expected<std::optional<Changes>> changes_between(const build::Project& project, const std::string& from,
                                                 std::size_t max_changes) {
  auto diff =
      git::run({"diff", "--no-renames", "--raw", "--no-abbrev", "-z", from, project.head + "^{commit}"},
               git::repo_env(project.common_dir));
  if (!diff) return std::move(diff).error();
  if (!diff->ok()) return std::optional<Changes>();  // the donor's commit is not in this repository
  // ":OLD_MODE NEW_MODE OLD_ID NEW_ID STATUS", then the path.
  const auto fields = git::split(diff->out, '\0');
  if (fields.size() % 2 != 0) return Error{"read what differs from the donor base", from, EPROTO};
  if (fields.size() / 2 > max_changes) return std::optional<Changes>();  // a fresh checkout writes less
  Changes c;
  for (std::size_t i = 0; i < fields.size(); i += 2) {
    const auto meta = git::split(fields[i], ' ');
    if (meta.size() != 5 || !git::is_object_id(meta[3]) || meta[4].empty())
      return Error{"read what differs from the donor base: " + fields[i].substr(0, 80), from, EPROTO};
    const std::string& path = fields[i + 1];
    (meta[4] == "D" ? c.gone : c.written).push_back(path);
  }
  return std::optional<Changes>(std::move(c));
}

// Which of the paths gone and the directories above them are directories
// of the new commit: one `git cat-file --batch-check` of just those, no walk
// of the tree. Nullopt for a name with a newline (a fresh checkout then).
Expected<std::optional<std::set<std::string>>> directories_kept(const build::Project& project,
                                                                const std::vector<std::string>& gone) {
  std::set<std::string> above(gone.begin(), gone.end());
  for (const auto& p : gone)
    for (std::size_t slash = p.find('/'); slash != std::string::npos; slash = p.find('/', slash + 1))
      above.insert(p.substr(0, slash));
  std::set<std::string> out;
  if (above.empty()) return std::optional<std::set<std::string>>(out);
  git::Env env = git::repo_env(project.common_dir);
  for (const auto& d : above) {
    if (d.find('\n') != std::string::npos) return std::optional<std::set<std::string>>();
    env.stdin_data.append(project.head).append(":").append(d).push_back('\n');
  }
  auto types =
      git::capture({"cat-file", "--batch-check=%(objecttype)"}, env, "look up the new commit's directories");
  if (!types) return std::move(types).error();
  const auto answers = git::split(*types, '\n');
  if (answers.size() != above.size())
    return Error{"look up the new commit's directories: answers do not match", project.head, EPROTO};
  std::size_t i = 0;
  for (const auto& d : above)
    if (answers[i++] == "tree") out.insert(d);
  return std::optional<std::set<std::string>>(std::move(out));
}

// What differs from the commit `from` to HEAD, the new commit's directories
// among the paths gone and above them included: read from the object store
// here (tree_diff.hpp), else from git. Nullopt where a fresh checkout is the
// way (too many paths differ, the donor's commit is not in the repository).
Expected<std::optional<Changes>> what_differs(const build::Project& project, const std::string& from,
                                              std::size_t max_changes) {
  const std::size_t hash_size = from.size() / 2;
  if (!tree_diff::replaces_objects(project.common_dir)) {
    if (auto store = git_objects::Store::open(project.common_dir + "/objects", hash_size)) {
      auto walked = tree_diff::between(*store, git_objects::raw_id(from), git_objects::raw_id(project.head),
                                       hash_size, max_changes);
      if (walked.outcome == tree_diff::Outcome::too_many) return std::optional<Changes>();
      if (walked.outcome == tree_diff::Outcome::done)
        return std::optional<Changes>(std::move(walked.changes));
    }
  }
  auto changes = changes_between(project, from, max_changes);
  if (!changes || !*changes) return changes;
  auto new_dirs = directories_kept(project, (*changes)->gone);
  if (!new_dirs) return std::move(new_dirs).error();
  if (!*new_dirs) return std::optional<Changes>();
  (*changes)->new_dirs = std::move(**new_dirs);
  return changes;
}

// The paths to mark deleted: for each path gone, the topmost of it and its
// directories the new commit does not have, unless something of the new
// commit stands in its place (a file, or a directory where a file was),
// which hides what is below in any case.
std::set<std::string> whiteouts_for(const Changes& c) {
  const std::set<std::string>& new_dirs = c.new_dirs;
  const std::set<std::string> written(c.written.begin(), c.written.end());
  std::set<std::string> out;
  for (const auto& p : c.gone) {
    std::string target = p;
    for (std::size_t slash = p.find('/'); slash != std::string::npos; slash = p.find('/', slash + 1)) {
      if (new_dirs.count(p.substr(0, slash)) == 0) {
        target = p.substr(0, slash);
        break;
      }
    }
    if (written.count(target) == 0 && new_dirs.count(target) == 0) out.insert(target);
  }
  return out;
}

// A whiteout at `rel` below the layer `tree_fd`, its missing directories
// made (given to `owner` when set); resolved beneath the layer with no link
// followed, whatever names the repository's commits hold.
Expected<void> make_whiteout(int tree_fd, const std::string& rel, const fs::Owner* owner) {
  auto dir = fs::open_dir_beneath(tree_fd, fs::parent_of(rel), true, owner);
  if (!dir) return std::move(dir).error();
  UniqueFd parent(*dir);
  const std::string name = fs::base_of(rel);
  if (name.empty() || name == "." || name == ".." ||
      ::mknodat(parent.get(), name.c_str(), S_IFCHR | 0000, ::makedev(0, 0)) != 0)
    return sys_error("make a whiteout", rel);
  return {};
}

// What git wrote as root goes to the run uid: each path written and the directories it made.
Expected<void> give_written(const std::string& tree, const std::vector<std::string>& paths,
                            const fs::Owner& to) {
  for (const auto& p : paths) {
    for (std::size_t slash = p.find('/'); slash != std::string::npos; slash = p.find('/', slash + 1)) {
      struct stat st {};
      const std::string parent = tree + "/" + p.substr(0, slash);
      if (::lstat(parent.c_str(), &st) == 0 && st.st_uid != to.uid &&
          ::lchown(parent.c_str(), to.uid, to.gid) != 0)
        return sys_error("chown", parent);
    }
    const std::string file = std::string(tree).append("/").append(p);
    if (::lchown(file.c_str(), to.uid, to.gid) != 0 && errno != ENOENT) return sys_error("chown", file);
  }
  return {};
}

// Where and as whom git restores the files that differ.
struct Restore {
  const build::Project& project;
  const std::string& tree;
  bool root_caller;
  fs::Owner given;
};

// The files `paths` names (NUL-terminated) written into the tree and their
// entries into `index` (an unchanged entry keeps its stat data), by one
// `git restore` of just those paths: no walk of the two trees (where
// `read-tree -m -u` spent most of its time). As the run uid for a root
// caller (bases.cpp make_base), else root, then chowned (`chown_after`).
// False where git refused.
Expected<bool> restore_paths(const Restore& how, const std::string& index, const std::string& paths,
                             bool& chown_after) {
  git::Env restore = git::repo_env(how.project.common_dir, how.tree, index, {});
  restore.vars.emplace_back("GIT_LITERAL_PATHSPECS", "1");  // a name is a name, never a pattern
  restore.stdin_data = paths;
  // No preload: threads that lstat every entry in parallel, for a pathspec of a few.
  // Version 2: the small index is read here (a repository's index.version = 4 is for its own).
  const std::vector<std::string> args{"-c",
                                      "core.preloadIndex=false",
                                      "-c",
                                      "index.version=2",
                                      "restore",
                                      "--source=" + how.project.head,
                                      "--staged",
                                      "--worktree",
                                      "--pathspec-from-file=-",
                                      "--pathspec-file-nul"};
  if (how.root_caller && !chown_after) restore.as = as_run_uid(how.given.uid, how.given.gid);
  auto moved = !how.root_caller || restore.as ? git::run(args, restore)
                                              : Expected<git::Output>(Error{"no filter", how.tree, ENOSYS});
  if (how.root_caller && !moved) {  // no run uid to give: as root, then chowned
    restore.as.reset();
    chown_after = true;
    moved = git::run(args, restore);
  }
  if (!moved) return std::move(moved).error();
  return moved->ok();
}

// Whether a session's overlay can stack `layers` trees whose paths are
// `path_length` long: one by one from Linux 6.8 (mount_tree.cpp); before,
// in one fsconfig value of at most 255 bytes.
bool layers_fit(std::size_t layers, std::size_t path_length) {
  static const bool one_by_one = [] {
    utsname u{};
    int major = 0, minor = 0;
    return ::uname(&u) == 0 && std::sscanf(u.release, "%d.%d", &major, &minor) == 2 &&
           (major > 6 || (major == 6 && minor >= 8));
  }();
  return one_by_one || layers * (path_length + 1) <= 256;
}

}  // namespace

Expected<std::vector<std::string>> layers_below(const std::string& base_dir) {
  std::vector<std::string> keys;
  auto text = fs::read_file_nofollow(base_dir + "/layers", 1 << 16);
  if (!text) return text.error().code == ENOENT ? Expected<std::vector<std::string>>(keys) : text.error();
  for (auto& k : git::split(*text, '\n')) {
    if (!is_base_key(k))
      return Error{"a shared base's layers name something else: " + k.substr(0, 80), base_dir, EINVAL};
    keys.push_back(std::move(k));
  }
  return keys;
}

Expected<bool> derive_base(const std::string& dir, const std::string& top, const std::string& top_key,
                           const build::Project& project, uid_t owner, std::size_t max_changes) {
  auto below = layers_below(top);
  if (!below) return std::move(below).error();
  std::string donor = top, donor_key = top_key;
  // A stack at its depth: the new base is derived from its bottom, a whole
  // checkout, by all that differs since (a stack of two, not a fresh checkout).
  // The top, held, stacks on the bottom: gc leaves it.
  if (below->size() + 1 >= kMaxLayers || !layers_fit(below->size() + 2, donor.size() + 5)) {
    if (below->empty()) return false;
    donor_key = below->back();
    donor = top.substr(0, top.rfind('/') + 1) + donor_key;
    below = layers_below(donor);
    if (!below) return std::move(below).error();
    if (!below->empty() || !layers_fit(2, donor.size() + 5)) return false;
  }
  const std::string donor_commit = donor_key.substr(donor_key.find('-') + 1);
  auto changes = what_differs(project, donor_commit, max_changes);
  if (!changes) return std::move(changes).error();
  if (!*changes) return false;

  const std::string tree = dir + "/tree";
  const bool root_caller = ::geteuid() == 0 && owner != 0;
  const fs::Owner given{owner, group_of(owner)};
  if (::mkdir(tree.c_str(), 0755) != 0) return sys_error("mkdir", tree);
  if (root_caller &&
      (::chown(tree.c_str(), given.uid, given.gid) != 0 || ::chown(dir.c_str(), given.uid, given.gid) != 0))
    return sys_error("chown", dir);
  // The donor's index, when plain (index_file.hpp), is merged with a small
  // index git writes of just the paths written: git reads and hashes neither
  // the donor's entries nor the new index's. Else git works on a copy of it.
  // Its header tells first: git restores while the donor's is mapped and
  // parsed beside it, and again into a copy where it is not plain after all.
  const std::size_t hash_size = donor_commit.size() / 2;
  const std::string index = dir + "/index";
  const std::string small = dir + "/index.changed";
  std::string written;
  for (const auto& p : (*changes)->written) written.append(p).push_back('\0');
  std::string every = written;  // into a copy of the donor's whole index, the paths gone too
  for (const auto& p : (*changes)->gone) every.append(p).push_back('\0');
  const Restore how{project, tree, root_caller, given};
  bool chown_after = false;
  std::future<Expected<bool>> restoring;
  const bool plain_header = index_file::plain_version(build::index_header(donor + "/index"));
  if (plain_header && !written.empty()) {
    try {
      restoring = std::async(std::launch::async, [&how, &small, &written, &chown_after] {
        return restore_paths(how, small, written, chown_after);
      });
    } catch (const std::system_error&) {
    }
  }
  auto donor_bytes = MappedFile::open(donor + "/index", kMaxIndexBytes);
  std::optional<index_file::Index> donor_index;
  if (donor_bytes) donor_index = index_file::parse(donor_bytes->bytes(), hash_size);
  Expected<bool> moved = true;
  if (restoring.valid()) {
    moved = restoring.get();
  } else if (donor_index && !written.empty()) {
    moved = restore_paths(how, small, written, chown_after);
  }
  if (!donor_bytes) return std::move(donor_bytes).error();
  if (!moved) return std::move(moved).error();
  if (!*moved) {  // whatever git refused: a fresh checkout, from a clean tree
    (void)::unlink(small.c_str());
    return false;
  }
  if (!donor_index) {
    (void)::unlink(small.c_str());
    if (auto r = fs::copy_entry(donor + "/index", index); !r) return std::move(r).error();
    if (!every.empty()) {  // else the same tree
      moved = restore_paths(how, index, every, chown_after);
      if (!moved) return std::move(moved).error();
      if (!*moved) return false;
    }
  }
  if (donor_index) {
    std::string small_bytes;
    if (!written.empty()) {
      auto read = fs::read_file_nofollow(small, kMaxIndexBytes);
      if (!read) return std::move(read).error();
      small_bytes = std::move(*read);
      (void)::unlink(small.c_str());
    }
    const auto changed_index =
        small_bytes.empty() ? std::optional(index_file::Index{}) : index_file::parse(small_bytes, hash_size);
    if (!changed_index) return false;  // not what git was expected to write: a fresh checkout
    UniqueFd out(::open(index.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644));
    if (!out) return sys_error("create", index);
    const std::set<std::string> gone((*changes)->gone.begin(), (*changes)->gone.end());
    auto written = index_file::write_merged(out.get(), index, *donor_index, *changed_index, gone, hash_size);
    if (!written) return std::move(written).error();
    if (!*written) return false;
    if (root_caller && !chown_after && ::fchown(out.get(), given.uid, given.gid) != 0)
      return sys_error("chown", index);
  }
  UniqueFd tree_fd(::open(tree.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!tree_fd) return sys_error("open", tree);
  for (const auto& w : whiteouts_for(**changes))
    if (auto r = make_whiteout(tree_fd.get(), w, root_caller ? &given : nullptr); !r)
      return std::move(r).error();
  std::string layers = donor_key + "\n";
  for (const auto& k : *below) layers.append(k).push_back('\n');
  if (auto r = fs::write_file_atomic(dir + "/layers", layers); !r) return std::move(r).error();
  if (chown_after) {
    if (auto r = give_written(tree, (*changes)->written, given); !r) return std::move(r).error();
    // chown moved the written files' ctime and owner: their index entries are refreshed
    // (those of the files below, absent from this tree, are left as they are).
    auto refreshed = git::run({"-c", "core.trustctime=false", "update-index", "-q", "--refresh"},
                              git::repo_env(project.common_dir, tree, index, {}));
    if (!refreshed) return std::move(refreshed).error();
    if (refreshed->status > 1)
      return Error{"refresh the base's index: " + refreshed->first_error_line(), dir, 0};
  }
  if (root_caller && ::chown(dir.c_str(), ::geteuid(), ::getegid()) != 0) return sys_error("chown", dir);
  return true;
}

}  // namespace chock::workspace::bases
