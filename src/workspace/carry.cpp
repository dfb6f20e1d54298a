// Carried directories: ignored directories of a git project (node_modules,
// .venv, vendor/) that its workspace shows copy-on-write. A git workspace is
// a checkout of HEAD, so what git ignores is absent; a carried directory is
// an overlay inside the call whose lower layer is the real directory: the
// call reads it and may change it, and what it changes stays in the
// session's carry/<n>/upper. Only a directory beneath the project, reached
// without a symbolic link, that git ignores and that holds no .git, is carried.
// An overlay session shows every directory already: there .carry only names
// them, so that what a call writes there is not work (overlay_scan).
//
// The rule for both: what a call writes in a carried directory stays for the
// session's calls and is never work (no changed path, no commit, no reason to
// keep a session; adopt and apply never take it).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "sandbox/overlay_holder.hpp"
#include "util/fd.hpp"
#include "util/fs.hpp"
#include "util/passwd.hpp"
#include "workspace/build.hpp"
#include "workspace/git.hpp"

namespace chock::workspace::build {

namespace {

// Why `rel` cannot be carried, or "" when it can. Missing: `missing` is set.
// An overlay session's directory need not be ignored: it has no git.
Expected<std::string> refusal(const Session& s, const std::string& rel, bool& missing) {
  for (const auto& d : s.deny)
    if (d == rel || rel.starts_with(d + "/"))
      return std::string("it is a denied path; a denied path is never carried");
  UniqueFd project(::open(s.project.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!project) return sys_error("open", s.project);
  auto dir = fs::open_dir_beneath(project.get(), rel, false);
  if (!dir) {
    if (dir.error().code == ENOENT) {
      missing = true;
      return std::string();
    }
    return "it is not a directory beneath the project reached without a symbolic link (" +
           std::string(errno_name(dir.error().code)) + ")";
  }
  UniqueFd carried(*dir);
  struct stat st {};
  if (::fstatat(carried.get(), ".git", &st, AT_SYMLINK_NOFOLLOW) == 0)
    return std::string("it holds a .git; a repository is never carried");
  if (s.kind != Kind::git) return std::string();
  // Only what the checkout lacks: a tracked directory comes from the commit.
  auto ignored = git::run({"check-ignore", "-q", "--", rel}, git::repo_env(s.common_dir, s.project));
  if (!ignored) return std::move(ignored).error();
  if (!ignored->ok())
    return std::string(
        "git does not ignore it, so the workspace has it from the commit; carry names ignored "
        "directories (node_modules, .venv)");
  return std::string();
}

}  // namespace

std::string carry_upper(const Session& s, std::size_t index) {
  return s.dir + "/carry/" + std::to_string(index) + "/upper";
}

std::string carry_work(const Session& s, std::size_t index) {
  return s.dir + "/carry/" + std::to_string(index) + "/work";
}

bool is_carried(const Session& s, const std::string& path) {
  return std::any_of(s.carry.begin(), s.carry.end(),
                     [&](const std::string& c) { return path == c || path.starts_with(c + "/"); });
}

std::vector<std::string> uncarried(const Session& s) {
  UniqueFd project(::open(s.project.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!project) return {};
  std::vector<std::string> candidates;
  for (const char* name : kCarriable) {
    const std::string rel = name;
    if (is_carried(s, rel)) continue;
    if (std::find(s.deny.begin(), s.deny.end(), rel) != s.deny.end()) continue;
    struct stat st {};
    // A real directory only (not a link), and not a repository of its own.
    if (::fstatat(project.get(), name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode)) continue;
    if (::fstatat(project.get(), (rel + "/.git").c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) continue;
    candidates.push_back(rel);
  }
  if (candidates.empty()) return {};
  // One git for all: it prints the ones it ignores (exit 1 when none is).
  std::vector<std::string> args{"check-ignore", "--"};
  args.insert(args.end(), candidates.begin(), candidates.end());
  auto ignored = git::run(args, git::repo_env(s.common_dir, s.project));
  if (!ignored || (ignored->status != 0 && ignored->status != 1)) return {};
  std::vector<std::string> out;
  for (const auto& line : git::split(ignored->out, '\n'))
    if (std::find(candidates.begin(), candidates.end(), line) != candidates.end()) out.push_back(line);
  return out;
}

Expected<void> add_carried(Session& s, const std::vector<std::string>& paths, Notes& notes) {
  if (paths.empty()) return {};
  std::vector<std::string> added;
  for (const auto& rel : paths) {
    if (std::find(s.carry.begin(), s.carry.end(), rel) != s.carry.end()) continue;
    if (auto v = validate_carry_path(rel); !v) return v;
    bool missing = false;
    auto why = refusal(s, rel, missing);
    if (!why) return std::move(why).error();
    if (!why->empty()) return Error{"carry " + rel + ": " + *why, "", 0, Errc::bad_config};
    if (missing) {
      notes.push_back("carry " + rel + ": no such directory in the project; nothing carried");
      continue;
    }
    if (s.kind != Kind::git) {
      s.carry.push_back(rel);
      added.push_back(rel);
      continue;
    }
    // Its mount point is made in the session's layer: not beneath a mounted overlay.
    sandbox::release_held_overlay(s.dir);
    const std::size_t index = s.carry.size();
    for (const std::string& d : {s.dir + "/carry", s.dir + "/carry/" + std::to_string(index),
                                 carry_upper(s, index), carry_work(s, index)}) {
      if (auto r = fs::make_dirs(d, 0755); !r) return r;
      if (auto r = give_to_owner(s, d); !r) return r;
    }
    // The mount point inside: a directory of the tree, made beneath it without following a link.
    // Over a shared base, in the session's upper layer: the overlay shows it in the tree.
    const std::string root = writable_tree(s);
    UniqueFd tree(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!tree) return sys_error("open", root);
    fs::Owner owner{s.owner, group_of(s.owner)};
    auto point = fs::open_dir_beneath(tree.get(), rel, true, ::geteuid() == 0 ? &owner : nullptr);
    if (!point) return Error{"carry " + rel + ": make its place in the workspace", root, point.error().code};
    ::close(*point);
    // A root caller's carried directory, idmapped like a non-git project
    // (overlay.cpp): the call may then change root's files there too.
    std::optional<OwnerShift> shift;
    if (::geteuid() == 0 && s.owner != 0) {
      auto tried = lower_shift_for(s, s.project + "/" + rel, carry_upper(s, index), carry_work(s, index));
      if (tried) {
        shift = *tried;
      } else {
        notes.push_back("carry " + rel + ": the call runs as uid " + std::to_string(s.owner) +
                        " and reads these files, writing only where that uid may: an idmapped mount of them "
                        "does not work here (" +
                        tried.error().message() + ")");
      }
    }
    s.carry_shift.resize(index);
    s.carry_shift.push_back(shift);
    s.carry.push_back(rel);
    added.push_back(rel);
  }
  if (added.empty()) return {};
  std::string names;
  for (const auto& a : added) names += (names.empty() ? "" : ", ") + a;
  if (s.kind != Kind::git) {
    notes.push_back("carried: " + names +
                    " (an overlay workspace shows every file already; what a call writes there stays in the "
                    "session and is never work)");
    return {};
  }
  notes.push_back("carried copy-on-write from the project: " + names +
                  " (what the call changes there stays in the session and is never work)");
  std::vector<std::string> inside;
  for (const auto& d : s.deny)
    for (const auto& a : added)
      if (d.starts_with(a + "/")) inside.push_back(d);
  return cover_denied(s, inside, notes);
}

}  // namespace chock::workspace::build
