#include "workspace/bases.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <optional>
#include <set>
#include <string_view>

#include "sandbox/seccomp.hpp"
#include "util/fs.hpp"
#include "util/passwd.hpp"
#include "util/sha256.hpp"
#include "workspace/git.hpp"
#include "workspace/progress.hpp"
#include "workspace/session_record.hpp"
#include "workspace/store.hpp"

namespace chock::workspace::bases {

namespace {

constexpr const char* kTmpPrefix = ".tmp.";
constexpr const char* kSplitDir = "split";

// The split index in `dir`: its `index` and its one sharedindex.<hash>.
std::optional<SharedIndex> shared_index_in(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return std::nullopt;
  std::vector<std::string> found;
  while (dirent* e = ::readdir(d))
    if (is_shared_index_name(e->d_name)) found.emplace_back(e->d_name);
  ::closedir(d);
  if (found.size() != 1 || !fs::exists(dir + "/index")) return std::nullopt;
  return SharedIndex{dir + "/index", dir + "/" + found.front(), found.front()};
}

Expected<std::string> bases_dir(bool make) {
  return store::data_subdir("bases", 0755, make);
}

Expected<UniqueFd> open_lock(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd) return sys_error("open", path);
  return fd;
}

Expected<void> lock(int fd, int how, const std::string& path) {
  while (::flock(fd, how) != 0)
    if (errno != EINTR) return sys_error("lock", path);
  return {};
}

Expected<void> check_out(const std::string& dir, const build::Project& project,
                         const std::optional<RunAs>& as, const Progress& progress,
                         std::uint32_t progress_after_ms) {
  const std::string tree = dir + "/tree";
  const std::string index = dir + "/index";
  auto env = git::repo_env(project.common_dir, tree, index, {});
  env.as = as;
  if (auto r =
          git::capture({"read-tree", project.head + "^{commit}"}, env, "read the base commit into the index");
      !r)
    return std::move(r).error();
  ProgressWatch watch(progress, progress_after_ms, "checking out " + project.head.substr(0, 12), tree,
                      build::index_entries(index));
  // As many workers as cores (git's parallel checkout; one process below
  // checkout.thresholdForParallelism files): the checkout waits on the
  // kernel's work per file more than on the disk.
  if (auto r =
          git::capture({"-c", "checkout.workers=0", "checkout-index", "-a", "-u"}, env, "check out the base");
      !r)
    return std::move(r).error();
  return {};
}

// A checkout of `project`'s HEAD in `dir` (tree/ and index), owned by `owner`.
// A root caller's is made by git running as `owner` (reading the repository
// with CAP_DAC_READ_SEARCH alone), so nothing is chowned after and the
// index's stat data is right as written; where that cannot run (no such
// capability to give), by root, then chowned and the index refreshed, which
// rehashes every file.
Expected<void> make_base(const std::string& dir, const build::Project& project, uid_t owner,
                         const Progress& progress, std::uint32_t progress_after_ms) {
  const std::string tree = dir + "/tree";
  if (auto r = fs::make_dirs(tree, 0755); !r) return r;
  const bool root_caller = ::geteuid() == 0 && owner != 0;
  const gid_t gid = group_of(owner);
  bool chown_after = root_caller;
  if (root_caller) {
    if (::chown(dir.c_str(), owner, gid) != 0) return sys_error("chown", dir);
    if (::chown(tree.c_str(), owner, gid) != 0) return sys_error("chown", tree);
    if (auto as = as_run_uid(owner, gid); as && check_out(dir, project, as, progress, progress_after_ms)) {
      chown_after = false;
    } else {
      if (auto r = fs::remove_tree(tree); !r) return r;
      (void)::unlink((dir + "/index").c_str());
      if (auto r = fs::make_dirs(tree, 0755); !r) return r;
    }
  }
  if (!root_caller || chown_after)
    if (auto r = check_out(dir, project, std::nullopt, progress, progress_after_ms); !r) return r;
  const std::string dot_git = tree + "/.git";
  if (auto r = fs::write_file(dot_git, std::string("gitdir: ") + kSandboxGitRoot + "/admin\n"); !r) return r;
  if (root_caller && ::lchown(dot_git.c_str(), owner, gid) != 0) return sys_error("chown", dot_git);
  if (chown_after) {
    if (auto r = fs::chown_tree(tree, owner, gid); !r) return r;
    // chown moved every ctime: the index is refreshed so no session's git rehashes the tree.
    auto env = git::repo_env(project.common_dir, tree, dir + "/index", {});
    auto refreshed = git::run({"-c", "core.trustctime=false", "update-index", "-q", "--refresh"}, env);
    if (!refreshed) return std::move(refreshed).error();
    if (refreshed->status > 1)
      return Error{"refresh the base's index: " + refreshed->first_error_line(), dir, 0};
  }
  // The run uid wrote the index here; the directory goes back to the caller, as bases/ is.
  if (root_caller && ::chown(dir.c_str(), ::geteuid(), ::getegid()) != 0) return sys_error("chown", dir);
  return {};
}

// The small half of a split index as index version 4 (its shared half stays
// version 2). Git writes a session's own shared half at the version of the
// small one, so its bytes, and so its name, are never the base's: else a
// call's git that writes the index unchanged (`git stash` does) renames its
// shared half onto the base's name, where a read-only bind is (EBUSY), and
// fails. With no entry, versions 2 and 4 differ in that field alone; the
// trailer is the file's hash again.
Expected<void> as_version_four(const std::string& path, std::size_t hash_size) {
  auto bytes = fs::read_file_nofollow(path, 16 << 20);
  if (!bytes) return std::move(bytes).error();
  std::string& b = *bytes;
  // "DIRC", version 2 and 0 entries, each field 32 bits big-endian.
  static constexpr std::string_view kHeader("DIRC\0\0\0\2\0\0\0\0", 12);
  if ((hash_size != 20 && hash_size != 32) || b.size() < kHeader.size() + hash_size ||
      std::string_view(b).substr(0, kHeader.size()) != kHeader)
    return Error{"split the base's index: not an index of version 2 without entries", path, 0};
  b[7] = 4;
  b.resize(b.size() - hash_size);
  b += hash_size == 20 ? sha1_digest(b) : sha256_digest(b);
  return fs::write_file_atomic(path, b);
}

// The base's settled index as git's split index, in split/: `index`, which
// holds no entry and names `sharedindex.<hash>`, which holds them all. A
// session copies the first (a few hundred bytes) and links the second into
// its admin dir, where each call binds it read-only (sandbox_config.cpp): its
// disk is its own changes, not a copy of every entry. Inside, the session's
// config (git_view.cpp) has git write a shared index of its own whenever it
// writes the index (maxPercentChange 0): it never names the base's in a split
// index it writes, so it never sets its time, which a read-only file refuses
// (git would warn at every `git add`). The base's is dated far ahead, so no
// expiry (sharedIndexExpire) ever tries to unlink it.
Expected<void> make_split(const std::string& dir, const std::string& common_dir, const std::string& commit) {
  const std::string tmp = dir + "/" + kSplitDir + ".tmp";
  if (auto r = fs::remove_tree(tmp); !r) return r;
  if (auto r = fs::make_dirs(tmp, 0755); !r) return r;
  // A git dir of the worktree kind (HEAD, commondir) that git writes the
  // shared index into: never the real .git.
  if (auto r = fs::write_file(tmp + "/HEAD", commit + "\n"); !r) return r;
  if (auto r = fs::write_file(tmp + "/commondir", common_dir + "\n"); !r) return r;
  if (auto r = fs::copy_entry(dir + "/index", tmp + "/index"); !r) return r;
  auto split = git::run({"-c", "core.splitIndex=true", "update-index", "--split-index"},
                        git::repo_env(tmp, "", tmp + "/index", {}));
  if (!split) return std::move(split).error();
  if (!split->ok()) return Error{"split the base's index: " + split->first_error_line(), dir, 0};
  for (const char* f : {"/HEAD", "/commondir"})
    if (::unlink((tmp + f).c_str()) != 0) return sys_error("unlink", tmp + f);
  auto shared = shared_index_in(tmp);
  if (!shared) return Error{"split the base's index: git wrote no shared index", tmp, 0};
  const std::size_t hash_size = (shared->name.size() - std::string_view("sharedindex.").size()) / 2;
  if (auto r = as_version_four(shared->index, hash_size); !r) return r;
  constexpr std::int64_t kFiftyYears = 50LL * 366 * 24 * 3600;
  const timespec times[2] = {{0, UTIME_OMIT}, {static_cast<time_t>(std::time(nullptr) + kFiftyYears), 0}};
  if (::utimensat(AT_FDCWD, shared->shared.c_str(), times, AT_SYMLINK_NOFOLLOW) != 0)
    return sys_error("set the time of", shared->shared);
  // Every later session links these: on the disk before they are in place.
  for (const std::string& f : {shared->index, shared->shared}) {
    UniqueFd fd(::open(f.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (!fd || ::fsync(fd.get()) != 0) return sys_error("fsync", f);
  }
  const std::string to = dir + "/" + kSplitDir;
  if (::rename(tmp.c_str(), to.c_str()) != 0) return sys_error("rename into place", to);
  // The base grew: gc counts it again.
  (void)::unlink((dir + ".size").c_str());
  return {};
}

// Git (as Debian builds it, without USE_NSEC) treats every entry whose file
// changed in the second its index was written as racily clean, and reads the
// file to be sure: right after a checkout, that can be most of the tree. Once
// a second has passed, one refresh of the base's index (under its exclusive
// lock) settles it for every session made after: their `git status` trusts
// the stat data and reads no file. The first session pays what a fresh
// `git worktree add` pays. Then, for sessions that link it, the settled
// index is split (make_split).
Expected<void> settle_index(Held& held, const std::string& common_dir, const std::string& commit,
                            bool make_split_too, const std::string& lock_path) {
  const std::string settled = held.dir + "/index.settled";
  const std::string split = held.dir + "/" + kSplitDir;
  if (fs::exists(settled) && (!make_split_too || fs::is_dir(split))) return {};
  const std::string index = held.dir + "/index";
  if (!fs::exists(settled)) {
    struct stat st {};
    if (::stat(index.c_str(), &st) != 0) return sys_error("stat", index);
    if (static_cast<std::int64_t>(std::time(nullptr)) <= static_cast<std::int64_t>(st.st_mtim.tv_sec))
      return {};
  }
  if (auto r = lock(held.lock.get(), LOCK_EX, lock_path); !r) return r;
  if (!fs::exists(settled)) {
    auto env = git::repo_env(common_dir, held.dir + "/tree", index, {});
    auto refreshed = git::run({"-c", "core.trustctime=false", "update-index", "-q", "--refresh"}, env);
    if (!refreshed) return std::move(refreshed).error();
    if (refreshed->status > 1)
      return Error{"refresh the base's index: " + refreshed->first_error_line(), index, 0};
    if (auto r = fs::write_file(settled, ""); !r) return r;
  }
  if (make_split_too && !fs::is_dir(split))
    if (auto r = make_split(held.dir, common_dir, commit); !r) return r;
  return lock(held.lock.get(), LOCK_SH, lock_path);
}

// The base of another commit to derive this one from: the one of the same
// uid and repository used last (last_used_link), else the one of the uid
// used last (its lock file's time); held shared meanwhile so gc leaves it.
struct Donor {
  UniqueFd lock;
  std::string dir, key;
};

// <bases>/<uid>.<repository>.last: a link whose target names the base of
// the repository (its common dir's hash) that `owner`'s sessions used last
// (never followed: read as a name), so the next base is derived from it
// without a look at every base there, and never from another repository's.
std::string last_used_link(const std::string& root, uid_t owner, const std::string& common_dir) {
  return std::string(root)
      .append("/")
      .append(std::to_string(owner))
      .append(".")
      .append(sha256_hex(common_dir).substr(0, 16))
      .append(".last");
}

void note_used(const std::string& root, uid_t owner, const std::string& common_dir, const std::string& k) {
  const std::string link = last_used_link(root, owner, common_dir);
  char now[128];
  const ssize_t n = ::readlink(link.c_str(), now, sizeof now);
  if (n > 0 && std::string_view(now, static_cast<std::size_t>(n)) == k) return;
  const std::string next = link + ".new." + std::to_string(::getpid());
  (void)::unlink(next.c_str());
  if (::symlink(k.c_str(), next.c_str()) != 0) return;  // a hint only: the scan stays
  if (::rename(next.c_str(), link.c_str()) != 0) (void)::unlink(next.c_str());
}

std::optional<Donor> hold_donor(const std::string& root, const std::string& k) {
  auto fd = open_lock(root + "/" + k + ".lock");
  if (!fd || ::flock(fd->get(), LOCK_SH) != 0 || !fs::is_dir(root + "/" + k)) return std::nullopt;
  return Donor{std::move(*fd), root + "/" + k, k};
}

std::optional<Donor> nearest_donor(const std::string& root, uid_t owner, const build::Project& project) {
  const std::string& commit = project.head;
  const std::string prefix = std::to_string(owner) + "-";
  char last[128];
  const ssize_t n = ::readlink(last_used_link(root, owner, project.common_dir).c_str(), last, sizeof last);
  if (n > 0 && static_cast<std::size_t>(n) < sizeof last) {
    const std::string k(last, static_cast<std::size_t>(n));
    if (k.rfind(prefix, 0) == 0 && is_base_key(k) && k != prefix + commit)
      if (auto donor = hold_donor(root, k)) return donor;
  }
  DIR* d = ::opendir(root.c_str());
  if (d == nullptr) return std::nullopt;
  std::string best;
  std::int64_t best_time = -1;  // in nanoseconds: two bases are often used within one second
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name.rfind(prefix, 0) != 0 || !is_base_key(name) || name == prefix + commit) continue;
    std::string dir = root;
    dir += '/';
    dir += name;
    struct stat st {};
    if (::stat((dir + ".lock").c_str(), &st) != 0 || !fs::is_dir(dir)) continue;
    const std::int64_t used_at =
        static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
    if (used_at > best_time) {
      best_time = used_at;
      best = name;
    }
  }
  ::closedir(d);
  if (best.empty()) return std::nullopt;
  return hold_donor(root, best);
}

// From the nearest base when few files differ, else a fresh checkout.
Expected<void> make_from_nearest(const std::string& tmp, const std::string& root,
                                 const build::Project& project, uid_t owner, const Progress& progress,
                                 std::uint32_t progress_after_ms) {
  if (auto donor = nearest_donor(root, owner, project); donor) {
    const std::uint64_t entries = build::index_entries(donor->dir + "/index");
    auto derived =
        derive_base(tmp, donor->dir, donor->key, project, owner, static_cast<std::size_t>(entries / 5));
    if (!derived) return std::move(derived).error();
    if (*derived) return {};
    if (auto r = fs::remove_tree(tmp + "/tree"); !r) return r;
  }
  return make_base(tmp, project, owner, progress, progress_after_ms);
}

}  // namespace

std::optional<RunAs> as_run_uid(uid_t owner, gid_t group) {
  static const auto keep_uid = seccomp::keep_uid();
  if (!keep_uid) return std::nullopt;
  return RunAs{owner, group, keep_uid->instructions};
}

std::string key(uid_t owner, const std::string& commit) {
  return std::to_string(owner) + "-" + commit;
}

std::optional<SharedIndex> shared_index(const std::string& base_dir) {
  return shared_index_in(base_dir + "/" + kSplitDir);
}

Expected<std::vector<std::string>> layers_of(const std::string& k) {
  auto dir = bases_dir(false);
  if (!dir) return std::move(dir).error();
  auto below = layers_below(*dir + "/" + k);
  if (!below) return std::move(below).error();
  std::vector<std::string> trees{*dir + "/" + k + "/tree"};
  for (const auto& b : *below) trees.push_back(*dir + "/" + b + "/tree");
  return trees;
}

Expected<Held> hold(const build::Project& project, uid_t owner, bool split, const Progress& progress,
                    std::uint32_t progress_after_ms) {
  auto root = bases_dir(true);
  if (!root) return std::move(root).error();
  const std::string k = key(owner, project.head);
  const std::string lock_path = *root + "/" + k + ".lock";
  auto fd = open_lock(lock_path);
  if (!fd) return std::move(fd).error();
  Held held{std::move(*fd), *root + "/" + k, false};
  if (auto r = lock(held.lock.get(), LOCK_SH, lock_path); !r) return std::move(r).error();
  if (!fs::is_dir(held.dir)) {
    // Made by one process; the others wait and find it there.
    if (auto r = lock(held.lock.get(), LOCK_EX, lock_path); !r) return std::move(r).error();
    if (!fs::is_dir(held.dir)) {
      std::uint64_t nonce = 0;
      if (::getrandom(&nonce, sizeof nonce, 0) != static_cast<ssize_t>(sizeof nonce)) nonce = ::getpid();
      char suffix[24];
      std::snprintf(suffix, sizeof suffix, ".%016llx", static_cast<unsigned long long>(nonce));
      const std::string tmp = *root + "/" + kTmpPrefix + k + suffix;
      if (::mkdir(tmp.c_str(), 0755) != 0) return sys_error("mkdir", tmp);
      auto made = make_from_nearest(tmp, *root, project, owner, progress, progress_after_ms);
      if (made && ::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, held.dir.c_str(), RENAME_NOREPLACE) != 0)
        made = sys_error("rename into place", held.dir);
      if (!made) {
        (void)store::discard(tmp);
        return std::move(made).error();
      }
      held.made = true;
    }
    if (auto r = lock(held.lock.get(), LOCK_SH, lock_path); !r) return std::move(r).error();
  }
  if (!held.made)
    if (auto r = settle_index(held, project.common_dir, project.head, split, lock_path); !r)
      return std::move(r).error();
  // When it was last used, for gc: the lock file's time; for the next base derived, the link.
  (void)::futimens(held.lock.get(), nullptr);
  note_used(*root, owner, project.common_dir, k);
  return held;
}

namespace {

// What every session record says of the bases: a record that cannot be
// read keeps every base whose key its bytes contain.
Expected<std::vector<std::string>> session_records() {
  auto ids = store::session_ids();
  if (!ids) return std::move(ids).error();
  auto workspaces = store::workspaces_dir();
  if (!workspaces) return std::move(workspaces).error();
  std::vector<std::string> records;
  for (const auto& id : *ids) {
    if (auto s = load(id); s) {
      records.push_back(s->shared_base);
    } else if (auto text = fs::read_file_nofollow(*workspaces + "/" + id + "/session.json", 1 << 20); text) {
      records.push_back(*text);
    }
  }
  return records;
}

bool named_in(const std::vector<std::string>& records, const std::string& k) {
  return std::any_of(records.begin(), records.end(),
                     [&](const std::string& r) { return r.find(k) != std::string::npos; });
}

// The bases other bases stack on (their `layers`), those being made included:
// kept while those are.
Expected<std::set<std::string>> stacked_on(const std::string& root) {
  std::set<std::string> out;
  DIR* d = ::opendir(root.c_str());
  if (d == nullptr) return sys_error("opendir", root);
  std::vector<std::string> names;
  while (dirent* e = ::readdir(d)) names.emplace_back(e->d_name);
  ::closedir(d);
  for (const auto& name : names) {
    if (name == "." || name == ".." || (!is_base_key(name) && name.rfind(kTmpPrefix, 0) != 0)) continue;
    const std::string dir = std::string(root).append("/").append(name);
    if (!fs::is_dir(dir)) continue;
    auto below = layers_below(dir);
    if (!below) return std::move(below).error();
    out.insert(below->begin(), below->end());
  }
  return out;
}

// A base's size, counted once and kept beside its lock (a base never changes).
std::uint64_t size_of(const std::string& root, const std::string& k) {
  const std::string kept = root + "/" + k + ".size";
  if (auto text = fs::read_file_nofollow(kept, 32); text && !text->empty()) {
    char* end = nullptr;
    const unsigned long long bytes = std::strtoull(text->c_str(), &end, 10);
    if (end != nullptr && *end == '\n') return bytes;
  }
  const std::uint64_t bytes = fs::disk_usage(root + "/" + k);
  (void)fs::write_file_atomic(kept, std::to_string(bytes) + "\n");
  return bytes;
}

// An unused base kept by its age, which the size cap may still remove.
struct Candidate {
  std::string key;
  std::int64_t used_at = 0;
  std::uint64_t bytes = 0;
};

// One pass of collect: what is kept is counted afresh in `out`, what is
// removed added to it. True when it removed a base.
Expected<bool> collect_pass(const std::string& root, std::int64_t older_than_seconds,
                            std::optional<std::uint64_t> max_bytes, BasesCollected& out) {
  out.kept_in_use = out.kept_recent = 0;
  out.kept_bytes = 0;
  const std::size_t removed_before = out.removed.size();
  const auto at = [&root](const std::string& name) { return std::string(root).append("/").append(name); };
  DIR* d = ::opendir(root.c_str());
  if (d == nullptr) return errno == ENOENT ? Expected<bool>(false) : sys_error("opendir", root);
  std::vector<std::string> names;
  while (dirent* e = ::readdir(d)) names.emplace_back(e->d_name);
  ::closedir(d);
  auto records = session_records();
  if (!records) return std::move(records).error();
  auto stacked = stacked_on(root);
  if (!stacked) return std::move(stacked).error();
  // Removed only under the base's exclusive lock, which a session being made
  // over it, or a base being derived from it, holds shared until the session's
  // record or the derived base's layers name it: both are read again then,
  // so what was made since the first reading is seen.
  auto remove_locked = [&](const std::string& name, const std::string& k, bool unfinished) -> Expected<bool> {
    if (!unfinished) {
      auto now_records = session_records();
      if (!now_records) return std::move(now_records).error();
      auto now_stacked = stacked_on(root);
      if (!now_stacked) return std::move(now_stacked).error();
      if (named_in(*now_records, k) || now_stacked->count(k) != 0) return false;
    }
    const std::string path = at(name);
    const std::uint64_t bytes = unfinished ? fs::disk_usage(path) : size_of(root, k);
    if (auto r = store::discard(path); !r) return std::move(r).error();
    if (!unfinished) {
      (void)::unlink((at(k + ".lock")).c_str());
      (void)::unlink((at(k + ".size")).c_str());
    }
    out.removed.push_back(name);
    out.freed_bytes += bytes;
    return true;
  };
  std::vector<Candidate> candidates;
  const std::int64_t now = static_cast<std::int64_t>(std::time(nullptr));
  for (const auto& name : names) {
    std::string k = name;
    const bool unfinished = name.rfind(kTmpPrefix, 0) == 0;
    if (unfinished) {
      k = name.substr(std::string(kTmpPrefix).size());
      k = k.substr(0, k.rfind('.'));
    }
    if (!is_base_key(k) || (!unfinished && !fs::is_dir(at(name)))) continue;
    const std::string lock_path = at(k + ".lock");
    const bool used = !unfinished && (named_in(*records, k) || stacked->count(k) != 0);
    // Used recently: kept without taking its lock (the sweeper's gc of old
    // bases never stands in the way of a session being made).
    struct stat used_at {};
    if (!unfinished && !used && ::stat(lock_path.c_str(), &used_at) == 0 &&
        now - used_at.st_mtim.tv_sec < older_than_seconds) {
      ++out.kept_recent;
      if (max_bytes) {
        candidates.push_back({k, used_at.st_mtim.tv_sec, size_of(root, k)});
        out.kept_bytes += candidates.back().bytes;
      }
      continue;
    }
    bool removed = false;
    if (!used) {
      auto fd = open_lock(lock_path);
      if (!fd) return std::move(fd).error();
      // Busy: being made, or held for a session being made over it.
      if (::flock(fd->get(), LOCK_EX | LOCK_NB) == 0) {
        auto r = remove_locked(name, k, unfinished);
        if (!r) return std::move(r).error();
        removed = *r;
      }
    }
    if (!removed && !unfinished) {
      ++out.kept_in_use;
      if (max_bytes) out.kept_bytes += size_of(root, k);
    }
  }
  if (!max_bytes || out.kept_bytes <= *max_bytes) return out.removed.size() > removed_before;
  // Over the cap: the unused bases kept for their age go, least recently used first.
  std::sort(candidates.begin(), candidates.end(),
            [](const Candidate& a, const Candidate& b) { return a.used_at < b.used_at; });
  for (const auto& c : candidates) {
    if (out.kept_bytes <= *max_bytes) break;
    auto fd = open_lock(at(c.key + ".lock"));
    if (!fd) return std::move(fd).error();
    if (::flock(fd->get(), LOCK_EX | LOCK_NB) != 0) continue;
    auto r = remove_locked(c.key, c.key, false);
    if (!r) return std::move(r).error();
    if (!*r) continue;
    --out.kept_recent;
    ++out.removed_for_size;
    out.kept_bytes -= std::min(out.kept_bytes, c.bytes);
  }
  return out.removed.size() > removed_before;
}

// The links naming each repository's last base (last_used_link) whose base
// is gone, and those a chock that died between making one and renaming it
// into place left (`.last.new.<pid>`, its pid no longer running): a hint
// each, which nearest_donor would pass over, and a name less in the listing.
void forget_stale_links(const std::string& root) {
  DIR* d = ::opendir(root.c_str());
  if (d == nullptr) return;
  std::vector<std::string> stale;
  while (dirent* e = ::readdir(d)) {
    const std::string_view name = e->d_name;
    const std::string path = std::string(root).append("/").append(name);
    if (const auto at = name.find(".last.new."); at != std::string_view::npos) {
      const std::string pid(name.substr(at + std::string_view(".last.new.").size()));
      char* end = nullptr;
      const long n = std::strtol(pid.c_str(), &end, 10);
      if (!pid.empty() && *end == '\0' && n > 0 && ::kill(static_cast<pid_t>(n), 0) != 0 && errno == ESRCH)
        stale.push_back(path);
    } else if (name.ends_with(".last")) {
      char target[128];
      const ssize_t n = ::readlink(path.c_str(), target, sizeof target);
      if (n <= 0 || static_cast<std::size_t>(n) >= sizeof target) continue;
      const std::string k(target, static_cast<std::size_t>(n));
      if (is_base_key(k) && !fs::is_dir(std::string(root).append("/").append(k))) stale.push_back(path);
    }
  }
  ::closedir(d);
  for (const auto& path : stale) (void)::unlink(path.c_str());
}

}  // namespace

Expected<BasesCollected> collect(std::int64_t older_than_seconds, std::optional<std::uint64_t> max_bytes) {
  BasesCollected out;
  auto root = bases_dir(false);
  if (!root) return std::move(root).error();
  // The bases a stack is made of are used by the one above them until it goes:
  // each pass frees the next layer down (a stack is at most kMaxLayers deep).
  for (std::size_t pass = 0; pass <= kMaxLayers; ++pass) {
    auto removed = collect_pass(*root, older_than_seconds, max_bytes, out);
    if (!removed) return std::move(removed).error();
    if (!*removed) break;
  }
  forget_stale_links(*root);
  return out;
}

}  // namespace chock::workspace::bases

namespace chock::workspace {

Expected<BasesCollected> collect_bases(std::int64_t older_than_seconds,
                                       std::optional<std::uint64_t> max_bytes) {
  return bases::collect(older_than_seconds, max_bytes);
}

}  // namespace chock::workspace
