#include "workspace/tree_diff.hpp"

#include <dirent.h>

#include <cerrno>

#include <map>
#include <optional>

#include "util/fs.hpp"

namespace chock::workspace::tree_diff {

namespace {

using git_objects::TreeEntry;

// Deeper than this, git is asked (the walk is recursive, on chock's stack).
constexpr int kMaxDepth = 256;

class Walker {
 public:
  Walker(git_objects::Store& store, std::size_t hash_size, std::size_t max_changes)
      : store_(store), hash_size_(hash_size), max_changes_(max_changes) {}

  // Both trees' entries by name: a file and a directory of one name are one path.
  bool walk(const std::string& prefix, std::string_view old_id, std::string_view new_id, int depth) {
    auto old_tree = tree(old_id);
    auto new_tree = tree(new_id);
    if (!old_tree || !new_tree || depth > kMaxDepth) return unread();
    auto old_entries = git_objects::parse_tree(old_tree->data, hash_size_);
    auto new_entries = git_objects::parse_tree(new_tree->data, hash_size_);
    if (!old_entries || !new_entries) return unread();
    std::map<std::string_view, std::pair<const TreeEntry*, const TreeEntry*>> paired;
    for (const auto& e : *old_entries) paired[e.name].first = &e;
    for (const auto& e : *new_entries) paired[e.name].second = &e;
    for (const auto& [name, pair] : paired) {
      const auto [o, n] = pair;
      const std::string path = prefix + std::string(name);
      if (o != nullptr && n != nullptr && o->mode == n->mode && o->id == n->id) continue;
      const bool old_dir = o != nullptr && o->mode == git_objects::kTreeMode;
      const bool new_dir = n != nullptr && n->mode == git_objects::kTreeMode;
      if (old_dir && new_dir) {
        out_.new_dirs.insert(path);
        if (!walk(path + "/", o->id, n->id, depth + 1)) return false;
        continue;
      }
      // Gone: what the new commit has not, or has as a directory where a file was or the other way.
      if (o != nullptr && (n == nullptr || old_dir != new_dir) &&
          !(old_dir ? every_file(path, o->id, out_.gone, false, depth + 1) : add(out_.gone, path)))
        return false;
      if (n != nullptr &&
          !(new_dir ? every_file(path, n->id, out_.written, true, depth + 1) : add(out_.written, path)))
        return false;
    }
    return true;
  }

  bool trees_of(std::string_view from, std::string_view to, std::string& from_tree, std::string& to_tree) {
    auto a = store_.read(from);
    auto b = store_.read(to);
    if (!a || !b || a->type != git_objects::Type::commit || b->type != git_objects::Type::commit)
      return unread();
    auto ta = git_objects::commit_tree(a->data, hash_size_);
    auto tb = git_objects::commit_tree(b->data, hash_size_);
    if (!ta || !tb) return unread();
    from_tree = std::move(*ta);
    to_tree = std::move(*tb);
    return true;
  }

  Result result() {
    Result r;
    r.outcome = outcome_;
    if (outcome_ == Outcome::done) r.changes = std::move(out_);
    return r;
  }

 private:
  std::optional<git_objects::Object> tree(std::string_view id) {
    auto o = store_.read(id);
    if (!o || o->type != git_objects::Type::tree) return std::nullopt;
    return o;
  }

  bool unread() {
    outcome_ = Outcome::unread;
    return false;
  }

  bool add(std::vector<std::string>& into, const std::string& path) {
    into.push_back(path);
    if (out_.written.size() + out_.gone.size() > max_changes_) {
      outcome_ = Outcome::too_many;
      return false;
    }
    return true;
  }

  // Every path below the tree `id` at `path`, into `into`.
  bool every_file(const std::string& path, std::string_view id, std::vector<std::string>& into, bool new_side,
                  int depth) {
    auto t = tree(id);
    if (!t || depth > kMaxDepth) return unread();
    auto entries = git_objects::parse_tree(t->data, hash_size_);
    if (!entries) return unread();
    if (new_side) out_.new_dirs.insert(path);
    for (const auto& e : *entries) {
      const std::string below = path + "/" + std::string(e.name);
      if (!(e.mode == git_objects::kTreeMode ? every_file(below, e.id, into, new_side, depth + 1)
                                             : add(into, below)))
        return false;
    }
    return true;
  }

  git_objects::Store& store_;
  std::size_t hash_size_;
  std::size_t max_changes_;
  Outcome outcome_ = Outcome::done;
  Changes out_;
};

}  // namespace

Result between(git_objects::Store& store, std::string_view from, std::string_view to, std::size_t hash_size,
               std::size_t max_changes) {
  Walker w(store, hash_size, max_changes);
  std::string from_tree, to_tree;
  if (w.trees_of(from, to, from_tree, to_tree) && from_tree != to_tree)
    (void)w.walk("", from_tree, to_tree, 0);
  return w.result();
}

bool replaces_objects(const std::string& common_dir) {
  if (DIR* d = ::opendir((common_dir + "/refs/replace").c_str())) {
    bool any = false;
    while (dirent* e = ::readdir(d))
      if (std::string_view(e->d_name) != "." && std::string_view(e->d_name) != "..") any = true;
    ::closedir(d);
    if (any) return true;
  }
  if (fs::exists(common_dir + "/reftable")) return true;  // refs this does not read
  auto packed = fs::read_file_nofollow(common_dir + "/packed-refs", std::size_t{1} << 30);
  if (!packed) return packed.error().code != ENOENT;
  return packed->find(" refs/replace/") != std::string::npos;
}

}  // namespace chock::workspace::tree_diff
